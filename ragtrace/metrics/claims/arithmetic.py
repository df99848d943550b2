"""The claim-based metrics' arithmetic: pure functions over claim x chunk verdict matrices and flags,
tested without a judge (``tests/ragtrace/metrics/test_claims.py``).

Re-exported by ``claims``, whose metrics use them and which is these names' import path.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace.judges._base import Verdict

__all__ = [
    "SUPPORT_CUT",
    "claim_support",
    "contradicted_chunks",
    "faithfulness_label",
    "fraction",
    "least_support",
    "noisy_claims",
    "picked",
    "supported_by_any",
    "supporting_chunks",
]


def fraction(flags: Sequence[bool]) -> float:
    """Share of true flags. The caller guarantees at least one flag."""
    return sum(flags) / len(flags)


def supported_by_any(matrix: Sequence[Sequence[Verdict]]) -> list[bool]:
    """For every claim (row): is it supported by at least one chunk?"""
    return [any(v is Verdict.SUPPORTED for v in row) for row in matrix]


def claim_support(matrix: Sequence[Sequence[Verdict]], support: Sequence[Sequence[float]] | None) -> list[float]:
    """For every claim: the judge's probability that some chunk supports it, its best over the chunks
    (0.0 with no chunk); 1.0 or 0.0 by the verdicts when the judge gives no probabilities. Their mean
    is the expected share of supported claims, which is the share itself when every value is 0 or 1."""
    if support is None:
        return [1.0 if s else 0.0 for s in supported_by_any(matrix)]
    return [max(row, default=0.0) for row in support]


SUPPORT_CUT = 0.5
"""Every judge's cut on the shared support scale (``JudgeReply.support``): a claim below it is not supported."""


def least_support(matrix: Sequence[Sequence[Verdict]], support: Sequence[Sequence[float]] | None) -> float:
    """The least-supported claim's support (``claim_support``'s minimum; the caller guarantees a claim): the
    score ``ragtrace calibrate`` fits a cut to. Below ``SUPPORT_CUT`` the record holds a claim the judge does
    not find in any chunk, and is hallucinated whatever its other claims (one wrong claim is enough)."""
    return min(claim_support(matrix, support))


def supporting_chunks(matrix: Sequence[Sequence[Verdict]], n_chunks: int) -> list[bool]:
    """For every chunk (column): does it support at least one claim?"""
    return [any(row[k] is Verdict.SUPPORTED for row in matrix) for k in range(n_chunks)]


def contradicted_chunks(matrix: Sequence[Sequence[Verdict]], n_chunks: int) -> list[bool]:
    """For every chunk (column): does it contradict at least one claim?"""
    return [any(row[k] is Verdict.CONTRADICTED for row in matrix) for k in range(n_chunks)]


def noisy_claims(
    correct: Sequence[bool], answer_matrix: Sequence[Sequence[Verdict]], chunk_mask: Sequence[bool]
) -> list[bool]:
    """For every answer claim: is it incorrect yet entailed by at least one chunk of ``chunk_mask``?"""
    return [
        not ok and any(v is Verdict.SUPPORTED and chunk_mask[k] for k, v in enumerate(row))
        for ok, row in zip(correct, answer_matrix, strict=True)
    ]


def faithfulness_label(supported: int, total: int) -> str:
    """``faithful`` when every claim is supported, ``unfaithful`` below half, else ``partially_faithful``."""
    if supported == total:
        return "faithful"
    return "unfaithful" if supported / total < 0.5 else "partially_faithful"


def picked(items: Sequence[str], flags: Sequence[bool], want: bool) -> list[str]:
    """The items whose flag equals ``want``, in order."""
    return [item for item, flag in zip(items, flags, strict=True) if flag is want]
