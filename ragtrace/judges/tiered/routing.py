"""The tiered judge's routing rules: which records the LLM tier answers, and how its probabilities
sit among the offline tier's (``rescore``, ``banded``). Pure functions, re-exported by ``tiered``."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ragtrace.judges._base import JudgeError, JudgeReply, Verdict, agreeing

__all__ = [
    "DEFAULT_AUDIT_SHARE",
    "DEFAULT_MARGIN",
    "audit_draw",
    "banded",
    "needs_llm",
    "offline_threshold",
    "record_key",
    "rescore",
    "supported_claims",
]

DEFAULT_MARGIN = 0.28
"""A claim is doubtful when its offline support probability is within this of the threshold.

Fitted by bench/tiered_margin.py on the calibration split: the widest band that routes at most 25 % of
records (audit share included) to the LLM on QA and on the length-controlled set, whose offline
probabilities crowd the threshold (0.28 routes 16.3 % and 24.6 %). Refit with the offline models: with the
answer reader the length-controlled set's probabilities moved away from the threshold (0.13 routes 10.7 %
of it now); with the support model before the swap-aware passes it was 0.04, with them 0.13."""
DEFAULT_AUDIT_SHARE = 0.05
"""Share of records re-scored by the LLM whatever the offline tier says."""


def audit_draw(key: str) -> float:
    """A number in [0, 1) fixed by ``key`` (BLAKE2b): the same record gets the same draw everywhere."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


def needs_llm(
    probabilities: Sequence[float],
    key: str,
    *,
    threshold: float = 0.5,
    margin: float = DEFAULT_MARGIN,
    audit_share: float = DEFAULT_AUDIT_SHARE,
) -> bool:
    """True when the LLM tier should answer: a claim's offline support probability (its best over the
    chunks) is within ``margin`` of ``threshold``, or the record's audit draw is below ``audit_share``."""
    if any(abs(p - threshold) <= margin for p in probabilities):
        return True
    return audit_draw(key) < audit_share


def rescore(p_llm: float, threshold: float, margin: float) -> float:
    """The LLM tier's probability placed in the offline tier's doubt band, ``threshold +- margin``: on
    the same side of the threshold as the LLM's verdict (p >= 0.5), ordered as the LLM orders them.
    Putting the LLM's raw probability among the offline tier's would mix two scales in one ranking."""
    return min(1.0, max(0.0, threshold + margin * (2.0 * p_llm - 1.0)))


def record_key(claims: Sequence[str], chunks: Sequence[str]) -> str:
    return "\x1e".join(claims) + "\x1d" + "\x1e".join(chunks)


def offline_threshold(offline: object = None) -> float:
    """The offline tier's own ``support_threshold`` when it has one, else the offline judge's calibrated
    ``SUPPORT_THRESHOLD``, else 0.5."""
    own = getattr(offline, "support_threshold", None)
    if isinstance(own, (int, float)) and not isinstance(own, bool):
        return float(own)
    try:
        from ragtrace.judges.offline import calibration as cal

        return float(getattr(cal, "SUPPORT_THRESHOLD", 0.5))
    except Exception:
        return 0.5


def banded(
    reply: JudgeReply[list[list[Verdict]]], n_claims: int, n_chunks: int, threshold: float, margin: float, llm: str
) -> list[list[float]]:
    """The LLM tier's support (its verdicts as 1.0/0.0 when it gives none; 0.5 is its cut, as for every
    judge) placed in the doubt band (``rescore``), on the shared scale and agreeing with its verdicts. A
    reply whose verdicts or support do not fit the request is a ``JudgeError`` (``invalid_reply``): the
    LLM failed, and the offline tier answers."""

    def invalid(what: str) -> JudgeError:
        return JudgeError(f"{llm}: {what}", error_type="invalid_reply")

    try:
        verdicts = [[Verdict(str(getattr(v, "value", v)).lower()) for v in row] for row in reply.value]
        rows = reply.support or [[1.0 if v is Verdict.SUPPORTED else 0.0 for v in row] for row in verdicts]
        shapes = [len(row) for row in verdicts], [len(row) for row in rows]
        if shapes != ([n_chunks] * n_claims, [n_chunks] * n_claims):
            raise invalid(f"verdicts or support shaped {shapes} for {n_claims} claims x {n_chunks} chunks")
        return [
            [
                agreeing(rescore(float(p), threshold, margin) if p > 0.0 else 0.0, v, threshold)
                for p, v in zip(ps, vs, strict=True)
            ]
            for ps, vs in zip(rows, verdicts, strict=True)
        ]
    except (TypeError, ValueError) as err:
        raise invalid(f"a verdict or support value that is not one ({err})") from None


def supported_claims(verdicts: Sequence[Sequence[object]]) -> list[bool]:
    """For every claim (a row of verdicts, ``Verdict`` or its string): does some chunk support it?"""
    return [any(str(getattr(v, "value", v)).lower() == Verdict.SUPPORTED.value for v in row) for row in verdicts]
