"""The SQLite store: one file, WAL, the tables of docs/collector.md, upserts keyed on the primary key.

``Store.write(batch)`` writes one request's rows in one transaction and returns only after the commit, so
a receiver that acknowledges after ``write`` returns never acknowledges what a crash could lose (``kill -9``
keeps every committed transaction: WAL with ``synchronous=NORMAL`` loses at most the last transactions on a
power cut, never on a process crash). Every write is an upsert keyed on the primary key: a retried export
never duplicates a row.

The schema is created with sqlite-utils so the file opens as it is in Datasette; the hot path is one
``executemany`` per table. Writes are serialised by a lock; readers in other threads should open their own
connection (``Store.reader()``).
"""

from __future__ import annotations

import contextlib
import logging
import operator
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from ragtrace_collector._otlp import Batch, Row

_log = logging.getLogger("ragtrace_collector")

SPANS = "spans"
RAG_RECORDS = "rag_records"
SCORES = "scores"
ALERTS = "alerts"

_SPAN_COLUMNS: dict[str, type] = {
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
_RAG_COLUMNS: dict[str, type] = {
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
_SCORE_COLUMNS: dict[str, type] = {
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

# rag_records columns that server-side scoring fills: a retried export of the unscored span must not erase them.
_KEEP_WHEN_NULL = ("decision", "judge", "calls", "prompt_tokens", "completion_tokens", "seconds")


def _upsert_sql(table: str, columns: Sequence[str], pk: Sequence[str], keep_when_null: Sequence[str] = ()) -> str:
    names = ", ".join(columns)
    # Positional parameters: binding tuples is markedly cheaper than binding dicts by name.
    marks = ", ".join("?" for _ in columns)
    updates = ", ".join(
        f"{c} = COALESCE(excluded.{c}, {table}.{c})" if c in keep_when_null else f"{c} = excluded.{c}"
        for c in columns
        if c not in pk
    )
    return f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT ({', '.join(pk)}) DO UPDATE SET {updates}"


_span_values = operator.itemgetter(*_SPAN_COLUMNS)
_rag_values = operator.itemgetter(*_RAG_COLUMNS)
_score_values = operator.itemgetter(*_SCORE_COLUMNS)
_SPANS_SQL = _upsert_sql(SPANS, list(_SPAN_COLUMNS), ["span_id"])
_RAG_SQL = _upsert_sql(RAG_RECORDS, list(_RAG_COLUMNS), ["span_id"], _KEEP_WHEN_NULL)
_SCORES_SQL = _upsert_sql(SCORES, list(_SCORE_COLUMNS), ["span_id", "metric"])
# A carrier's late scores arrive without the RAG route; take it (and the service) from the target's record.
_FILL_ROUTE_SQL = (
    f"UPDATE {SCORES} SET "
    f"route = (SELECT r.route FROM {RAG_RECORDS} r WHERE r.span_id = {SCORES}.span_id), "
    f"service = COALESCE(service, (SELECT r.service FROM {RAG_RECORDS} r WHERE r.span_id = {SCORES}.span_id)) "
    f"WHERE span_id = ? AND route IS NULL"
)


_CHECKPOINT_EVERY_SECONDS = 0.5
_BACKSTOP_CHECKPOINT_PAGES = 20_000


_SHARED_LOCK_TIMEOUT_SECONDS = 5.0


class _SharedLock:
    """A cross-process lock used as a fast path; after one timeout (a holder died) it is no longer used."""

    def __init__(self, lock: Any) -> None:
        self._lock = lock
        self._held = False
        self._broken = False

    def __enter__(self) -> None:
        if self._broken:
            return
        self._held = bool(self._lock.acquire(timeout=_SHARED_LOCK_TIMEOUT_SECONDS))
        if not self._held:
            self._broken = True
            _log.warning("the shared write lock was not released (a process died?): relying on SQLite's locking")

    def __exit__(self, *exc: object) -> None:
        if self._held:
            self._held = False
            self._lock.release()


class StoreError(RuntimeError):
    """A write could not be committed (disk full, database locked, ...): the request must not be acknowledged."""


class Store:
    """The collector's SQLite file. ``Store(path)`` creates the schema when missing and enables WAL."""

    def __init__(self, path: str | Path, *, write_lock: Any = None, checkpoints: bool = True) -> None:
        """``write_lock``: a lock shared with other processes writing the same file (the decode processes).

        SQLite alone keeps concurrent writers correct, but a writer that finds the file locked sleeps in
        growing steps; waiting on a shared lock instead wakes the next writer at once. A lock that a dead
        process left held is given up after a few seconds and SQLite's own locking carries on alone.
        ``checkpoints``: run the checkpoint thread here (one process per file is enough; with a shared lock
        it checkpoints every half second whether or not this process wrote).
        """
        self.path = Path(path)
        self.write_lock = write_lock
        self._shared = _SharedLock(write_lock) if write_lock is not None else contextlib.nullcontext()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: the writer thread and the event loop share it, serialised by _lock.
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
        self.db = sqlite_utils.Database(self._conn)
        self._lock = threading.Lock()
        self.db.enable_wal()
        self._conn.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints run on a thread of their own (below), not inside the commit that crosses the threshold;
        # the automatic one stays as a backstop should that thread fall behind.
        self._conn.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_CHECKPOINT_PAGES}")
        self._create_schema()
        self._dirty = threading.Event()
        self._closing = False
        self._checkpointer: threading.Thread | None = None
        if checkpoints:
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="ragtrace-checkpoint", daemon=True)
            self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        conn = sqlite3.connect(str(self.path), timeout=30.0)
        others_write = self.write_lock is not None
        try:
            while not self._closing:
                if not self._dirty.wait(_CHECKPOINT_EVERY_SECONDS) and not others_write:
                    continue
                self._dirty.clear()
                # Busy or closing: the next round (or the backstop) checkpoints.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def _create_schema(self) -> None:
        with self._lock:
            self.db[SPANS].create(_SPAN_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
            self.db[RAG_RECORDS].create(_RAG_COLUMNS, pk="span_id", if_not_exists=True)  # type: ignore[union-attr]
            self.db[SCORES].create(  # type: ignore[union-attr]
                _SCORE_COLUMNS, pk=("span_id", "metric"), if_not_exists=True
            )
            self.db[ALERTS].create(_ALERT_COLUMNS, pk="id", if_not_exists=True)  # type: ignore[union-attr]
            for table, columns in _INDEXES:
                self.db[table].create_index(columns, if_not_exists=True)  # type: ignore[union-attr]

    def write(self, batch: Batch) -> None:
        """Upsert the batch's rows in one transaction; return only after the commit.

        Raises ``StoreError`` when the transaction could not be committed (nothing of it is kept).
        """
        if not (batch.spans or batch.rag_records or batch.scores):
            return
        try:
            with self._lock, self._shared, self._conn:
                if batch.spans:
                    self._conn.executemany(_SPANS_SQL, map(_span_values, batch.spans))
                if batch.rag_records:
                    self._conn.executemany(_RAG_SQL, map(_rag_values, batch.rag_records))
                if batch.scores:
                    self._conn.executemany(_SCORES_SQL, map(_score_values, batch.scores))
                    orphans = {(row["span_id"],) for row in batch.scores if row["route"] is None}
                    if orphans:
                        self._conn.executemany(_FILL_ROUTE_SQL, sorted(orphans))
                if batch.rag_records:
                    # A record that arrives after its carrier: give the carrier's scores their route.
                    self._fill_routes_for(batch.rag_records)
            self._dirty.set()
        except (sqlite3.Error, OverflowError, ValueError, TypeError) as exc:
            # Rolled back as a whole; the receivers answer "retry later" and acknowledge nothing.
            raise StoreError(f"could not commit {len(batch.spans)} span(s): {exc}") from exc

    def _fill_routes_for(self, records: Sequence[Row]) -> None:
        pending = self._span_ids_where(SCORES, "route IS NULL", [row["span_id"] for row in records])
        if pending:
            self._conn.executemany(_FILL_ROUTE_SQL, [(span_id,) for span_id in sorted(pending)])

    def prune(self, older_than_ns: int) -> dict[str, int]:
        """Delete every row older than ``older_than_ns`` (span end, record/score/alert time); return counts."""
        deleted: dict[str, int] = {}
        with self._lock, self._shared, self._conn:
            for table, column in (
                (SPANS, "end_ns"),
                (RAG_RECORDS, "time_ns"),
                (SCORES, "time_ns"),
                (ALERTS, "time_ns"),
            ):
                cursor = self._conn.execute(f"DELETE FROM {table} WHERE {column} < ?", (older_than_ns,))
                deleted[table] = cursor.rowcount
        return deleted

    def reader(self) -> sqlite_utils.Database:
        """A new connection for reading from another thread (WAL lets it read while the writer writes)."""
        return sqlite_utils.Database(sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0))

    def decided(self, span_ids: Sequence[str]) -> set[str]:
        """The span ids among ``span_ids`` whose stored RAG record already has a decision."""
        with self._lock:
            return self._span_ids_where(RAG_RECORDS, "decision IS NOT NULL", span_ids)

    def _span_ids_where(self, table: str, condition: str, span_ids: Sequence[str]) -> set[str]:
        """The span ids among ``span_ids`` of ``table``'s rows that meet ``condition``; call under ``_lock``."""
        found: set[str] = set()
        # A few hundred ids a query: well under SQLite's limit on bound parameters.
        for start in range(0, len(span_ids), 500):
            part = list(span_ids[start : start + 500])
            marks = ", ".join("?" for _ in part)
            cursor = self._conn.execute(
                f"SELECT DISTINCT span_id FROM {table} WHERE {condition} AND span_id IN ({marks})", part
            )
            found.update(row[0] for row in cursor)
        return found

    def rag_record(self, span_id: str) -> dict[str, Any] | None:
        """The stored RAG record of a span, or None."""
        with self._lock:
            cursor = self._conn.execute(f"SELECT * FROM {RAG_RECORDS} WHERE span_id = ?", (span_id,))
            row = cursor.fetchone()
            if row is None:
                return None
            return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def close(self) -> None:
        """Stop the checkpoint thread and close the connection (idempotent)."""
        self._closing = True
        self._dirty.set()
        if self._checkpointer is not None and self._checkpointer.is_alive():
            self._checkpointer.join(30.0)
        with self._lock:
            self._conn.close()
