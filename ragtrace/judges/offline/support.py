"""The offline support model: a cross-encoder that reads a claim beside a passage and returns the
logit that the passage supports it.

It is all-MiniLM-L6-v2 (Apache-2.0) fine-tuned on pairs built from the training files of
../shared/data (``training/judge``, ``make judge-model``), exported to int8 ONNX and shipped as
package data (``_assets/``, with its model card). It reads relations the word-level evidence of
``grounding`` cannot: which span of a passage answers the question, who did what to whom.

What it reads: at most ``MAX_TOKENS`` word pieces of claim and context together. A chunk longer
than that is cut into windows of whole sentences (about ``WINDOW_WORDS`` words, each overlapping the
previous one by half, so a fact stated across a sentence boundary is whole in at least one window).
A claim is read against the ``TOP_WINDOWS`` windows of each chunk that share the most content words
with it; its support by the chunk is the best logit over them. Training, export and evaluation use
these same functions, so the model is measured on the pairs it is run on.

The model was trained on English pairs only: a claim whose letters are mostly of another script is
not read (``reads``; its logit is NaN, and the judge falls back to word evidence for it).

The ONNX session is loaded on first use, once per process (``_onnx.LazyModel``: one thread).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ragtrace.judges.offline import text
from ragtrace.judges.offline.embedder import check_stop
from ragtrace.judges.offline.onnx import LazyModel, LoadsLazily, ProcessWide, read_tokenizer, shipped_path
from ragtrace.judges.offline.short_cache import short_text_cache

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_ASSET = "support-minilm-l6-int8.onnx"
MAX_TOKENS = 256
WINDOW_WORDS = 150
"""Words in a window at most (about 200 word pieces, leaving room for the claim in 256)."""
TOP_WINDOWS = 3
"""Windows of one chunk a claim is read against at most."""
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The model's input names, in the order ``encode_pairs`` returns them."""
Logits = npt.NDArray[np.float64]
Encoded = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]


def load_tokenizer() -> Tokenizer:
    """MiniLM's tokenizer (the file ragtrace ships) set up for pairs: cut to ``MAX_TOKENS``, longest
    text first."""
    tokenizer = read_tokenizer()
    tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    tokenizer.no_padding()
    return tokenizer


def encode_pairs(tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> Encoded:
    """Input ids, attention mask and token types of ``(claim, context)`` pairs, padded to the longest."""
    # One pair at a time: encode_batch runs a Rust thread pool, which would take the app's other
    # cores and warns when the process forks.
    encodings = [tokenizer.encode(claim, context) for claim, context in pairs]
    width = max((len(e.ids) for e in encodings), default=0)
    ids = np.zeros((len(pairs), width), dtype=np.int64)
    mask = np.zeros((len(pairs), width), dtype=np.int64)
    types = np.zeros((len(pairs), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n] = encoding.ids
        mask[row, :n] = 1
        types[row, :n] = encoding.type_ids
    return ids, mask, types


def chunk_windows(chunk: str) -> tuple[str, ...]:
    """The windows of ``chunk``: itself when short, else overlapping runs of whole sentences.

    Cached for chunks up to ``CACHED_TEXT_CHARS`` (the usual chunks a RAG app retrieves again and
    again); a longer one is cut anew each time, so many distinct long chunks (their windows are twice
    their size) never stay in memory."""
    return _cached_windows(chunk)


@short_text_cache(maxsize=4096)
def _cached_windows(chunk: str) -> tuple[str, ...]:
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


def reads(claim: str) -> bool:
    """Whether the model can read ``claim``: ``mostly_latin`` in the answer for a bare answer joined to its
    question, else in the whole claim (it was trained on English; on "莫斯科" or "Москва" its logit is
    noise, not evidence)."""
    return mostly_latin(text.claim_focus(claim))


def mostly_latin(words: str) -> bool:
    """Whether at least half of the letters of ``words`` are Latin (true of a text with no letter)."""
    letters = [c for c in words if c.isalpha()]
    latin = sum(1 for c in letters if unicodedata.name(c, "").startswith("LATIN"))
    return 2 * latin >= len(letters)


class SupportModel(LoadsLazily):
    """The support model run by onnxruntime; thread-safe; loads on first use, once.

    ``path``: an ONNX file with the inputs ``INPUTS`` and one logit per pair (default: the model
    ragtrace ships)."""

    def __init__(self, path: str | None = None) -> None:
        self._model = LazyModel(lambda: path or shipped_path(MODEL_ASSET), load_tokenizer)

    def run(self, encoded: Encoded) -> Logits:
        """The support logit of each encoded pair (``encode_pairs``)."""
        session, _ = self._load()
        (logits,) = session.run(None, dict(zip(INPUTS, encoded, strict=True)))
        return np.asarray(logits, dtype=np.float64).reshape(-1)

    def pair_logits(self, pairs: Sequence[tuple[str, str]]) -> Logits:
        """The support logit of each ``(claim, context)`` pair, one pair per model run.

        One at a time on purpose: the int8 model quantizes its activations with one scale per run,
        so in a batch a pair's logit would move (by up to 1.3 measured) with the other pairs and
        their padding, and one record's score with the records beside it. On one core a batch saves
        nothing anyway (8.2 ms per pair alone, 9.8 ms in batches of 16, measured)."""
        _, tokenizer = self._load()
        out = np.empty(len(pairs), dtype=np.float64)
        for i, pair in enumerate(pairs):
            check_stop()
            out[i] = self.run(encode_pairs(tokenizer, [pair]))[0]
        return out

    def support(
        self, claims: Sequence[str], chunks: Sequence[str], *, readable: Callable[[str], bool] = reads
    ) -> Logits:
        """Each claim's best logit over its windows of each chunk, ``[claim, chunk]`` (one model run
        per pair, ``pair_logits``). An empty chunk supports nothing (``-inf``); a claim the model does not
        read (``readable``, default ``reads``) is NaN."""
        out = np.full((len(claims), len(chunks)), -np.inf)
        pairs: list[tuple[str, str]] = []
        owners: list[tuple[int, int]] = []
        read = [readable(claim) for claim in claims]
        out[[i for i, ok in enumerate(read) if not ok]] = np.nan
        for j, chunk in enumerate(chunks):
            windows = chunk_windows(chunk)
            for i, claim in enumerate(claims):
                if not read[i]:
                    continue
                for k in best_windows(claim, windows):
                    pairs.append((claim, windows[k]))
                    owners.append((i, j))
        for (i, j), logit in zip(owners, self.pair_logits(pairs), strict=True):
            out[i, j] = max(out[i, j], logit)
        return out


_default = ProcessWide(SupportModel)


def default_support_model() -> SupportModel:
    """The process-wide support model the offline judge shares (created once)."""
    return _default.get()
