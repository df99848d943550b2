"""Faithfulness and hallucination: the share of an answer's claims that some chunk supports, and
its complement, weighed by the judge's support probabilities where it gives them.

Re-exported by ``claims``, the family's import path (the table of the family is there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import EXTRACT_CLAIMS, VERIFY, Verdict
from ragtrace.metrics._base import DETAIL_CLAIMS, Direction, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS
from ragtrace.metrics._steps import Steps, verification
from ragtrace.metrics.claims.arithmetic import claim_support, faithfulness_label, fraction, picked, supported_by_any
from ragtrace.metrics.claims.base import AnswerClaimsMetric
from ragtrace.metrics.claims.claim_verdicts import ClaimVerdict, claim_verdicts

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = ["SCORINGS", "Faithfulness", "Hallucination", "Scoring"]

Scoring = Literal["support", "verdicts"]
SCORINGS: tuple[Scoring, ...] = ("support", "verdicts")


class _SupportShare(AnswerClaimsMetric):
    """Frame of faithfulness and hallucination: the share of the answer's claims some chunk supports.

    ``scoring="support"`` (the default) counts each claim by how sure the judge is that it is supported
    (``JudgeReply.support``: an LLM's P("yes"), the offline judge's calibrated probability, on the scale
    every judge shares, where 0.5 is the judge's cut), so the value ranks answers by how sure the judge
    is, not only by which side of its cut they fell, and a claim the judge calls supported counts at
    least 0.5; with a judge that gives verdicts only, or
    ``scoring="verdicts"``, each claim counts 1 or 0 as the contract's worked examples do. Labels
    always count verdicts.
    """

    needs = frozenset({NEEDS_CHUNKS})
    capabilities = frozenset({EXTRACT_CLAIMS, VERIFY})

    def __init__(self, scoring: Scoring = "support") -> None:
        if scoring not in SCORINGS:
            raise ConfigurationError(f"{self.name}: scoring={scoring!r}: use one of {', '.join(SCORINGS)}")
        self.scoring: Scoring = scoring

    async def _support(self, steps: Steps, claims: list[str], chunks: list[str]) -> _Reading:
        matrix, support = await verification(steps, claims, chunks)
        weighed = support if self.scoring == "support" else None
        share = sum(claim_support(matrix, weighed)) / len(claims)
        verdicts = claim_verdicts(claims, matrix, support)
        return _Reading(matrix, supported_by_any(matrix), share, weighed is not None, verdicts)


@dataclass(frozen=True, slots=True)
class _Reading:
    """The judge's reading of an answer's claims, as both metrics use it."""

    matrix: list[list[Verdict]]
    supported: list[bool]
    """Per claim: does some chunk's verdict support it?"""
    share: float
    """Share of supported claims, weighed by support probabilities when ``weighed``."""
    weighed: bool
    verdicts: tuple[ClaimVerdict, ...]


def _weighed(weighed: bool, share: float, what: str) -> str:
    return f"; {what} {share:.2f} by the judge's support probabilities" if weighed else ""


class Faithfulness(_SupportShare):
    """Claims of the answer supported by at least one chunk, over all claims (see ``_SupportShare``
    for ``scoring``). Label by verdicts: ``faithful`` when every claim is supported."""

    name = "faithfulness"

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        reading = await self._support(steps, claims, record.texts)
        n, share = sum(reading.supported), reading.share
        return self.measured(
            share,
            steps,
            label=faithfulness_label(n, len(claims)),
            explanation=f"{n} of {len(claims)} claims supported by the chunks"
            + _weighed(reading.weighed, share, "expected"),
            details={
                "claims": len(claims),
                "supported_claims": n,
                "unsupported": picked(claims, reading.supported, False),
                DETAIL_CLAIMS: reading.verdicts,
            },
        )


class Hallucination(_SupportShare):
    """Claims of the answer supported by no chunk (contradicted or without basis), over all claims:
    1 - faithfulness, under the same ``scoring``.

    Label ``hallucinated`` when the share of claims the verdicts leave unsupported exceeds
    ``threshold`` (default 0: any unsupported claim).
    """

    name = "hallucination"
    direction: Direction = "lower"

    def __init__(self, threshold: float = 0.0, scoring: Scoring = "support") -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold < 1.0:
            raise ConfigurationError(f"hallucination: threshold={threshold!r}: set it in [0, 1) (default 0)")
        super().__init__(scoring)
        self.threshold = float(threshold)

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        reading = await self._support(steps, claims, record.texts)
        unsupported = [not s for s in reading.supported]
        contradicted = sum(any(v is Verdict.CONTRADICTED for v in row) for row in reading.matrix)
        value = 1.0 - reading.share
        explanation = f"{sum(unsupported)} of {len(claims)} claims without support, {contradicted} contradicted"
        return self.measured(
            value,
            steps,
            label="hallucinated" if fraction(unsupported) > self.threshold else "grounded",
            explanation=explanation + _weighed(reading.weighed, value, "expected unsupported share"),
            details={
                "claims": len(claims),
                "unsupported_claims": sum(unsupported),
                "contradicted_claims": contradicted,
                "unsupported": picked(claims, unsupported, True),
                DETAIL_CLAIMS: reading.verdicts,
            },
        )
