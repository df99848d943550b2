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
    "answer_logit",
    "answer_proximity",
    "answer_margin",
    "answer_covered",
    "answer",
    "sentence_logit",
    "sentence_proximity",
    "sentence_margin",
    "sentence_order",
    "sentence_covered",
)
"""The combiner's inputs, in the order of ``aligned_weights.WEIGHTS``: one set for a bare answer joined to
its question (``answer``: 1), one for any other claim, each the support model's logit (clipped), the
alignment readings where the chunk states every content word of what the claim asserts (0 otherwise), and
whether it does (``covered``). A bare answer has no order to keep: one or a few words.

Why the gate: alignment says something only about words the chunk states. A claim that lacks a word is
already judged by the model and the word evidence; a claim whose every word the chunk states is either a
restatement or a rearrangement of the chunk (a swap, another span of the same kind), and only where those
words stand tells the two apart. Fitted ungated, the alignment also pushed down right summaries that
reword their document. Why two sets: for a sentence the order is the strongest reading, for a bare answer
the margin over the passage's other names or numbers; fitted as one, the length-controlled answers lost
0.03 AUROC (train claims) to the sentences' weights."""
MAX_LOGIT = 8.0
"""The support model's logit is clipped to +-8 (p = 0.9997): beyond that it says nothing more, and an
empty chunk (-inf) must not dominate the sum."""


def inputs(model_logit: float, found: Alignment, coverage: float, answer: bool) -> tuple[float, ...]:
    """The combiner's inputs (order of ``INPUTS``); ``coverage``: the share of the content words of what the
    claim asserts (``text.claim_focus``) that the chunk states; ``answer``: the claim is a bare answer
    joined to its question. NaN logits where the model does not read the claim."""
    clipped = model_logit if math.isnan(model_logit) else min(max(model_logit, -MAX_LOGIT), MAX_LOGIT)
    covered = 1.0 if coverage >= 1.0 else 0.0
    if answer:
        return (clipped, covered * found.proximity, covered * found.margin, covered, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return (
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        clipped,
        covered * found.proximity,
        covered * found.margin,
        covered * found.order,
        covered,
    )


def aligned_logit(model_logit: float, found: Alignment, coverage: float, answer: bool) -> float:
    """The logit that the chunk supports the claim, from the model's reading, the alignment and the
    claim's word coverage (see ``inputs``); NaN where the model's logit is NaN."""
    if math.isnan(model_logit):
        return math.nan
    values = inputs(model_logit, found, coverage, answer)
    return aligned_weights.BIAS + sum(w * v for w, v in zip(aligned_weights.WEIGHTS, values, strict=True))
