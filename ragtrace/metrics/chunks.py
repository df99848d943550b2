"""The chunk-level family: how good the retrieved chunks are, in rank order.

- context_relevance: mean of the per-chunk ratings in [0, 1] (all chunks rated in one ``rate_chunks``
  call, or, in a suite that verifies claims on a judge that rates the chunks in that call, read from it:
  no call of its own); details carry the ratings and the count of chunks rated >= 0.5.
- context_relevance_weighted: the same ratings with rank decay, sum(r_i * d^i) / sum(d^i), d = 0.9.
- context_precision: average precision of the ranking, sum over k of precision@k * v_k / (relevant
  chunks); v_k = 1 when chunk k supports at least one reference claim (or, without a reference, at
  least one answer claim). 0.0 when no chunk is relevant. It reuses the ``verify`` matrix that
  context_recall (with a reference) or faithfulness (without) needs, so in a suite it costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import EXTRACT_CLAIMS, RATE_CHUNKS, VERIFY
from ragtrace.metrics._base import DETAIL_METHOD, REASON_NO_ANSWER, REASON_NO_CLAIMS, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS, JudgeMetric
from ragtrace.metrics._steps import Steps, answer_claims, record_chunk_ratings, reference_claims, verdicts
from ragtrace.metrics.claims import supporting_chunks

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = [
    "RELEVANT_RATING",
    "ContextPrecision",
    "ContextRelevance",
    "ContextRelevanceWeighted",
    "average_precision",
    "decayed_mean",
]

RELEVANT_RATING = 0.5
"""A chunk rated at least this is counted as relevant in context_relevance's details."""


def decayed_mean(ratings: Sequence[float], decay: float) -> float:
    """sum(r_i * decay^i) / sum(decay^i), i from 0: earlier ranks weigh more."""
    weights = [decay**i for i in range(len(ratings))]
    return math.fsum(r * w for r, w in zip(ratings, weights, strict=True)) / math.fsum(weights)


def average_precision(relevant: Sequence[bool]) -> float:
    """sum over k of precision@k * v_k / (number of relevant chunks); 0.0 when none is relevant."""
    hits = 0
    total = 0.0
    for k, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


class ContextRelevance(JudgeMetric):
    """Mean relevance of the chunks to the query, each rated in [0, 1] by the judge in one call."""

    name = "context_relevance"
    needs = frozenset({NEEDS_CHUNKS})
    capabilities = frozenset({RATE_CHUNKS})
    uses_query = True
    uses_answer = False

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        ratings = await record_chunk_ratings(steps, record)
        relevant = sum(r >= RELEVANT_RATING for r in ratings)
        return self.measured(
            math.fsum(ratings) / len(ratings),
            steps,
            explanation=f"{relevant} of {len(ratings)} chunks relevant to the query",
            details={"ratings": ratings, "relevant_chunks": relevant},
        )


class ContextRelevanceWeighted(JudgeMetric):
    """Chunk relevance ratings averaged with rank decay ``decay`` (default 0.9): the top ranks matter most."""

    name = "context_relevance_weighted"
    needs = frozenset({NEEDS_CHUNKS})
    capabilities = frozenset({RATE_CHUNKS})
    uses_query = True
    uses_answer = False

    def __init__(self, decay: float = 0.9) -> None:
        if not isinstance(decay, (int, float)) or not 0.0 < decay <= 1.0:
            raise ConfigurationError(f"context_relevance_weighted: decay={decay!r}: set it in (0, 1] (default 0.9)")
        self.decay = float(decay)

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        ratings = await record_chunk_ratings(steps, record)
        return self.measured(
            decayed_mean(ratings, self.decay),
            steps,
            explanation=f"rank-weighted mean relevance of {len(ratings)} chunks (decay {self.decay})",
            details={"ratings": ratings, "decay": self.decay},
        )


class ContextPrecision(JudgeMetric):
    """Average precision of the ranking: are the useful chunks ranked first? See the module docstring."""

    name = "context_precision"
    needs = frozenset({NEEDS_CHUNKS})
    capabilities = frozenset({EXTRACT_CLAIMS, VERIFY})
    uses_answer = False  # only without a reference; checked in _measure

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        if (record.reference or "").strip():
            against = "reference"
            claims = await reference_claims(steps, record)
        elif record.answer.strip():
            against = "answer"
            claims = await answer_claims(steps, record)
        else:
            return self.absent("unmeasured", REASON_NO_ANSWER, "no reference and an empty answer", steps)
        if not claims:
            return self.absent("unmeasured", REASON_NO_CLAIMS, f"the {against} makes no factual claim", steps)
        useful = supporting_chunks(await verdicts(steps, claims, record.texts), len(record.chunks))
        return self.measured(
            average_precision(useful),
            steps,
            explanation=f"{sum(useful)} of {len(useful)} chunks support the {against}",
            details={"relevant": useful, DETAIL_METHOD: f"{against}_claims"},
        )
