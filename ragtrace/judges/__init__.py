"""Judges: who answers the metrics' steps. See ``ragtrace.judges._base`` for the protocol."""

from ragtrace.judges._base import (
    ALL_CAPABILITIES,
    GEvalRating,
    Judge,
    JudgeCapabilityError,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
)

__all__ = [
    "ALL_CAPABILITIES",
    "GEvalRating",
    "Judge",
    "JudgeCapabilityError",
    "JudgeError",
    "JudgeReply",
    "Question",
    "Rating",
    "Verdict",
]
