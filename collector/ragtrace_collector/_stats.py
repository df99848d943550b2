"""The collector's own counters: spans and log records received, stored and rejected (log records that are not
evaluations: ignored), requests refused whole, decisions made.

The receivers, the pipeline and server-side scoring add to one ``Stats``; ``/metrics`` reads a ``snapshot``.
Counters only grow (Prometheus computes rates from them); they start at 0 with the process, as Prometheus
expects of a counter after a restart.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["DECIDED_BY", "REFUSAL_REASONS", "Receiver", "Stats", "StatsSnapshot", "http_refusal_reason"]

Receiver = Literal["http", "grpc"]

REFUSAL_REASONS: Final = (
    "malformed",
    "unauthenticated",
    "too_large",
    "unsupported",
    "over_budget",
    "store_unavailable",
    "disconnected",
    "too_slow",
)
"""Why a whole export was refused: the ``reason`` label of ``ragtrace_collector_requests_refused_total``."""

_HTTP_REASONS: Final = {
    400: "malformed",
    401: "unauthenticated",
    408: "too_slow",
    413: "too_large",
    415: "unsupported",
    429: "over_budget",
    503: "store_unavailable",
}

DECIDED_BY: Final = ("app", "collector")
"""Who decided a RAG record's scoring: the app (the decision came on the span) or the collector's scoring."""


def http_refusal_reason(status: int, *, cancelled: bool = False) -> str:
    """The refusal reason of an OTLP/HTTP reply status (``cancelled``: the sender left mid-body)."""
    if cancelled:
        return "disconnected"
    return _HTTP_REASONS.get(status, "malformed")


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """The counters at one moment. ``refused`` by (receiver, reason); ``decisions`` by (decision, decided by)."""

    spans_stored: int
    spans_rejected: int
    refused: Mapping[tuple[str, str], int]
    decisions: Mapping[tuple[str, str], int]
    logs_stored: int = 0
    """Evaluation log records stored (each one ``scores`` row, or merged into its span's)."""
    logs_ignored: int = 0
    """Log records that are not evaluations: taken in and dropped."""
    logs_rejected: int = 0
    """Log records refused one by one (partial success)."""


class Stats:
    """Thread-safe counters (the event loop, the scoring thread and gRPC's handlers all add to them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stored = 0
        self._rejected = 0
        self._refused: Counter[tuple[str, str]] = Counter()
        self._decisions: Counter[tuple[str, str]] = Counter()
        self._logs = [0, 0, 0]  # stored, ignored, rejected

    def exported(self, stored: int, rejected: int) -> None:
        """One export committed: ``stored`` spans written, ``rejected`` refused one by one (partial success)."""
        with self._lock:
            self._stored += stored
            self._rejected += rejected

    def logs_exported(self, stored: int, ignored: int, rejected: int) -> None:
        """One logs export committed: ``stored`` evaluation records written, ``ignored`` records that are not
        evaluations, ``rejected`` refused one by one (partial success)."""
        with self._lock:
            for index, count in enumerate((stored, ignored, rejected)):
                self._logs[index] += count

    def refused(self, receiver: Receiver, reason: str) -> None:
        """One export refused whole (nothing of it stored)."""
        with self._lock:
            self._refused[(receiver, reason)] += 1

    def decided(self, decisions: Mapping[str, int], by: str) -> None:
        """RAG records given a decision (``evaluated``, ``not_sampled``, ...) by the app or the collector."""
        with self._lock:
            for decision, count in decisions.items():
                if count:
                    self._decisions[(decision, by)] += count

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            return StatsSnapshot(self._stored, self._rejected, dict(self._refused), dict(self._decisions), *self._logs)
