"""What the judge said of each claim of an answer: the per-claim record behind faithfulness and
hallucination, kept in ``Score.details[DETAIL_CLAIMS]`` and sent on the evaluation event
(``ragtrace._wire_claims``) so a backend, the collector's page or a user can see which claim failed
against which chunk."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace import semconv
from ragtrace.judges._base import Verdict

__all__ = ["ClaimVerdict", "claim_verdicts"]


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    """One claim and what decided it.

    ``verdict``: ``supported`` (some chunk supports it), ``contradicted`` (none supports it and one
    contradicts it) or ``unsupported`` (no chunk does either): ``semconv.CLAIM_VERDICTS``.
    ``chunk``: the index (in the record's chunk order) of the chunk that decided it: the supporting
    chunk the judge is surest of, else the first contradicting one; None when unsupported.
    ``support``: the judge's probability that some chunk supports it (its best over the chunks), None
    when the judge gives verdicts only.
    """

    claim: str
    verdict: str
    chunk: int | None
    support: float | None


def claim_verdicts(
    claims: Sequence[str], matrix: Sequence[Sequence[Verdict]], support: Sequence[Sequence[float]] | None
) -> tuple[ClaimVerdict, ...]:
    """One ``ClaimVerdict`` per claim from the verify matrix ``[claim][chunk]`` and its support probabilities."""
    out: list[ClaimVerdict] = []
    for i, (claim, row) in enumerate(zip(claims, matrix, strict=True)):
        probabilities = support[i] if support is not None else None
        best = max(probabilities, default=0.0) if probabilities is not None else None
        supporting = [k for k, v in enumerate(row) if v is Verdict.SUPPORTED]
        contradicting = [k for k, v in enumerate(row) if v is Verdict.CONTRADICTED]
        if supporting:
            chunk = max(supporting, key=lambda k: probabilities[k]) if probabilities is not None else supporting[0]
            out.append(ClaimVerdict(claim, semconv.CLAIM_SUPPORTED, chunk, best))
        elif contradicting:
            out.append(ClaimVerdict(claim, semconv.CLAIM_CONTRADICTED, contradicting[0], best))
        else:
            out.append(ClaimVerdict(claim, semconv.CLAIM_UNSUPPORTED, None, best))
    return tuple(out)
