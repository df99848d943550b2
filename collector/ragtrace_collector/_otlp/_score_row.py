"""One ``scores`` row from a metric's decoded fields: the one place spans and log records build theirs.

A span's events and flat attributes (``_rows``) and an evaluation log record (``_log_rows``) are both read with
``ragtrace.wire.decode_scores``; building the row here too means an evaluation is stored alike, column for
column, whichever way it came.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace import wire
from ragtrace_collector._otlp._batch import Row

__all__ = ["score_row"]


def score_row(
    metric: str,
    fields: Mapping[str, Any],
    *,
    span_id: str,
    trace_id: str,
    service: str | None,
    route: str | None,
    time_ns: int,
    source: str,
) -> Row:
    """The row of ``metric`` scored on span ``span_id``; ``fields`` as ``decode_scores`` returns them (a field
    it left out is NULL). ``route`` None: the store fills it from the span's RAG record once both are stored."""
    return {
        "span_id": span_id,
        "metric": metric,
        "value": fields.get("value"),
        "label": fields.get("label"),
        "explanation": fields.get("explanation"),
        "reason": fields.get("reason"),
        "error_type": fields.get("error_type"),
        "trace_id": trace_id,
        "service": service,
        "route": route,
        "time_ns": time_ns,
        "source": source,
        "claims": fields.get(wire.CLAIMS),
    }
