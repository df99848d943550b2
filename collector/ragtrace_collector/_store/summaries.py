"""What the report's reads (``report.py``) return: the summary of a period, problem records and their issues."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["NO_DECISION", "Issue", "MetricSummary", "Problem", "Summary"]

NO_DECISION = "(none)"  # rag_records.decision is NULL when the app did not decide (server-side scoring)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric over the records: how many were scored and their mean."""

    metric: str
    direction: str
    count: int
    mean: float


@dataclass(frozen=True, slots=True)
class Summary:
    """The store at a glance. Times are ns since the epoch; ``None`` when there is nothing yet."""

    records: int
    """The RAG records of the period (by the record's time)."""
    scored: int
    """Those of ``records`` with a score (so never more than ``records``)."""
    metrics: tuple[MetricSummary, ...]
    overall_mean: float | None
    overall_min: float | None
    overall_max: float | None
    first_ns: int | None
    last_ns: int | None
    decisions: tuple[tuple[str, int], ...]
    firing: tuple[dict[str, Any], ...] = ()
    scored_elsewhere: int = 0
    """Spans scored in the period (by the score's time) whose record is not in it: stored outside the period (a
    late score) or never (a score-only export). The metrics count their scores."""

    @property
    def means(self) -> dict[str, float]:
        """Mean of each metric, by name."""
        return {m.metric: m.mean for m in self.metrics}


@dataclass(frozen=True, slots=True)
class Issue:
    """One metric of a record on the wrong side of the threshold."""

    metric: str
    value: float
    direction: str
    limit: float

    def __str__(self) -> str:
        sign = "<" if self.direction == "higher" else ">"
        return f"{self.metric} {self.value:.2f} {sign} {self.limit:.2f}"


@dataclass(frozen=True, slots=True)
class Problem:
    """A record with at least one issue, with what a human needs to judge it."""

    span_id: str
    trace_id: str | None
    service: str | None
    route: str | None
    time_ns: int | None
    overall: float
    issues: tuple[Issue, ...]
    scores: dict[str, float] = field(default_factory=dict)
    query: str | None = None
    answer: str | None = None
    chunks: tuple[dict[str, Any], ...] = ()
