"""Retention: every row older than a cut, deleted from every table that grows (``serve --retention-days``).

Each group's current state (``alert_groups``) and the Phoenix cursor are kept: they are state, not history.

Rows go in batches of at most ``BATCH_ROWS``, each its own transaction: between two batches the receivers'
writes go in, so a first prune of a year of rows never holds the writers for the whole delete (on SQLite one
writer at a time; on PostgreSQL the row locks of one huge transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ragtrace_collector._store.dialect import AnyConnection, dialect_of
from ragtrace_collector._store.schema import ALERT_ACKS, ALERT_SILENCES, ALERTS, RAG_RECORDS, SCORES, SPANS

__all__ = ["AGED", "BATCH_ROWS", "prune", "prune_batch"]

BATCH_ROWS: Final = 5_000
"""Rows a prune deletes in one transaction: a few milliseconds of the writer's time per batch."""

AGED: Final[tuple[tuple[str, str], ...]] = (
    (SPANS, "end_ns"),
    (RAG_RECORDS, "time_ns"),
    (SCORES, "time_ns"),
    (ALERTS, "time_ns"),
    (ALERT_SILENCES, "ends_ns"),
    (ALERT_ACKS, "time_ns"),
)
"""Each table that grows, and the column that dates its rows (a silence by its end, an ack by its time)."""

Transaction = Callable[[Callable[[AnyConnection], int]], int]
"""Runs its argument on a connection in one committed transaction (a store's ``change``)."""


def prune_batch(conn: AnyConnection, table: str, column: str, older_than_ns: int, limit: int) -> int:
    """Delete at most ``limit`` rows of ``table`` whose ``column`` is before ``older_than_ns``, inside the
    caller's transaction; the number deleted."""
    key = dialect_of(conn).row_key
    cursor = conn.execute(
        f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table} WHERE {column} < ? LIMIT ?)",
        (older_than_ns, limit),
    )
    return int(cursor.rowcount)


def prune(transaction: Transaction, older_than_ns: int, batch_rows: int = BATCH_ROWS) -> dict[str, int]:
    """Delete every row older than ``older_than_ns`` from every table that grows, ``batch_rows`` at a time, each
    batch in its own ``transaction``; the rows deleted by table. A prune stopped midway (a crash, a failed batch)
    leaves only whole batches deleted, and the next prune goes on from there."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    deleted: dict[str, int] = {}
    for table, column in AGED:

        def batch(conn: AnyConnection, table: str = table, column: str = column) -> int:
            return prune_batch(conn, table, column, older_than_ns, batch_rows)

        deleted[table] = 0
        while True:
            n = transaction(batch)
            deleted[table] += n
            if n < batch_rows:
                break
    return deleted
