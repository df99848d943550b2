"""What the support model reads, and how: pairs of (claim, window of a chunk), tokenized for MiniLM.

Training (``build_data.py``, ``train.py``), export (``export.py``) and evaluation (``evaluate.py``) use
these same functions, so a model is measured on the pairs it was trained on. They are the part of the
offline judge a support model would run with; they move into ``ragtrace/judges`` with the first model
good enough to ship (see the model notes in docs/offline-judge.md).

Windows: the model reads at most ``MAX_TOKENS`` word pieces of claim and context together. A chunk
longer than that is cut into windows of whole sentences (about ``WINDOW_WORDS`` words, each
overlapping the previous one by half, so a fact stated across a sentence boundary is whole in at
least one window). A claim is read against the ``TOP_WINDOWS`` windows that share the most content
words with it; its support by the chunk is the best probability over them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ragtrace.judges import _offline_text as text  # noqa: E402
from ragtrace.judges._offline_embedder import TOKENIZER_ASSET  # noqa: E402

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MAX_TOKENS = 256
WINDOW_WORDS = 150
"""Words in a window at most (about 200 word pieces, leaving room for the claim in 256)."""
TOP_WINDOWS = 3
"""Windows of one chunk a claim is read against at most."""
MODEL_FILE = ROOT / "training" / ".work" / "support-minilm-l6-int8.onnx"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The model's input names, in the order ``encode_pairs`` returns them."""
_BATCH = 16

Encoded = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def load_tokenizer() -> Tokenizer:
    """MiniLM's tokenizer (the file ragtrace ships) set up for pairs: cut to ``MAX_TOKENS``, longest
    text first, padded per batch."""
    from tokenizers import Tokenizer

    path = resources.files("ragtrace.judges").joinpath("_assets", TOKENIZER_ASSET)
    tokenizer = Tokenizer.from_str(path.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def encode_pairs(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> Encoded:
    """Input ids, attention mask and token types of ``(claim, context)`` pairs, padded to the longest."""
    encodings = tokenizer.encode_batch(list(pairs))
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    types = np.array([e.type_ids for e in encodings], dtype=np.int64)
    return ids, mask, types


@lru_cache(maxsize=4096)
def chunk_windows(chunk: str) -> tuple[str, ...]:
    """The windows of ``chunk``: itself when short, else overlapping runs of whole sentences."""
    stripped = chunk.strip()
    if len(stripped.split()) <= WINDOW_WORDS:
        return (stripped,) if stripped else ()
    pieces = [p for s in text.split_sentences(stripped) for p in _cut(s)]
    lengths = [len(p.split()) for p in pieces]
    out: list[str] = []
    start = 0
    while start < len(pieces):
        end, words = start, 0
        while end < len(pieces) and (end == start or words + lengths[end] <= WINDOW_WORDS):
            words += lengths[end]
            end += 1
        out.append(" ".join(pieces[start:end]))
        if end >= len(pieces):
            break
        # The next window starts halfway through this one (at least one sentence on).
        half, seen, step = words / 2, 0, start
        while step < end - 1 and seen + lengths[step] <= half:
            seen += lengths[step]
            step += 1
        start = max(step, start + 1)
    return tuple(out)


def _cut(sentence: str) -> list[str]:
    """A sentence longer than a window, cut into window-sized runs of words (rare: lists, tables)."""
    words = sentence.split()
    if len(words) <= WINDOW_WORDS:
        return [sentence]
    return [" ".join(words[i : i + WINDOW_WORDS]) for i in range(0, len(words), WINDOW_WORDS)]


def best_windows(claim: str, windows: Sequence[str], top: int = TOP_WINDOWS) -> list[int]:
    """Indices of the ``top`` windows sharing the most content words with ``claim`` (the earlier on
    ties), in window order."""
    if len(windows) <= top:
        return list(range(len(windows)))
    wanted = text.content_words(text.claim_focus(claim)) | text.content_words(claim)
    overlap = [len(text.content_words(w) & wanted) for w in windows]
    ranked = sorted(range(len(windows)), key=lambda i: (-overlap[i], i))[:top]
    return sorted(ranked)


class OnnxSupport:
    """The exported model run by onnxruntime (one thread): P(context supports claim) per pair."""

    def __init__(self, path: Path = MODEL_FILE) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        self._session: Any = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._tokenizer = load_tokenizer()

    def logits(self, encoded: Encoded) -> npt.NDArray[np.float64]:
        """The support logit of each encoded pair (``encode_pairs``)."""
        (logits,) = self._session.run(None, dict(zip(INPUTS, encoded, strict=True)))
        return np.asarray(logits).reshape(-1).astype(np.float64)

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float64]:
        """P(context supports claim) for each pair, run in batches of similar length."""
        out = np.empty(len(pairs), dtype=np.float64)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for start in range(0, len(order), _BATCH):
            batch = order[start : start + _BATCH]
            logits = self.logits(encode_pairs(self._tokenizer, [pairs[i] for i in batch]))
            out[batch] = 1.0 / (1.0 + np.exp(-logits))
        return out

    def support(self, claims: Sequence[str], chunk: str) -> npt.NDArray[np.float64]:
        """Each claim's best support over its windows of ``chunk``."""
        windows = chunk_windows(chunk)
        pairs = [(c, windows[k]) for c in claims for k in best_windows(c, windows)]
        owners = [i for i, c in enumerate(claims) for _ in best_windows(c, windows)]
        best = np.zeros(len(claims))
        for i, p in zip(owners, self.probabilities(pairs), strict=True):
            best[i] = max(best[i], p)
        return best
