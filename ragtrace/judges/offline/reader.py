"""The offline answer reader: an extractive reader that says how strongly a passage names a given span as
the answer to a question.

The support model reads a claim beside a passage and asks "does the passage support this?"; given a year
of the passage for a question about another of its years, it reads much like the right one (both are
stated). The reader is trained the other way round: from the question and the passage it scores every
span of the passage as the answer (a start and an end logit per word piece, the usual extractive head),
so the spans of one passage compete for the question. Its evidence for a bare answer is the ``margin``:
the answer's best span score less the best score of any span, 0 when the answer is the reader's own
choice and below 0 by how much it prefers another span.

It is all-MiniLM-L6-v2 (Apache-2.0) fine-tuned on the QA train rows of ../shared/data
(``training/reader``, ``make reader-model``), exported to int8 ONNX and shipped as package data
(``_assets/``, with its model card). It reads at most ``support.MAX_TOKENS`` word pieces of question and
passage; a longer passage is read in ``support.chunk_windows`` and the answer's best margin over the
windows that name it is kept.

Contract: ``margins`` returns, for each (question, answer, passage), a finite margin <= 0 when some window
of the passage, as the pair is read (question and window cut to ``support.MAX_TOKENS`` word pieces), contains
the answer's word pieces in order and ending on a word's end (or the answer's without a leading article,
``answer_forms``); NaN when none does, and for an answer of more than ``MAX_ANSWER_PIECES`` word pieces (the
reader has nothing to say of an answer the passage does not state, nor of one longer than any span it
marks: the support model and the word evidence read them).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ragtrace.judges.offline.embedder import check_stop
from ragtrace.judges.offline.onnx import LazyModel, LoadsLazily, ProcessWide, shipped_path
from ragtrace.judges.offline.support import chunk_windows, encode_pairs, load_tokenizer

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_ASSET = "reader-minilm-l6-int8.onnx"
MAX_ANSWER_PIECES = 30
"""Word pieces in a span the reader may choose at most (the usual extractive cap; HaluEval's right
answers have at most 20)."""
Float = npt.NDArray[np.float64]


_ARTICLES = ("the ", "a ", "an ")


def answer_pieces(tokenizer: Tokenizer, answer: str) -> list[int]:
    """The word-piece ids of ``answer`` without special tokens, a closing full stop dropped."""
    ids: list[int] = tokenizer.encode(answer.strip().rstrip("."), add_special_tokens=False).ids
    return ids


def answer_forms(answer: str) -> tuple[str, ...]:
    """``answer`` and, when it opens with an article, the answer without it: "the Hall of Mirrors" is read
    as "Hall of Mirrors" too, the span a reader marks (extractive readers are scored with articles
    dropped for the same reason)."""
    stripped = answer.strip()
    lowered = stripped.lower()
    for article in _ARTICLES:
        if lowered.startswith(article) and len(stripped) > len(article):
            return (stripped, stripped[len(article) :].lstrip())
    return (stripped,)


def occurrences(
    ids: Sequence[int], types: Sequence[int], pieces: Sequence[int], continuations: Container[int] = frozenset()
) -> list[tuple[int, int]]:
    """``(start, end)`` token positions (end inclusive) where ``pieces`` occur in the second segment, not
    followed by one of ``continuations`` (the ids of word pieces that go on a word, "##ian": "Washington"
    is not in "Washingtonian"). The answer's own first piece starts a word, so no match starts inside one."""
    n = len(pieces)
    if n == 0:
        return []
    first = next((i for i, t in enumerate(types) if t == 1), len(ids))
    # The final [SEP] is in the second segment too; no answer ends on it.
    last = len(ids) - 1
    wanted = list(pieces)
    return [
        (i, i + n - 1)
        for i in range(first, last - n + 1)
        if list(ids[i : i + n]) == wanted and ids[i + n] not in continuations
    ]


def continuation_ids(tokenizer: Tokenizer) -> frozenset[int]:
    """The ids of the tokenizer's word pieces that continue a word (``##``-prefixed)."""
    return frozenset(i for piece, i in tokenizer.get_vocab().items() if piece.startswith("##"))


def best_span(start: Float, end: Float, passage: npt.NDArray[np.bool_]) -> float:
    """The highest ``start[i] + end[j]`` over spans ``i <= j < i + MAX_ANSWER_PIECES`` of passage tokens."""
    s = np.where(passage, start, -np.inf)
    e = np.where(passage, end, -np.inf)
    best = -np.inf
    # For each length the best start is paired with the end that many pieces on: O(n * 30), vectorised.
    for length in range(min(MAX_ANSWER_PIECES, len(s))):
        pair = s[: len(s) - length] + e[length:]
        best = max(best, float(pair.max()))
    return best


def span_margin(start: Float, end: Float, passage: npt.NDArray[np.bool_], spans: Sequence[tuple[int, int]]) -> float:
    """The best of ``spans``' scores less the best score of any passage span (<= 0); NaN without spans."""
    if not spans:
        return float("nan")
    given = max(float(start[i] + end[j]) for i, j in spans)
    return min(0.0, given - best_span(start, end, passage))


class AnswerReader(LoadsLazily):
    """The reader run by onnxruntime; thread-safe; loads on first use, once.

    ``path``: an ONNX file with the inputs of ``support.INPUTS`` and two outputs, the start and the end
    logit of every token (default: the model ragtrace ships)."""

    def __init__(self, path: str | None = None) -> None:
        self._model = LazyModel(lambda: path or shipped_path(MODEL_ASSET), load_tokenizer)
        self._continuations: frozenset[int] | None = None

    def logits(self, question: str, passage: str) -> tuple[Float, Float, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Start and end logits of every token of (question, passage) read as one pair, with the pair's
        ids and token types (one model run)."""
        session, tokenizer = self._load()
        ids, mask, types = encode_pairs(tokenizer, [(question, passage)])
        start, end = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return (
            np.asarray(start, dtype=np.float64).reshape(-1),
            np.asarray(end, dtype=np.float64).reshape(-1),
            ids[0],
            types[0],
        )

    def margins(self, items: Sequence[tuple[str, str, str]]) -> Float:
        """The margin of each ``(question, answer, passage)`` (see the module's contract): one model run per
        window of the passage that states the answer's word pieces."""
        _, tokenizer = self._load()
        if self._continuations is None:
            self._continuations = continuation_ids(tokenizer)
        continuations = self._continuations
        out = np.full(len(items), np.nan)
        for k, (question, answer, passage) in enumerate(items):
            forms = [answer_pieces(tokenizer, form) for form in answer_forms(answer)]
            forms = [pieces for pieces in forms if len(pieces) <= MAX_ANSWER_PIECES]
            for window in chunk_windows(passage):
                window_ids = tokenizer.encode(window, add_special_tokens=False).ids
                if not any(_contains(window_ids, np.asarray(pieces, dtype=np.int64)) for pieces in forms):
                    continue
                check_stop()
                start, end, ids, types = self.logits(question, window)
                spans = [
                    span
                    for pieces in forms
                    for span in occurrences(ids.tolist(), types.tolist(), pieces, continuations)
                ]
                passage_tokens = (types == 1) & (np.arange(len(ids)) < len(ids) - 1)
                margin = span_margin(start, end, passage_tokens, spans)
                if not np.isnan(margin):
                    out[k] = margin if np.isnan(out[k]) else max(out[k], margin)
        return out


def _contains(ids: Sequence[int], pieces: npt.NDArray[np.int64]) -> bool:
    n = len(pieces)
    if n == 0 or n > len(ids):
        return False
    row = np.asarray(ids, dtype=np.int64)
    windows = np.lib.stride_tricks.sliding_window_view(row, n)
    return bool((windows == pieces).all(axis=1).any())


_default = ProcessWide(AnswerReader)


def default_answer_reader() -> AnswerReader:
    """The process-wide answer reader the offline judge shares (created once)."""
    return _default.get()
