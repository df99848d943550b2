"""The collector's own counters: spans received, stored and rejected, requests refused whole, decisions made.

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
)
"""Why a whole export was refused: the ``reason`` label of ``ragtrace_collector_requests_refused_total``."""

_HTTP_REASONS: Final = {
    400: "malformed",
    401: "unauthenticated",
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


class Stats:
    """Thread-safe counters (the event loop, the scoring thread and gRPC's handlers all add to them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stored = 0
        self._rejected = 0
        self._refused: Counter[tuple[str, str]] = Counter()
        self._decisions: Counter[tuple[str, str]] = Counter()

    def exported(self, stored: int, rejected: int) -> None:
        """One export committed: ``stored`` spans written, ``rejected`` refused one by one (partial success)."""
        with self._lock:
            self._stored += stored
            self._rejected += rejected

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
            return StatsSnapshot(self._stored, self._rejected, dict(self._refused), dict(self._decisions))
