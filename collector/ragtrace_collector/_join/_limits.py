"""How long a trace is given to settle, and the bounds on the traces waiting: ``JoinLimits``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ragtrace import ConfigurationError

__all__ = ["JoinLimits"]


@dataclass(frozen=True, slots=True)
class JoinLimits:
    """When a waiting trace is joined, and how many may wait.

    ``settle_seconds``: a trace is joined once its root (a span with no parent) has arrived and no span of it
    arrived for this long (exporters batch and retry, so one trace comes in several exports, out of order).
    ``max_seconds``: a trace whose root never arrives (its parent lives in a service that does not send here)
    is joined with what arrived this long after its first span. ``max_traces`` and ``max_bytes``: traces
    waiting at once, and the approximate bytes of their RAG spans; past either the oldest are dropped
    (never joined) and counted. ``max_trace_spans``: a trace with more spans than this is dropped, not read.
    """

    settle_seconds: float = 10.0
    max_seconds: float = 300.0
    max_traces: int = 10_000
    max_bytes: int = 256 << 20
    max_trace_spans: int = 10_000

    def validate(self) -> None:
        """Raise ``ConfigurationError`` naming the fix when a limit is not a usable number."""
        if not (math.isfinite(self.settle_seconds) and self.settle_seconds > 0):
            raise ConfigurationError(f"--join-settle-seconds {self.settle_seconds} must be a number > 0, e.g. 10")
        if not (math.isfinite(self.max_seconds) and self.max_seconds >= self.settle_seconds):
            raise ConfigurationError(
                f"--join-max-seconds {self.max_seconds} must be at least --join-settle-seconds "
                f"{self.settle_seconds}, e.g. 300"
            )
        for name, value in (
            ("--join-max-traces", self.max_traces),
            ("--join-max-bytes", self.max_bytes),
            ("--join-max-trace-spans", self.max_trace_spans),
        ):
            if value < 1:
                raise ConfigurationError(f"{name} {value} must be a whole number >= 1")
