"""Retention: every row older than a cut, deleted from every table that grows (``serve --retention-days``).

Each group's current state (``alert_groups``) and the Phoenix cursor are kept: they are state, not history. The
rollups (``rollups.py``) follow the deletes by their triggers; the hours a round empties go in that round, and
on SQLite the blocks of arrival it leaves without a record (``schema.RECORD_BLOCKS``).

Rows go in rounds of at most ``BATCH_ROWS`` a table, each round its own transaction: between two rounds the
receivers' writes go in, so a first prune of a year of rows never holds the writers for the whole delete (on SQLite one
writer at a time; on PostgreSQL the row locks of one huge transaction).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ragtrace_collector._store import rollups
from ragtrace_collector._store.dialect import SQLITE, AnyConnection, dialect_of
from ragtrace_collector._store.schema import (
    ALERT_ACKS,
    ALERT_SILENCES,
    ALERTS,
    RAG_RECORDS,
    RECORD_BLOCKS,
    RECORD_METADATA,
    SCORES,
    SPANS,
)

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
    (RECORD_METADATA, "time_ns"),
)
"""Each table that grows, and the column that dates its rows (a silence by its end, an ack by its time)."""

Transaction = Callable[[Callable[[AnyConnection], dict[str, int]]], dict[str, int]]
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
    """Delete every row older than ``older_than_ns`` from every table that grows, in rounds: each round one
    ``transaction`` deleting at most ``batch_rows`` rows of each table, until no table had a full batch left. A
    prune of less than a batch a table is one transaction, as a single statement per table would be; a prune
    stopped midway (a crash, a failed round) leaves only whole rounds deleted, and the next one goes on from there.
    Returns the rows deleted by table."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, not {batch_rows}")
    deleted = dict.fromkeys((table for table, _ in AGED), 0)
    left = list(AGED)
    while left:

        def round_(conn: AnyConnection, tables: tuple[tuple[str, str], ...] = tuple(left)) -> dict[str, int]:
            # Pure in what it leaves behind: a transaction run again (a retried deadlock) counts once.
            done = {table: prune_batch(conn, table, column, older_than_ns, batch_rows) for table, column in tables}
            if any(done.values()):
                rollups.prune_empty(conn)  # the rollups' hours the deletes emptied (their triggers took them to 0)
            if done.get(RAG_RECORDS) and dialect_of(conn) is SQLITE:
                conn.execute(RECORD_BLOCKS.prune())
            return done

        done = transaction(round_)
        for table, n in done.items():
            deleted[table] += n
        left = [(table, column) for table, column in left if done[table] == batch_rows]
    return deleted
