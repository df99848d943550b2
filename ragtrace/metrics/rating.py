"""answer_relevancy_rating: the simple check, one call in which the judge rates the answer in [0, 1].

A rating outside [0, 1] or not a number is an error with reason ``unparseable_reply``, never a
silent 0.5.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace.judges._base import RATE_ANSWER, Rating
from ragtrace.metrics._base import DETAIL_FREE_TEXT, Score
from ragtrace.metrics._metric import JudgeMetric
from ragtrace.metrics._steps import ReplyError, Steps, check_unit

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = ["AnswerRelevancyRating"]


class AnswerRelevancyRating(JudgeMetric):
    """The judge's rating in [0, 1] of how well the answer addresses the query, with its explanation."""

    name = "answer_relevancy_rating"
    capabilities = frozenset({RATE_ANSWER})
    uses_query = True

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        rating = await steps(steps.judge.rate_answer(record.query, record.answer))
        if not isinstance(rating, Rating):
            raise ReplyError(f"expected a Rating, got {type(rating).__name__}")
        value = check_unit(rating.value, "the answer rating")
        return self.measured(value, steps, explanation=rating.explanation or None, details={DETAIL_FREE_TEXT: True})
