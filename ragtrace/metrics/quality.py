"""Combined quality over context_relevance, faithfulness and answer_relevancy_embedding.

weighted = 0.3 * context_relevance + 0.4 * faithfulness + 0.3 * answer_relevancy (weights
configurable, normalised to sum 1); harmonic = 3 / sum(1/s), 0 if any is 0; minimum. The value is
the chosen ``mode`` (default ``weighted``); the label is the grade of the weighted score: A >= 0.9,
B >= 0.8, C >= 0.7, D >= 0.6, else F. Components are clipped to [0, 1] first (a negative cosine
counts as 0).

The components are scored by the ordinary metrics with the same judge, so inside a ``Suite`` they
reuse the calls the suite makes anyway: quality costs no extra judge call.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ragtrace._exceptions import ConfigurationError
from ragtrace.metrics._base import ZERO_COST, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS, JudgeMetric
from ragtrace.metrics.chunks import ContextRelevance
from ragtrace.metrics.claims import Faithfulness
from ragtrace.metrics.relevancy_embedding import AnswerRelevancyEmbedding

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge
    from ragtrace.metrics._steps import Steps

__all__ = ["Quality", "grade", "harmonic", "weighted"]

Mode = Literal["weighted", "harmonic", "minimum"]

_GRADES = ((0.9, "A"), (0.8, "B"), (0.7, "C"), (0.6, "D"))


def weighted(scores: Sequence[float], weights: Sequence[float]) -> float:
    """sum(w_i * s_i) / sum(w_i)."""
    return math.fsum(w * s for w, s in zip(weights, scores, strict=True)) / math.fsum(weights)


def harmonic(scores: Sequence[float]) -> float:
    """n / sum(1 / s_i); 0 when any score is 0 (or below)."""
    if any(s <= 0 for s in scores):
        return 0.0
    return len(scores) / math.fsum(1 / s for s in scores)


def grade(value: float) -> str:
    """A >= 0.9, B >= 0.8, C >= 0.7, D >= 0.6, else F (a hair of float error does not cost a grade)."""
    for bound, letter in _GRADES:
        if value >= bound - 1e-9:
            return letter
    return "F"


class Quality(JudgeMetric):
    """One number for a RAG answer from its three core metrics; see the module docstring."""

    name = "quality"
    needs = frozenset({NEEDS_CHUNKS})
    uses_query = True

    def __init__(
        self,
        weights: Sequence[float] = (0.3, 0.4, 0.3),
        mode: Mode = "weighted",
        answer_relevancy: AnswerRelevancyEmbedding | None = None,
    ) -> None:
        if (
            len(weights) != 3
            or any(not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0 for w in weights)
            or not sum(weights)
        ):
            raise ConfigurationError(
                f"quality: weights={tuple(weights)!r}: give three non-negative numbers for context_relevance, "
                "faithfulness, answer_relevancy (default 0.3, 0.4, 0.3)"
            )
        if mode not in ("weighted", "harmonic", "minimum"):
            raise ConfigurationError(f"quality: mode={mode!r}: use 'weighted' (default), 'harmonic' or 'minimum'")
        self.weights = tuple(float(w) for w in weights)
        self.mode: Mode = mode
        self.components: tuple[JudgeMetric, ...] = (
            ContextRelevance(),
            Faithfulness(),
            answer_relevancy or AnswerRelevancyEmbedding(),
        )
        self.capabilities = frozenset().union(*(c.capabilities for c in self.components))

    def _check_judge(self, judge: Judge) -> Score | None:
        for component in self.components:
            lacking = component._check_judge(judge)
            if lacking is not None:
                return self.absent("skipped", lacking.reason or "", f"{component.name}: {lacking.explanation}")
        return None

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        parts = await asyncio.gather(*(c.score(record, steps.judge) for c in self.components))
        cost = sum((p.cost for p in parts), ZERO_COST)
        for part in parts:
            if not part.ok:
                absent = Score.absent(
                    self.name,
                    part.status,
                    part.reason or "",
                    explanation=f"{part.name} is absent: {part.explanation}",
                    error_type=part.error_type,
                    cost=cost,
                )
                return absent
        values = [min(1.0, max(0.0, p.value or 0.0)) for p in parts]
        w = weighted(values, self.weights)
        h = harmonic(values)
        m = min(values)
        value = {"weighted": w, "harmonic": h, "minimum": m}[self.mode]
        steps.cost = cost
        return self.measured(
            value,
            steps,
            label=grade(w),
            explanation=", ".join(f"{p.name} {v:.2f}" for p, v in zip(parts, values, strict=True)),
            details={"weighted": w, "harmonic": h, "minimum": m, "grade": grade(w), "mode": self.mode},
        )
