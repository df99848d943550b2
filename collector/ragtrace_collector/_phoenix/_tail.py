"""``ScoreTail``: the scores the store committed after a cursor, as Phoenix annotations, read off the ingest path.

The cursor is the ``scores`` table's rowid. SQLite has one writer at a time and gives a new row the largest rowid
plus one, so rows become visible in rowid order: a reader that has seen rowid n has seen every committed row
below it (a rowid is reused only when the newest row is deleted, and retention deletes the oldest). That holds
for every writer of the file (the decode processes, server-side scoring, the joiner), which is why the annotator
reads the store rather than hooking one of them. A score rewritten in place (the same span and metric stored
again: an exporter's retry, a log-borne score taken over by its span) keeps its rowid and is not read again;
its value is the one already sent.

Reads use a connection of their own (WAL: they never wait for, nor hold up, a write); call them from one thread
at a time, off the event loop.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

from ragtrace_collector._phoenix._wire import Annotation
from ragtrace_collector._store._schema import RAG_RECORDS, SCORES

__all__ = ["ScoreTail"]

_AFTER_SQL = (
    f"SELECT s.rowid, s.span_id, s.metric, s.value, s.label, s.explanation, s.source, r.judge "
    f"FROM {SCORES} s LEFT JOIN {RAG_RECORDS} r ON r.span_id = s.span_id "
    f"WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?"
)
_END_SQL = f"SELECT max(rowid) FROM {SCORES}"


class ScoreTail:
    """Reads the store at ``path`` (which must exist: the collector's ``Store`` created it)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=30.0)

    def end(self) -> int:
        """The cursor past every score stored so far (0 for an empty table)."""
        (last,) = self._conn.execute(_END_SQL).fetchone()
        return int(last or 0)

    def read(self, after: int, limit: int) -> tuple[list[Annotation], int, bool]:
        """Up to ``limit`` scores stored after cursor ``after``: (their annotations, the new cursor, whether
        that was all for now).

        Rows without a finite value (a metric that failed or did not apply) move the cursor but give no
        annotation: there is no score to show.
        """
        rows = self._conn.execute(_AFTER_SQL, (after, limit)).fetchall()
        annotations = [
            Annotation(
                span_id=str(span_id).lower(),
                name=str(metric),
                score=float(value),
                label=label,
                explanation=explanation,
                judge=judge,
                source=source,
            )
            for _, span_id, metric, value, label, explanation, source, judge in rows
            if isinstance(value, int | float) and math.isfinite(value)
        ]
        cursor = int(rows[-1][0]) if rows else after
        return annotations, cursor, len(rows) < limit

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
