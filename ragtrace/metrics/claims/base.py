"""The frame of the metrics over an answer's claims (``claims``, ``_faithfulness``): the claims are
extracted once per record, and an answer without claims is unmeasured with reason ``no_claims``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace.metrics._base import REASON_NO_CLAIMS, Score
from ragtrace.metrics._metric import JudgeMetric
from ragtrace.metrics._steps import Steps, answer_claims

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = ["AnswerClaimsMetric"]


class AnswerClaimsMetric(JudgeMetric):
    """Frame of the metrics over the answer's claims: no claims means nothing to measure."""

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        claims = await answer_claims(steps, record)
        if not claims:
            return self._no_claims(steps)
        return await self._measure_claims(record, steps, claims)

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        raise NotImplementedError

    def _no_claims(self, steps: Steps) -> Score:
        return self.absent("unmeasured", REASON_NO_CLAIMS, "the answer makes no factual claim", steps)
