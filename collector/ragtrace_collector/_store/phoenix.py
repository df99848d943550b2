"""The Phoenix annotator's reads and writes: ``ScoreTail``, the scores the store committed after a cursor, read
off the ingest path; ``CursorTable``, how far the annotator delivered (table ``phoenix_cursor``). Either engine.

The cursor is a ``scores`` row's place in the order rows arrived (``arrival.Arrival``): the rowid on SQLite, the
writing transaction and the rowid on PostgreSQL, read so that no row committed late is passed over. That holds
for every writer of the store (the decode processes, server-side scoring, the joiner, every replica), which is
why the annotator reads the store rather than hooking one of them. A score rewritten in place (the same span and
metric stored again: an exporter's retry, a log-borne score taken over by its span) keeps its place and is not
read again; its value is the one already sent.

A cursor past the table's newest row (SQLite: retention or a hand deleted the newest rows, or every row, so
rowids start again below it; either engine: the store was replaced by a copy) starts over from the first row:
the rows there are new, but for any older ones kept, which are sent again (Phoenix upserts). That costs a
re-send when retention deleted only the newest rows (late scores with old times), and spans Phoenix no longer
holds then count as ``span_missing``: the price of never skipping a new row. A cursor below the first row
(retention deleted the oldest) just reads on. Left, on SQLite: retention deleting exactly the newest row, then
one new row taking its rowid before the next read; that row is not sent (the cursor holds a rowid, not which
row it was).

Reads use a connection of their own (read-only; on SQLite's WAL they never wait for, nor hold up, a write), off
the event loop; a lock keeps ``close`` from closing it under a read still running on a worker thread.

``CursorTable`` holds one row per annotation URL: ``url`` (the key), ``after_xact`` and ``after_row`` (every
score up to that place was delivered to that URL or given up) and ``updated_ns``. It lives in the store, so a
backup or a copy carries the cursor with the scores it refers to. Its connection is its own, read-write, with
``timeout`` as the busy timeout: how long a write waits for the store's writers before it fails.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from ragtrace_collector._store.arrival import START, Arrival, newest, order, position, within
from ragtrace_collector._store.connection import Target, connect, connect_readonly
from ragtrace_collector._store.dialect import dialect_of
from ragtrace_collector._store.schema import PHOENIX_CURSOR, RAG_RECORDS, SCORES

__all__ = ["CursorTable", "ScoreTail", "TailRow"]


@dataclass(frozen=True, slots=True)
class TailRow:
    """One stored score with a finite value: its place in ``scores`` (``Arrival``), span, metric, value, label,
    explanation, who scored it (``source``) and the judge of its record."""

    row: Arrival
    span_id: str
    metric: str
    value: float
    label: str | None
    explanation: str | None
    source: str | None
    judge: str | None


class ScoreTail:
    """Reads the store ``target`` names (which must exist: the collector's store created it)."""

    def __init__(self, target: Target) -> None:
        # read-only: the annotator never writes the scores
        self._conn = connect_readonly(target, check_same_thread=False)
        dialect = self._dialect = dialect_of(self._conn)
        self._columns = f"{position(dialect, 's')}, s.span_id, s.metric, s.value, s.label, s.explanation, s.source"
        self._order = order(dialect, "s")
        self._lock = threading.Lock()
        self._closed = False

    def end(self) -> Arrival:
        """The cursor past every score stored so far (``START`` for an empty table)."""
        with self._lock:
            return newest(self._conn, SCORES)

    def read(self, after: Arrival, limit: int) -> tuple[list[TailRow], Arrival, bool]:
        """Up to ``limit`` scores stored after cursor ``after``: (those with a value, the new cursor, whether
        that was all for now). When ``after`` is past the newest row the read starts over from the first row.

        Rows without a finite value (a metric that failed or did not apply) move the cursor but are not
        returned: there is no score to show.
        """
        with self._lock:
            # The newest row first, then the rows up to it: a row committed between the two statements is left
            # for the next read, so ``after`` never jumps past a row nobody read.
            last = newest(self._conn, SCORES)
            if last < after:
                # Past the newest row: retention emptied the table or deleted its newest rows, and rowids start
                # again below the cursor (or the store was replaced). The rows there are new ones (or older ones
                # kept, sent again: Phoenix upserts), so the read starts over from the first row.
                after = START
            if last <= after:
                return [], after, True
            span, args = within(self._dialect, "s", after, last)
            rows = self._conn.execute(
                f"SELECT {self._columns}, r.judge FROM {SCORES} s LEFT JOIN {RAG_RECORDS} r ON r.span_id = s.span_id "
                f"WHERE {span} ORDER BY {self._order} LIMIT ?",
                [*args, limit],
            ).fetchall()
        found = [
            TailRow(Arrival(int(xact), int(rowid)), str(span_id), str(metric), float(value), *rest)
            for xact, rowid, span_id, metric, value, *rest in rows
            if isinstance(value, int | float) and math.isfinite(value)
        ]
        cursor = Arrival(int(rows[-1][0]), int(rows[-1][1])) if rows else after
        return found, cursor, len(rows) < limit

    def close(self) -> None:
        """Close the connection once no read runs (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


_CURSOR_UPSERT_SQL = (
    f"INSERT INTO {PHOENIX_CURSOR} (url, after_xact, after_row, updated_ns) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (url) DO UPDATE SET after_xact = excluded.after_xact, after_row = excluded.after_row, "
    "updated_ns = excluded.updated_ns"
)
_CURSOR_LOAD_SQL = f"SELECT after_xact, after_row FROM {PHOENIX_CURSOR} WHERE url = ?"


class CursorTable:
    """The stored cursor of one annotation URL in the store ``target`` names (which must exist: the collector's
    store made it). Methods run on any one thread at a time; ``close`` waits for a write still running."""

    def __init__(self, target: Target, url: str, *, timeout: float) -> None:
        self.url = url
        self._conn = connect(target, timeout=timeout, check_same_thread=False)
        self._lock = threading.Lock()
        self._closed = False

    def load(self) -> Arrival | None:
        """The stored cursor of the URL; None when none is stored."""
        with self._lock:
            found = self._conn.execute(_CURSOR_LOAD_SQL, (self.url,)).fetchone()
        return None if found is None else Arrival(int(found[0]), int(found[1]))

    def write(self, after: Arrival) -> None:
        """Store ``after`` for the URL (committed on return). ``RuntimeError`` once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the cursor's connection is closed")
            with self._conn:
                self._conn.execute(_CURSOR_UPSERT_SQL, (self.url, after.xact, after.row, time.time_ns()))

    def close(self) -> None:
        """Close the connection once no write runs (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
