"""Retention: every row older than a cut, deleted from every table that grows (``ragtrace-collector prune``,
``serve --retention``).

Each group's current state (``alert_groups``) and the Phoenix cursor are kept: they are state, not history.
"""

from __future__ import annotations

from ragtrace_collector._store.dialect import AnyConnection
from ragtrace_collector._store.schema import ALERT_ACKS, ALERT_SILENCES, ALERTS, RAG_RECORDS, SCORES, SPANS

__all__ = ["prune"]

_AGED: tuple[tuple[str, str], ...] = (
    (SPANS, "end_ns"),
    (RAG_RECORDS, "time_ns"),
    (SCORES, "time_ns"),
    (ALERTS, "time_ns"),
    (ALERT_SILENCES, "ends_ns"),
    (ALERT_ACKS, "time_ns"),
)
"""Each table that grows, and the column that dates its rows (a silence by its end, an ack by its time)."""


def prune(conn: AnyConnection, older_than_ns: int) -> dict[str, int]:
    """Delete every row older than ``older_than_ns``, inside the caller's transaction; return counts by table."""
    deleted: dict[str, int] = {}
    for table, column in _AGED:
        cursor = conn.execute(f"DELETE FROM {table} WHERE {column} < ?", (older_than_ns,))
        deleted[table] = cursor.rowcount
    return deleted
