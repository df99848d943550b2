"""The store's schema: the tables of docs/collector.md, their columns and indexes, and ``create_schema``.

The column dicts are the one list of each record table's columns, in order: the upserts (``_writes.py``) bind
rows in that order. ``create_schema`` uses sqlite-utils, so the file opens as it is in Datasette; the alert
tables are defined in ``_alert_schema.py`` (the watcher and the alert API create them too).
"""

from __future__ import annotations

import sqlite_utils

from ragtrace_collector._store._alert_schema import ALERTS, ensure_alert_tables

__all__ = [
    "ALERTS",
    "JOIN_PENDING",
    "JOIN_PENDING_COLUMNS",
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
JOIN_PENDING = "join_pending"
"""Traces with spans of a RAG call another instrumentation traced, waiting to settle and be joined (``_join``)."""

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
    "reason": str,
}
"""``reason``: why a ``not_scored`` record was not scored (``ragtrace.eval.not_scored.reason``: ``no_content``,
``app_error``); added after the first release, so ``create_schema`` adds it to an older file."""
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
    "claims": str,
}
"""``claims``: a claim metric's per-claim verdicts, JSON (``ragtrace._wire_claims``: claim text when the app
captured content, verdict, deciding chunk, support probability); added after the first release, so
``create_schema`` adds it to an older file."""
JOIN_PENDING_COLUMNS: dict[str, type] = {
    "trace_id": str,
    "first_ns": int,
    "last_ns": int,
    "spans": int,
    "bytes": int,
}
"""``first_ns``/``last_ns``: when its first and latest such span arrived (``last_ns`` is also moved on when the
joiner looked and the trace was not ready); ``spans``, ``bytes``: how many, and their approximate size."""
_INDEXES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (SCORES, ("metric", "time_ns")),
    (SCORES, ("service", "metric", "time_ns")),
    (SCORES, ("route", "metric", "time_ns")),
    (RAG_RECORDS, ("time_ns",)),
    (RAG_RECORDS, ("service", "time_ns")),
    (SPANS, ("trace_id",)),
    (JOIN_PENDING, ("first_ns",)),
    (JOIN_PENDING, ("last_ns",)),
)


def create_schema(db: sqlite_utils.Database) -> None:
    """Create the tables and indexes that do not exist yet (the caller holds the write lock)."""
    db[SPANS].create(SPAN_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
    db[RAG_RECORDS].create(RAG_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
    _add_missing_columns(db, RAG_RECORDS, RAG_COLUMNS)
    db[SCORES].create(  # type: ignore[union-attr]
        SCORE_COLUMNS, pk=("span_id", "metric"), if_not_exists=True
    )
    _add_missing_columns(db, SCORES, SCORE_COLUMNS)
    db[JOIN_PENDING].create(JOIN_PENDING_COLUMNS, pk="trace_id", if_not_exists=True)  # type: ignore[union-attr]
    for table, columns in _INDEXES:
        db[table].create_index(columns, if_not_exists=True)  # type: ignore[union-attr]
    ensure_alert_tables(db.conn)


_SQL_TYPES = {str: "TEXT", int: "INTEGER", float: "FLOAT"}


def _add_missing_columns(db: sqlite_utils.Database, table: str, columns: dict[str, type]) -> None:
    """A file written by an older collector lacks the columns added since: add them, keeping its rows."""
    present = {row[1] for row in db.conn.execute(f"PRAGMA table_info([{table}])")}
    for column, kind in columns.items():
        if column not in present:
            db.conn.execute(f"ALTER TABLE [{table}] ADD COLUMN [{column}] {_SQL_TYPES[kind]}")
