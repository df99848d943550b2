"""Faithfulness and hallucination: the share of an answer's claims that some chunk supports, and
its complement, weighed by the judge's support probabilities where it gives them.

Re-exported by ``claims``, the family's import path (the table of the family is there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ragtrace import semconv
from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import EXTRACT_CLAIMS, VERIFY, Verdict
from ragtrace.metrics._base import DETAIL_CLAIMS, Direction, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS
from ragtrace.metrics._steps import Steps, verification
from ragtrace.metrics.claims.arithmetic import (
    SUPPORT_CUT,
    claim_support,
    faithfulness_label,
    fraction,
    least_support,
    picked,
    supported_by_any,
)
from ragtrace.metrics.claims.base import AnswerClaimsMetric
from ragtrace.metrics.claims.claim_verdicts import ClaimVerdict, claim_verdicts

if TYPE_CHECKING:
    from ragtrace._record import RagRecord

__all__ = ["SCORINGS", "Faithfulness", "HallucinatedClaim", "Hallucination", "Scoring"]

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
        least = least_support(matrix, weighed)
        return _Reading(matrix, supported_by_any(matrix), share, weighed is not None, verdicts, least)


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
    least: float
    """The least-supported claim's support, weighed as ``share`` is (0 or 1 by the verdicts otherwise)."""

    @property
    def hallucinated(self) -> bool:
        """The record-level signal: some claim is below the judge's cut, whatever the others."""
        return self.least < SUPPORT_CUT


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
    ``threshold``. At the default threshold 0 the label is the record-level signal (``HallucinatedClaim``):
    ``hallucinated`` exactly when the least-supported claim is below the judge's cut, so one wrong claim
    among many raises it while the value (a share) stays low.
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
            label="hallucinated" if self._flags(reading, unsupported) else "grounded",
            explanation=explanation + _weighed(reading.weighed, value, "expected unsupported share"),
            details={
                "claims": len(claims),
                "unsupported_claims": sum(unsupported),
                "contradicted_claims": contradicted,
                "unsupported": picked(claims, unsupported, True),
                DETAIL_CLAIMS: reading.verdicts,
            },
        )

    def _flags(self, reading: _Reading, unsupported: list[bool]) -> bool:
        # At the default the label is the record-level signal itself, so the two can never disagree (a
        # judge whose support and verdicts differ is read by its support, as ``ragtrace calibrate`` reads it).
        return reading.hallucinated if self.threshold == 0.0 else fraction(unsupported) > self.threshold


class HallucinatedClaim(_SupportShare):
    """The record-level hallucination signal: 1 - the least-supported claim's support.

    The judge's probability that the answer's worst claim is unsupported, on the scale where 0.5 is its cut:
    above 0.5 (label ``hallucinated``) exactly when some claim is below the cut, so one wrong claim among many
    raises it, where ``hallucination`` (the contract's share of unsupported claims) dilutes it by the count of
    right ones. With a judge that gives verdicts only, or ``scoring="verdicts"``, it is 1 when some claim is
    unsupported, else 0. It shares the extraction and the verification with faithfulness and hallucination:
    no judge call of its own. ``details``: the claims, how many are below the cut, and the least support.
    """

    name = semconv.HALLUCINATED_CLAIM
    direction: Direction = "lower"

    async def _measure_claims(self, record: RagRecord, steps: Steps, claims: list[str]) -> Score:
        reading = await self._support(steps, claims, record.texts)
        below = sum(1 for s in reading.supported if not s)
        return self.measured(
            1.0 - reading.least,
            steps,
            label="hallucinated" if reading.hallucinated else "grounded",
            explanation=f"least-supported claim at {reading.least:.2f} (cut {SUPPORT_CUT}); "
            f"{below} of {len(claims)} claims unsupported",
            details={"claims": len(claims), "unsupported_claims": below, "least_support": reading.least},
        )
