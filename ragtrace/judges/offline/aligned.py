"""The offline judge's aligned support: the support model's logit combined with alignment evidence.

The support model reads a claim beside a window of the passage; a claim that swaps two of the
passage's dates, or gives another of its names as the answer, reads much like the passage to it.
``alignment`` says whether the passage states the claim's words together and in its order. This
module combines the two in a small logistic model (weights in ``aligned_weights``, fitted by
``training/fit_alignment.py`` on the train files only) and returns its logit, which the grounding
model reads in place of the support model's own (``grounding.features``, calibrated on the dev
files' calibration split by ``bench/calibrate_offline.py``).

Contract: pure; ``aligned_logit`` is NaN where the support model's logit is NaN (a claim it does not
read: no evidence either way) and finite otherwise.
"""

from __future__ import annotations

import math

from ragtrace.judges.offline import aligned_weights
from ragtrace.judges.offline.alignment import Alignment

INPUTS = (
    "answer_proximity",
    "answer_margin",
    "answer",
    "sentence_proximity",
    "sentence_margin",
    "sentence_order",
)
"""The inputs of the alignment's shift, in the order of ``aligned_weights.WEIGHTS``: one set for a bare
answer joined to its question (``answer``: 1), one for any other claim. A bare answer has no order to
keep: one or a few words. The shift is added to the support model's logit (its weight held at 1), only for
a claim the alignment reads (``reads``); any other claim keeps the model's logit.

Why the gate (``reads``): alignment says something only about words the chunk states, and only where the
claim copies the chunk. A claim that lacks a word is judged by the model and the word evidence. A sentence
that states every word of the chunk but in another arrangement (order below ``NEAR_COPY``) is a paraphrase
as often as a swap: on the train files' summaries, order ranks right claims *below* hallucinated ones
(AUROC 0.43 among covered claims), and "The capital of Brazil is Brasilia." against "Brazil ... Its capital
is Brasilia" has order 0. Only a near copy (order from ``NEAR_COPY``) whose words are out of place is a
swap: on the train rows of hn_swapped 334 of 335 right sentences have order 1, and 275 of 306 swapped ones
0.6 to 0.99. Fitted ungated over every claim with a ``covered`` input and a free weight on the logit, the
combiner moved the uncovered claims' logits down by about 2 against the covered ones' and rejected right
paraphrases and restatements (bench/results/judge_sets_after_alignment.txt: hn_neighbour 0.996 -> 0.944,
summarization's least-supported AUROC 0.861 -> 0.819; six tests of test_offline_judge.py failed)."""
NEAR_COPY = 0.7
"""Order (``Alignment.order``) from which a covered sentence is read as a copy of the chunk, and its
alignment as evidence: chosen on the train files (``training/fit_alignment.py --near-copy``; 0.5 and 0.6
kept more of the summaries' paraphrases in the fit, and fitted a weaker swap shift)."""
MAX_LOGIT = 8.0
"""The support model's logit is clipped to +-8 (p = 0.9997): beyond that it says nothing more, and an
empty chunk (-inf) must not dominate the sum."""


def reads(found: Alignment, coverage: float, answer: bool) -> bool:
    """Whether the alignment shifts the claim's logit: the chunk states every content word of what the claim
    asserts (``coverage``: the share of them it states, ``text.claim_focus``) and the claim is a bare answer
    or a near copy of the chunk (order at least ``NEAR_COPY``)."""
    return coverage >= 1.0 and (answer or found.order >= NEAR_COPY)


def inputs(found: Alignment, answer: bool) -> tuple[float, ...]:
    """The shift's inputs (order of ``INPUTS``); ``answer``: the claim is a bare answer joined to its
    question."""
    if answer:
        return (found.proximity, found.margin, 1.0, 0.0, 0.0, 0.0)
    return (0.0, 0.0, 0.0, found.proximity, found.margin, found.order)


def clip(model_logit: float) -> float:
    """The support model's logit clipped to +-``MAX_LOGIT`` (NaN stays NaN)."""
    return model_logit if math.isnan(model_logit) else min(max(model_logit, -MAX_LOGIT), MAX_LOGIT)


def shift(found: Alignment, answer: bool) -> float:
    """The alignment's shift of a claim it reads (``reads``)."""
    values = inputs(found, answer)
    return aligned_weights.BIAS + sum(w * v for w, v in zip(aligned_weights.WEIGHTS, values, strict=True))


def aligned_logit(model_logit: float, found: Alignment, coverage: float, answer: bool) -> float:
    """The logit that the chunk supports the claim: the model's (clipped), shifted by the alignment where
    it reads the claim (``reads``); NaN where the model's logit is NaN."""
    if math.isnan(model_logit):
        return math.nan
    clipped = clip(model_logit)
    return clipped + shift(found, answer) if reads(found, coverage, answer) else clipped
