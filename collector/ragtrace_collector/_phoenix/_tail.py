"""``ScoreTail``: the scores the store committed after a cursor, as Phoenix annotations, read off the ingest path.

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
"""

from __future__ import annotations

import math
import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from ragtrace_collector._phoenix._wire import Annotation
from ragtrace_collector._store._schema import RAG_RECORDS, SCORES

__all__ = ["ScoreTail"]

_AFTER_SQL = (
    f"SELECT s.rowid, s.span_id, s.metric, s.value, s.label, s.explanation, s.source, r.judge "
    f"FROM {SCORES} s LEFT JOIN {RAG_RECORDS} r ON r.span_id = s.span_id "
    f"WHERE s.rowid > ? AND s.rowid <= ? ORDER BY s.rowid LIMIT ?"
)
_END_SQL = f"SELECT max(rowid) FROM {SCORES}"


class ScoreTail:
    """Reads the store at ``path`` (which must exist: the collector's ``Store`` created it)."""

    def __init__(self, path: Path) -> None:
        uri = f"file:{quote(str(path))}?mode=ro"  # read-only: the annotator never writes the store
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30.0)
        self._lock = threading.Lock()
        self._closed = False

    def end(self) -> int:
        """The cursor past every score stored so far (0 for an empty table)."""
        with self._lock:
            (last,) = self._conn.execute(_END_SQL).fetchone()
        return int(last or 0)

    def read(self, after: int, limit: int) -> tuple[list[Annotation], int, bool]:
        """Up to ``limit`` scores stored after cursor ``after``: (their annotations, the new cursor, whether
        that was all for now). When ``after`` is past the newest row the read starts over from the first row.

        Rows without a finite value (a metric that failed or did not apply) move the cursor but give no
        annotation: there is no score to show.
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
        annotations = [
            Annotation(
                span_id=str(span_id).lower(),
                name=str(metric),
                score=float(value),
                row=int(rowid),
                label=label,
                explanation=explanation,
                judge=judge,
                source=source,
            )
            for rowid, span_id, metric, value, label, explanation, source, judge in rows
            if isinstance(value, int | float) and math.isfinite(value)
        ]
        cursor = int(rows[-1][0]) if rows else after
        return annotations, cursor, len(rows) < limit

    def close(self) -> None:
        """Close the connection once no read runs (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
