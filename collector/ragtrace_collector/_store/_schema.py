"""The store's schema: the four tables of docs/collector.md, their columns and indexes, and ``create_schema``.

The column dicts are the one list of each table's columns, in order: the upserts (``_writes.py``) bind rows
in that order. ``create_schema`` uses sqlite-utils, so the file opens as it is in Datasette.
"""

from __future__ import annotations

import sqlite_utils

__all__ = [
    "ALERTS",
    "RAG_COLUMNS",
    "RAG_RECORDS",
    "SCORES",
    "SCORE_COLUMNS",
    "SPANS",
    "SPAN_COLUMNS",
    "create_schema",
]

SPANS = "spans"
RAG_RECORDS = "rag_records"
SCORES = "scores"
ALERTS = "alerts"

SPAN_COLUMNS: dict[str, type] = {
    "span_id": str,
    "trace_id": str,
    "parent_span_id": str,
    "name": str,
    "kind": int,
    "service": str,
    "scope": str,
    "start_ns": int,
    "end_ns": int,
    "status_code": int,
    "status_message": str,
    "attributes": str,
    "events": str,
    "links": str,
    "resource": str,
    "received_ns": int,
}
RAG_COLUMNS: dict[str, type] = {
    "span_id": str,
    "trace_id": str,
    "service": str,
    "route": str,
    "time_ns": int,
    "query": str,
    "answer": str,
    "chunks": str,
    "reference": str,
    "decision": str,
    "judge": str,
    "calls": int,
    "prompt_tokens": int,
    "completion_tokens": int,
    "seconds": float,
}
SCORE_COLUMNS: dict[str, type] = {
    "span_id": str,
    "metric": str,
    "value": float,
    "label": str,
    "explanation": str,
    "reason": str,
    "error_type": str,
    "trace_id": str,
    "service": str,
    "route": str,
    "time_ns": int,
    "source": str,
}
_ALERT_COLUMNS: dict[str, type] = {
    "id": int,
    "time_ns": int,
    "rule": str,
    "kind": str,
    "metric": str,
    "service": str,
    "route": str,
    "state": str,
    "previous_state": str,
    "value": float,
    "threshold": float,
    "message": str,
    "sinks": str,
}
_INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (SCORES, ("metric", "time_ns")),
    (SCORES, ("service", "metric", "time_ns")),
    (SCORES, ("route", "metric", "time_ns")),
    (RAG_RECORDS, ("time_ns",)),
    (RAG_RECORDS, ("service", "time_ns")),
    (SPANS, ("trace_id",)),
    (ALERTS, ("time_ns",)),
)


def create_schema(db: sqlite_utils.Database) -> None:
    """Create the tables and indexes that do not exist yet (the caller holds the write lock)."""
    db[SPANS].create(SPAN_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
    db[RAG_RECORDS].create(RAG_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
    db[SCORES].create(  # type: ignore[union-attr]
        SCORE_COLUMNS, pk=("span_id", "metric"), if_not_exists=True
    )
    db[ALERTS].create(_ALERT_COLUMNS, pk="id", if_not_exists=True)  # type: ignore[union-attr]
    for table, columns in _INDEXES:
        db[table].create_index(columns, if_not_exists=True)  # type: ignore[union-attr]
