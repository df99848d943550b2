"""Claims: work that several replicas could each take (scoring an undecided RAG record, joining a settled
trace) is taken by one, for a lease.

A claim is two columns of the row (``claimed_by``, ``claimed_until``). Taking rows is one statement that sets
them where the row is free (never claimed, or its lease ran out), then the rows it took. On PostgreSQL the free
rows are chosen ``FOR UPDATE SKIP LOCKED`` and returned by the statement, so two replicas asking at once take
different rows and neither waits for the other; on SQLite the write lock makes the one statement atomic among
connections, and a read by the claim's owner and end finds what it took (no ``RETURNING`` before SQLite 3.35).
A replica that dies leaves its claims to run out: another takes the rows when their lease has passed. The work's
own result ends the claim (a decision written, the trace's waiting row deleted), so a finished row is never
taken again.

The lease must outlast the work: a record is scored within the judge's timeout, a trace joined in well under a
second; ``LEASE_SECONDS`` leaves room for both.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any, Final

from ragtrace_collector._store.dialect import SQLITE, AnyConnection, dialect_of
from ragtrace_collector._store.schema import JOIN_PENDING, RAG_COLUMNS, RAG_RECORDS, SPANS

__all__ = [
    "LEASE_SECONDS",
    "claim_due_traces",
    "claim_orphans",
    "claim_records",
    "release_trace",
    "renew_record",
    "replica_name",
]

LEASE_SECONDS: Final = 600.0
"""How long a claim holds: past it, another replica takes the row (the claimer is taken to be dead)."""

_NS: Final = 1_000_000_000


def replica_name() -> str:
    """A name for this process's claims: its host, its pid and a random part (a pid is reused after a restart)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


_FREE = "(claimed_until IS NULL OR claimed_until < ?)"
_SQLITE_RETURNING: Final = sqlite3.sqlite_version_info >= (3, 35)


def _take(
    conn: AnyConnection, table: str, key: str, where: str, args: Sequence[Any], owner: str, until: int, limit: int
) -> list[Any]:
    """Claim up to ``limit`` rows of ``table`` that meet ``where`` (and are free) for ``owner`` until ``until``;
    the keys taken. Runs in the caller's transaction."""
    if dialect_of(conn) is SQLITE and not _SQLITE_RETURNING:
        # One statement takes them (SQLite's write lock makes it atomic among connections), then a read of what
        # it took, by this claim's owner and end: SQLite before 3.35 has no RETURNING (that read scans the table).
        conn.execute(
            f"UPDATE {table} SET claimed_by = ?, claimed_until = ? WHERE {key} IN "
            f"(SELECT {key} FROM {table} WHERE {where} LIMIT ?)",
            (owner, until, *args, limit),
        )
        taken = conn.execute(
            f"SELECT {key} FROM {table} WHERE claimed_by = ? AND claimed_until = ?", (owner, until)
        ).fetchall()
        return [row[0] for row in taken]
    # PostgreSQL chooses the free rows FOR UPDATE SKIP LOCKED; SQLite's one statement is atomic under its lock.
    lock = "" if dialect_of(conn) is SQLITE else " FOR UPDATE SKIP LOCKED"
    rows = conn.execute(
        f"UPDATE {table} SET claimed_by = ?, claimed_until = ? WHERE {key} IN "
        f"(SELECT {key} FROM {table} WHERE {where} LIMIT ?{lock}) RETURNING {key}",
        (owner, until, *args, limit),
    ).fetchall()
    return [row[0] for row in rows]


def claim_records(
    conn: AnyConnection, span_ids: Sequence[str], owner: str, now_ns: int, lease_seconds: float = LEASE_SECONDS
) -> set[str]:
    """Of ``span_ids``, the RAG records this replica now holds to score: undecided, and free (run it in
    ``Storage.change``)."""
    taken: set[str] = set()
    until = now_ns + int(lease_seconds * _NS)
    for start in range(0, len(span_ids), 500):
        part = list(span_ids[start : start + 500])
        marks = ", ".join("?" for _ in part)
        where = f"span_id IN ({marks}) AND decision IS NULL AND {_FREE}"
        taken.update(_take(conn, RAG_RECORDS, "span_id", where, (*part, now_ns), owner, until, len(part)))
    return taken


def claim_orphans(
    conn: AnyConnection,
    owner: str,
    now_ns: int,
    *,
    unclaimed_before_ns: int,
    unclaimed_after_ns: int,
    limit: int,
    lease_seconds: float = LEASE_SECONDS,
) -> list[dict[str, Any]]:
    """Up to ``limit`` undecided RAG records nobody is scoring, claimed for this replica, with their columns: those
    whose claim ran out (the claimer died), and those never claimed whose span arrived between
    ``unclaimed_after_ns`` and ``unclaimed_before_ns`` (the replica that stored them died before it claimed them).
    The lower bound keeps a store once served without scoring from being scored wholesale when scoring starts."""
    until = now_ns + int(lease_seconds * _NS)
    where = (
        "decision IS NULL AND (claimed_until < ? OR (claimed_until IS NULL AND span_id IN "
        f"(SELECT s.span_id FROM {SPANS} s WHERE s.span_id = {RAG_RECORDS}.span_id "
        "AND s.received_ns >= ? AND s.received_ns < ?)))"
    )
    args = (now_ns, unclaimed_after_ns, unclaimed_before_ns)
    keys = _take(conn, RAG_RECORDS, "span_id", where, args, owner, until, limit)
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    rows = conn.execute(f"SELECT {', '.join(RAG_COLUMNS)} FROM {RAG_RECORDS} WHERE span_id IN ({marks})", keys)
    return [dict(zip(RAG_COLUMNS, row, strict=True)) for row in rows.fetchall()]


def claim_due_traces(
    conn: AnyConnection,
    quiet_since_ns: int,
    born_before_ns: int,
    limit: int,
    owner: str,
    now_ns: int,
    lease_seconds: float = LEASE_SECONDS,
) -> list[tuple[str, int]]:
    """``(trace_id, first_ns)`` of up to ``limit`` waiting traces quiet since ``quiet_since_ns`` or older than
    ``born_before_ns``, claimed for this replica to join (run it in ``Storage.change``)."""
    until = now_ns + int(lease_seconds * _NS)
    where = f"(last_ns <= ? OR first_ns <= ?) AND {_FREE}"
    keys = _take(conn, JOIN_PENDING, "trace_id", where, (quiet_since_ns, born_before_ns, now_ns), owner, until, limit)
    if not keys:
        return []
    marks = ", ".join("?" for _ in keys)
    rows = conn.execute(f"SELECT trace_id, first_ns FROM {JOIN_PENDING} WHERE trace_id IN ({marks})", keys)
    return sorted(((str(t), int(f)) for t, f in rows.fetchall()), key=lambda found: found[1])


def renew_record(
    conn: AnyConnection, span_id: str, owner: str, now_ns: int, lease_seconds: float = LEASE_SECONDS
) -> bool:
    """Extend this replica's claim on a record it is about to score; False when the claim is no longer its own
    (its lease ran out while the record waited, and another replica took it, or it was decided)."""
    until = now_ns + int(lease_seconds * _NS)
    cursor = conn.execute(
        f"UPDATE {RAG_RECORDS} SET claimed_until = ? WHERE span_id = ? AND claimed_by = ? AND decision IS NULL",
        (until, span_id, owner),
    )
    return int(cursor.rowcount) == 1


def release_trace(conn: AnyConnection, trace_id: str, last_ns: int) -> None:
    """Give a claimed trace back, to be looked at again a settle window after ``last_ns`` (it was not settled)."""
    conn.execute(
        f"UPDATE {JOIN_PENDING} SET claimed_by = NULL, claimed_until = NULL, "
        "last_ns = CASE WHEN last_ns > ? THEN last_ns ELSE ? END WHERE trace_id = ?",
        (last_ns, last_ns, trace_id),
    )
