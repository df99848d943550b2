"""``Store``: the collector's SQLite file, its connection, its locks and its checkpoint thread.

``write`` runs the upserts of ``ingest.py`` in one transaction under the write lock (and the lock shared
with other processes, when there is one) and returns only after the commit; ``StoreError`` when it could
not commit, nothing of it kept. The reads the collector makes itself (``rag_record``, the
joiner's) share the connection under the same lock (``read``, ``change``); other threads read with a
connection of their own (``reader()``, or ``connection.connect_readonly``). Opening a store migrates its file
to the current schema (``migrations.py``).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import ingest, retention
from ragtrace_collector._store.connection import BUSY_TIMEOUT_SECONDS, DatabaseError, connect_sqlite
from ragtrace_collector._store.shared_lock import SharedLock
from ragtrace_collector._store.storage import StoreError

__all__ = ["Store"]

T = TypeVar("T")

_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:/")
"""A scheme and a slash: a URL, or one whose ``//`` a ``Path`` folded (one-letter schemes are Windows drives)."""
_CHECKPOINT_EVERY_SECONDS = 0.5
_BACKSTOP_CHECKPOINT_PAGES = 20_000


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
        if _URL_LIKE.match(str(path)):
            # A URL made into a Path ("postgresql://h/db" reads "postgresql:/h/db") would otherwise become a
            # directory named after it and a SQLite file inside: the store the caller meant is never opened.
            raise ValueError(f"{str(path)!r} is a URL, not a SQLite file: open a PostgreSQL store by its URL string")
        self.path = Path(path)
        self.target = str(self.path)
        self.write_lock = write_lock
        self._shared = SharedLock(write_lock) if write_lock is not None else contextlib.nullcontext()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: the writer thread and the event loop share it, serialised by _lock.
        self._conn = connect_sqlite(self.path, create=True, check_same_thread=False)
        self.db = sqlite_utils.Database(self._conn)
        self._lock = threading.Lock()
        self.db.enable_wal()
        # Checkpoints run on a thread of their own (below), not inside the commit that crosses the threshold;
        # the automatic one stays as a backstop should that thread fall behind.
        self._conn.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_CHECKPOINT_PAGES}")
        self._dirty = threading.Event()
        self._closing = False
        self._checkpointer: threading.Thread | None = None
        if checkpoints:
            self._checkpointer = threading.Thread(target=self._checkpoint_loop, name="ragtrace-checkpoint", daemon=True)
            self._checkpointer.start()

    def _checkpoint_loop(self) -> None:
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_SECONDS)
        others_write = self.write_lock is not None
        try:
            while not self._closing:
                if not self._dirty.wait(_CHECKPOINT_EVERY_SECONDS) and not others_write:
                    continue
                self._dirty.clear()
                # Busy or closing: the next round (or the backstop) checkpoints.
                with contextlib.suppress(DatabaseError):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def write(self, batch: Batch) -> None:
        """Upsert the batch's rows in one transaction; return only after the commit.

        Raises ``StoreError`` when the transaction could not be committed (nothing of it is kept).
        """
        if not (batch.spans or batch.rag_records or batch.scores or batch.log_scores or batch.pending or batch.settled):
            return
        try:
            with self._lock, self._shared, self._conn:
                ingest.upsert(self._conn, batch)
            self._dirty.set()
        except (DatabaseError, OverflowError, ValueError, TypeError) as exc:
            # Rolled back as a whole; the receivers answer "retry later" and acknowledge nothing.
            what = f"{len(batch.spans)} span(s)" if not batch.log_scores else f"{len(batch.log_scores)} evaluation(s)"
            raise StoreError(f"could not commit {what}: {exc}") from exc

    def prune(self, older_than_ns: int, batch_rows: int = retention.BATCH_ROWS) -> dict[str, int]:
        """Delete every row older than ``older_than_ns`` (span end, record/score/alert time) in batches of
        ``batch_rows``, each its own transaction under the write locks; return counts by table."""
        return retention.prune(self.change, older_than_ns, batch_rows)

    def reader(self) -> sqlite_utils.Database:
        """A new connection for reading from another thread (WAL lets it read while the writer writes)."""
        return sqlite_utils.Database(
            sqlite3.connect(str(self.path), check_same_thread=False, timeout=BUSY_TIMEOUT_SECONDS)
        )

    def read(self, query: Callable[..., T], *args: Any) -> T:
        """``query(connection, *args)`` on the writer's connection, under its lock (the collector's own reads)."""
        with self._lock:
            return query(self._conn, *args)

    def change(self, change: Callable[..., T], *args: Any) -> T:
        """``change(connection, *args)`` in one transaction under the write locks (small bookkeeping writes)."""
        with self._lock, self._shared, self._conn:
            return change(self._conn, *args)

    def rag_record(self, span_id: str) -> dict[str, Any] | None:
        """The stored RAG record of a span, or None."""
        with self._lock:
            return ingest.rag_record(self._conn, span_id)

    def close(self) -> None:
        """Stop the checkpoint thread and close the connection (idempotent)."""
        self._closing = True
        self._dirty.set()
        if self._checkpointer is not None and self._checkpointer.is_alive():
            self._checkpointer.join(30.0)
        with self._lock:
            self._conn.close()
