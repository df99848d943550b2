"""The Phoenix annotator's reads and writes: ``ScoreTail``, the scores the store committed after a cursor, read
off the ingest path; ``CursorTable``, how far the annotator delivered (table ``phoenix_cursor``).

The cursor is the ``scores`` table's rowid. SQLite has one writer at a time and gives a new row the largest rowid
plus one, so rows become visible in rowid order: a reader that has seen rowid n has seen every committed row
below it (a rowid is reused only when the newest row is deleted, and retention deletes the oldest). That holds
for every writer of the file (the decode processes, server-side scoring, the joiner), which is why the annotator
reads the store rather than hooking one of them. A score rewritten in place (the same span and metric stored
again: an exporter's retry, a log-borne score taken over by its span) keeps its rowid and is not read again;
its value is the one already sent.

A cursor past the table's newest row (retention or a hand deleted the newest rows, or every row, so rowids
start again below it) starts over from the first row: the rows there are new, but for any older ones kept,
which are sent again (Phoenix upserts). That costs a re-send when retention deleted only the newest rows (late
scores with old times), and spans Phoenix no longer holds then count as ``span_missing``: the price of never
skipping a new row. A cursor below the first row (retention deleted the oldest) just reads on. Left: retention
deleting exactly the newest row, then one new row taking its rowid before the next read; that row is not sent
(the cursor holds a rowid, not which row it was).

Reads use a connection of their own (WAL: they never wait for, nor hold up, a write), off the event loop; a lock
keeps ``close`` from closing it under a read still running on a worker thread.

``CursorTable`` holds one row per annotation URL: ``url`` (the key), ``after_row`` (every score up to this
``scores`` rowid was delivered to that URL or given up) and ``updated_ns``. It lives in the store's file, so a
backup or a copy carries the cursor with the scores it refers to. Its connection is its own, read-write, with
``timeout`` as the busy timeout: how long a write waits for the store's writers before it fails.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ragtrace_collector._store.connection import connect, connect_readonly
from ragtrace_collector._store.schema import PHOENIX_CURSOR, RAG_RECORDS, SCORES

__all__ = ["CursorTable", "ScoreTail", "TailRow"]


@dataclass(frozen=True, slots=True)
class TailRow:
    """One stored score with a finite value: its ``scores`` rowid, span, metric, value, label, explanation,
    who scored it (``source``) and the judge of its record."""

    row: int
    span_id: str
    metric: str
    value: float
    label: str | None
    explanation: str | None
    source: str | None
    judge: str | None


_AFTER_SQL = (
    f"SELECT s.rowid, s.span_id, s.metric, s.value, s.label, s.explanation, s.source, r.judge "
    f"FROM {SCORES} s LEFT JOIN {RAG_RECORDS} r ON r.span_id = s.span_id "
    f"WHERE s.rowid > ? AND s.rowid <= ? ORDER BY s.rowid LIMIT ?"
)
_END_SQL = f"SELECT max(rowid) FROM {SCORES}"


class ScoreTail:
    """Reads the store at ``path`` (which must exist: the collector's ``Store`` created it)."""

    def __init__(self, path: Path) -> None:
        # read-only: the annotator never writes the scores
        self._conn = connect_readonly(path, check_same_thread=False)
        self._lock = threading.Lock()
        self._closed = False

    def end(self) -> int:
        """The cursor past every score stored so far (0 for an empty table)."""
        with self._lock:
            (last,) = self._conn.execute(_END_SQL).fetchone()
        return int(last or 0)

    def read(self, after: int, limit: int) -> tuple[list[TailRow], int, bool]:
        """Up to ``limit`` scores stored after cursor ``after``: (those with a value, the new cursor, whether
        that was all for now). When ``after`` is past the newest row the read starts over from the first row.

        Rows without a finite value (a metric that failed or did not apply) move the cursor but are not
        returned: there is no score to show.
        """
        with self._lock:
            # The newest row first, then the rows up to it: a row committed between the two statements is left
            # for the next read, so ``after`` never jumps past a row nobody read.
            (last,) = self._conn.execute(_END_SQL).fetchone()
            last = int(last or 0)
            if last < after:
                # Past the newest row: retention emptied the table or deleted its newest rows, and rowids start
                # again below the cursor. The rows there are new ones (or older ones retention kept, sent again:
                # Phoenix upserts), so the read starts over from the first row.
                after = 0
            if last <= after:
                return [], after, True
            rows = self._conn.execute(_AFTER_SQL, (after, last, limit)).fetchall()
        found = [
            TailRow(int(rowid), str(span_id), str(metric), float(value), label, explanation, source, judge)
            for rowid, span_id, metric, value, label, explanation, source, judge in rows
            if isinstance(value, int | float) and math.isfinite(value)
        ]
        cursor = int(rows[-1][0]) if rows else after
        return found, cursor, len(rows) < limit

    def close(self) -> None:
        """Close the connection once no read runs (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


_CURSOR_UPSERT_SQL = (
    f"INSERT INTO [{PHOENIX_CURSOR}] ([url], [after_row], [updated_ns]) VALUES (?, ?, ?) "
    "ON CONFLICT ([url]) DO UPDATE SET [after_row] = excluded.[after_row], [updated_ns] = excluded.[updated_ns]"
)
_CURSOR_LOAD_SQL = f"SELECT [after_row] FROM [{PHOENIX_CURSOR}] WHERE [url] = ?"


class CursorTable:
    """The stored cursor of one annotation URL in the store at ``path`` (which must exist: the collector's
    ``Store`` made it). Methods run on any one thread at a time; ``close`` waits for a write still running."""

    def __init__(self, path: Path, url: str, *, timeout: float) -> None:
        self.url = url
        self._conn = connect(path, timeout=timeout, check_same_thread=False)
        self._lock = threading.Lock()
        self._closed = False

    def load(self) -> int | None:
        """The stored cursor of the URL; None when none is stored."""
        with self._lock:
            found = self._conn.execute(_CURSOR_LOAD_SQL, (self.url,)).fetchone()
        return None if found is None else int(found[0])

    def write(self, after_row: int) -> None:
        """Store ``after_row`` for the URL (committed on return). ``RuntimeError`` once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the cursor's connection is closed")
            with self._conn:
                self._conn.execute(_CURSOR_UPSERT_SQL, (self.url, after_row, time.time_ns()))

    def close(self) -> None:
        """Close the connection once no write runs (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
