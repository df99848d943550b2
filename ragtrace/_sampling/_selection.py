"""The sampler's answer for one span (``Selection``) and the deterministic draw it compares with a rate."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Final

from ragtrace import semconv

_TWO_64: Final = float(2**64)


@dataclass(frozen=True, slots=True)
class Selection:
    """The sampler's answer for one RAG span.

    ``selected`` spans are scored with ``metrics`` (empty tuple: every metric of the suite). Others
    carry ``decision`` (one of ``semconv.DECISION_*``) and are exported at once. ``rule`` names the
    rule that decided, if any.
    """

    selected: bool
    decision: str
    metrics: tuple[str, ...] = ()
    rule: str | None = None
    window: int | None = field(default=None, compare=False, repr=False)
    """The throttle minute that counted this selection (``None``: no throttle), for ``Sampler.refund``."""


NOT_SAMPLED: Final = Selection(False, semconv.DECISION_NOT_SAMPLED)
THROTTLED: Final = Selection(False, semconv.DECISION_THROTTLED)
OVER_BUDGET: Final = Selection(False, semconv.DECISION_OVER_BUDGET)


def draw(trace_id: int) -> float:
    """The trace's deterministic draw in [0, 1): BLAKE2b-64 of the 16-byte big-endian trace id."""
    digest = hashlib.blake2b(trace_id.to_bytes(16, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _TWO_64
