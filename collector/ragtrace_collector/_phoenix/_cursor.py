"""``DurableCursor``: how far the Phoenix annotator has delivered, kept in the store's file so a restart resumes.

One row per annotation URL in the table ``phoenix_cursor``: ``url`` (the annotation endpoint, the key),
``after_row`` (every score up to this ``scores`` rowid was delivered to that URL or given up) and
``updated_ns`` (when it was last written). The table lives in the store's file, so a backup or a copy of the
file carries the cursor with the scores it refers to; the annotator creates it on its first write (the store's
own schema does not know it, and a file an older collector wrote gets it the same way).

Writes run on a worker thread (``asyncio.to_thread``) with a connection of their own, in the background: the
annotator never waits for one while it delivers. At most one runs at a time; a newer value asked for meanwhile
is written by the next ``save_soon``. A write that fails (the file locked past ``timeout``, a full disk) is
logged at most once a minute and tried again on the next ``save_soon``: the stored cursor stays behind, which
only means annotations sent again after a restart, which Phoenix's upsert absorbs.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Final
from urllib.parse import quote

__all__ = ["PHOENIX_CURSOR", "DurableCursor"]

_log = logging.getLogger("ragtrace_collector")

PHOENIX_CURSOR: Final = "phoenix_cursor"

_WARN_EVERY_SECONDS = 60.0

_CREATE_SQL = (
    f"CREATE TABLE IF NOT EXISTS [{PHOENIX_CURSOR}] "
    "([url] TEXT PRIMARY KEY, [after_row] INTEGER NOT NULL, [updated_ns] INTEGER NOT NULL)"
)
_UPSERT_SQL = (
    f"INSERT INTO [{PHOENIX_CURSOR}] ([url], [after_row], [updated_ns]) VALUES (?, ?, ?) "
    "ON CONFLICT ([url]) DO UPDATE SET [after_row] = excluded.[after_row], [updated_ns] = excluded.[updated_ns]"
)
_EXISTS_SQL = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
_LOAD_SQL = f"SELECT [after_row] FROM [{PHOENIX_CURSOR}] WHERE [url] = ?"


class DurableCursor:
    """The delivered-up-to cursor of the annotations posted to ``url``, stored in the SQLite file at ``path``.

    ``load`` on the loop at start (a read, as ``ScoreTail.end``), then ``save_soon`` as often as the annotator
    likes (it writes only a changed value, never two at once), and ``close`` once at the end. ``timeout`` is
    SQLite's busy timeout: how long a write waits for the store's writers before it fails.
    """

    def __init__(self, path: Path, url: str, *, timeout: float) -> None:
        self.url = url
        uri = f"file:{quote(str(path))}?mode=rw"  # the store created the file: never make an empty one here
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=timeout)
        # As the store's own writes: durable at the next checkpoint. A cursor lost to a power cut only sends
        # some annotations again.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.Lock()  # ``close`` waits for a write still running on a worker thread
        self._closed = False
        self._created = False
        self._saving: asyncio.Task[None] | None = None
        self._warned_at: float | None = None
        self.saved: int | None = None
        """The value the table holds for ``url`` as far as this object knows: loaded, or last written."""

    def load(self) -> int | None:
        """The stored cursor of ``url``, None when there is none (no annotator has delivered there from this
        file yet). A cursor below the ``scores`` table's first row (retention deleted older ones) is fine."""
        with self._lock:
            if self._conn.execute(_EXISTS_SQL, (PHOENIX_CURSOR,)).fetchone() is None:
                return None  # a read only: the table is created by the first write, off the loop
            found = self._conn.execute(_LOAD_SQL, (self.url,)).fetchone()
        self.saved = None if found is None else int(found[0])
        if self.saved is not None:
            _log.info("Phoenix annotator resumes after score row %d (%s)", self.saved, self.url)
        return self.saved

    def save_soon(self, after_row: int) -> None:
        """Write ``after_row`` in the background unless it is the stored value or a write is running (on the
        loop). The caller asks again later: the next call writes the value of then."""
        if after_row == self.saved or (self._saving is not None and not self._saving.done()):
            return
        self._saving = asyncio.get_running_loop().create_task(self._save(after_row), name="ragtrace-phoenix-cursor")

    async def close(self, after_row: int) -> None:
        """Wait for the write running, write ``after_row`` if it is not stored yet, and close (idempotent).

        Takes at most twice ``timeout`` (a write running, then this one) when the file is locked.
        """
        if self._saving is not None:
            await asyncio.shield(self._saving)  # a cancelled stop leaves the write to finish on its own
        if after_row != self.saved and not self._closed:
            await self._save(after_row)
        await asyncio.to_thread(self._close)

    async def _save(self, after_row: int) -> None:
        try:
            await asyncio.to_thread(self._write, after_row)
        except Exception as exc:
            # A locked or full file: the next save_soon tries again; meanwhile a restart would only send again
            # what was delivered since the stored value.
            now = time.monotonic()
            if self._warned_at is None or now - self._warned_at >= _WARN_EVERY_SECONDS:
                self._warned_at = now
                _log.warning(
                    "Phoenix annotator could not record how far it delivered (%s: %s); trying again, at most one "
                    "such warning a minute",
                    type(exc).__name__,
                    exc,
                )
            return
        self.saved = after_row

    def _write(self, after_row: int) -> None:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("the cursor's connection is closed")
            if not self._created:  # the table, before this connection's first write; then only the row
                self._conn.execute(_CREATE_SQL)
                self._created = True
            with self._conn:
                self._conn.execute(_UPSERT_SQL, (self.url, after_row, time.time_ns()))

    def _close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
