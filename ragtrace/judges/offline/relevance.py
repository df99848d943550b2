"""The offline relevance model: a cross-encoder that reads a question beside a passage and returns the
logit that the passage answers it.

Embedding cosine says a chunk is on the question's topic; it rates "Our store windows are cleaned
every week" above "Items can be returned within 30 days." for "What is the return window?", because the
first repeats the question's words. The relevance model reads the two texts together, as the support
model reads a claim beside a passage: it is the same architecture (all-MiniLM-L6-v2, Apache-2.0, with a
one-logit head over the mean of the question's tokens), fine-tuned on other pairs: each QA train question
of ../shared/data against its own passage and the sentence of it that names the answer (relevant), and
against its own passage without the sentences that name the answer (its topic and words, no answer: what
taught it more than word sharing), the passage of the train question sharing the most words with it, that
passage's sentence sharing the most words with it, and a random passage (not relevant) (``training/relevance``,
``make relevance-model``). It is exported to int8 ONNX and shipped as package data (``_assets/``, with its
model card), and run by the support model's runner (``support.SupportModel``: one pair a run).

Contract: ``relevance`` returns one logit per chunk, the best over the windows of the chunk that share
the most content words with the question (``support.chunk_windows`` / ``best_windows``, as for claims);
``-inf`` for an empty chunk; NaN for every chunk when the question's letters are mostly of a script other
than the Latin one (``support.mostly_latin``, the whole question: the model was trained on English), where
the judge rates by embedding alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragtrace.judges.offline import calibration as cal
from ragtrace.judges.offline.embedder import Vectors
from ragtrace.judges.offline.onnx import ProcessWide, shipped_path
from ragtrace.judges.offline.support import Logits, SupportModel, mostly_latin

MODEL_ASSET = "relevance-minilm-l6-int8.onnx"
MAX_LOGIT = 8.0
"""The logit is read clipped to +-8 (``feature``): beyond, the model is sure, and one unusual pair must not
outweigh the cosines."""


def feature(logit: float) -> float:
    """The logit as the judge's rating reads it: clipped to +-``MAX_LOGIT`` (an empty chunk's ``-inf`` to
    ``-MAX_LOGIT``; NaN stays NaN)."""
    return logit if math.isnan(logit) else min(max(logit, -MAX_LOGIT), MAX_LOGIT)


def rating_inputs(query: Vectors, chunk: Vectors, units: Vectors, logit: float) -> tuple[float, float, float]:
    """What a chunk's rating reads, the same for the judge at run time and for ``bench/calibrate_offline.py``'s
    fit: the query's cosine with the whole chunk, its best cosine with one of the chunk's units (sentences;
    the whole chunk's when it has none), and the relevance model's ``logit`` as ``feature`` reads it. The
    vectors are the embedder's unit vectors (``query`` and ``chunk`` one each, ``units`` one a row)."""
    whole = float(chunk @ query)
    best = float(np.max(units @ query)) if len(units) else whole
    return whole, best, feature(logit)


def rating(inputs: tuple[float, float, float]) -> float:
    """A chunk's relevance in (0, 1) from its ``rating_inputs``: the fitted logistic map of all three, or of
    the two cosines alone, fitted apart, when the logit is NaN (the model did not read the query)."""
    whole, best, logit = inputs
    if math.isnan(logit):
        a, b = cal.RELEVANCE_EMBEDDING_WEIGHTS
        z = cal.RELEVANCE_EMBEDDING_BIAS + a * whole + b * best
    else:
        a, b, c = cal.RELEVANCE_WEIGHTS
        z = cal.RELEVANCE_BIAS + a * whole + b * best + c * logit
    return 1.0 / (1.0 + math.exp(-z))


class RelevanceModel:
    """The relevance model run by onnxruntime; thread-safe; loads on first use, once.

    ``path``: an ONNX file with the inputs of ``support.INPUTS`` and one logit per pair (default: the
    model ragtrace ships)."""

    def __init__(self, path: str | None = None) -> None:
        # The runner is the support model's: same inputs, same one logit, another file.
        self._pairs = SupportModel(path or shipped_path(MODEL_ASSET))

    @property
    def loads(self) -> int:
        """How many times the model was loaded (1 after first use)."""
        return self._pairs.loads

    def load(self) -> None:
        """Load the model now (otherwise its first use does)."""
        self._pairs.load()

    def relevance(self, question: str, chunks: Sequence[str]) -> Logits:
        """Each chunk's relevance logit to ``question`` (see the module's contract)."""
        if not chunks:
            return np.empty(0)
        # The whole question is checked: support.reads would look past a "?" as if an answer followed it.
        logits: Logits = self._pairs.support([question], chunks, readable=mostly_latin)[0]
        return logits


_default = ProcessWide(RelevanceModel)


def default_relevance_model() -> RelevanceModel:
    """The process-wide relevance model the offline judge shares (created once)."""
    return _default.get()
