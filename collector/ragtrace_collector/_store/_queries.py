"""The reads the collector itself makes on the store's connection (the report reads with connections of its own).

Each function runs on the connection it is given; the caller holds the store's lock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ragtrace_collector._store._schema import RAG_RECORDS

__all__ = ["rag_record", "span_ids_where"]


def span_ids_where(conn: sqlite3.Connection, table: str, condition: str, span_ids: Sequence[str]) -> set[str]:
    """The span ids among ``span_ids`` of ``table``'s rows that meet ``condition``."""
    found: set[str] = set()
    # A few hundred ids a query: well under SQLite's limit on bound parameters.
    for start in range(0, len(span_ids), 500):
        part = list(span_ids[start : start + 500])
        marks = ", ".join("?" for _ in part)
        cursor = conn.execute(f"SELECT DISTINCT span_id FROM {table} WHERE {condition} AND span_id IN ({marks})", part)
        found.update(row[0] for row in cursor)
    return found


def rag_record(conn: sqlite3.Connection, span_id: str) -> dict[str, Any] | None:
    """The stored RAG record of a span, or None."""
    cursor = conn.execute(f"SELECT * FROM {RAG_RECORDS} WHERE span_id = ?", (span_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row, strict=True))
