"""``DurableCursor``: how far the Phoenix annotator has delivered, kept in the store so a restart resumes.

One row per annotation URL in the store's table ``phoenix_cursor`` (``_store.phoenix.CursorTable``: every score
up to its ``after_xact``/``after_row`` was delivered to that URL or given up).

Writes run on a worker thread (``asyncio.to_thread``) with a connection of their own, in the background: the
annotator never waits for one while it delivers. At most one runs at a time; a newer value asked for meanwhile
is written by the next ``save_soon``. A write that fails (the file locked past ``timeout``, a full disk) is
logged at most once a minute and tried again on the next ``save_soon``: the stored cursor stays behind, which
only means annotations sent again after a restart, which Phoenix's upsert absorbs.
"""

from __future__ import annotations

import asyncio
import logging
import time

from ragtrace_collector._store.arrival import Arrival
from ragtrace_collector._store.connection import Target
from ragtrace_collector._store.phoenix import CursorTable

__all__ = ["DurableCursor"]

_log = logging.getLogger("ragtrace_collector")

_WARN_EVERY_SECONDS = 60.0


class DurableCursor:
    """The delivered-up-to cursor of the annotations posted to ``url``, stored in the store ``target`` names.

    ``load`` on the loop at start (a read, as ``ScoreTail.end``), then ``save_soon`` as often as the annotator
    likes (it writes only a changed value, never two at once), and ``close`` once at the end. ``timeout`` is
    the store's busy timeout: how long a write waits for the store's writers before it fails.
    """

    def __init__(self, target: Target, url: str, *, timeout: float) -> None:
        self.url = url
        # The store made the file: never an empty one here. A cursor lost to a power cut only sends some
        # annotations again.
        self._table = CursorTable(target, url, timeout=timeout)
        self._closed = False
        self._saving: asyncio.Task[None] | None = None
        self._warned_at: float | None = None
        self.saved: Arrival | None = None
        """The value the table holds for ``url`` as far as this object knows: loaded, or last written."""

    def load(self) -> Arrival | None:
        """The stored cursor of ``url``, None when there is none (no annotator has delivered there from this
        file yet). A cursor below the ``scores`` table's first row (retention deleted older ones) is fine."""
        self.saved = self._table.load()
        if self.saved is not None:
            _log.info("Phoenix annotator resumes after score row %s (%s)", self.saved.text(), self.url)
        return self.saved

    def save_soon(self, after: Arrival) -> None:
        """Write ``after`` in the background unless it is the stored value or a write is running (on the
        loop). The caller asks again later: the next call writes the value of then."""
        if after == self.saved or (self._saving is not None and not self._saving.done()):
            return
        self._saving = asyncio.get_running_loop().create_task(self._save(after), name="ragtrace-phoenix-cursor")

    async def close(self, after: Arrival | None) -> None:
        """Wait for the write running, write ``after`` if it is not stored yet (None: write nothing), and close
        (idempotent).

        Takes at most twice ``timeout`` (a write running, then this one) when the file is locked.
        """
        if self._saving is not None:
            await asyncio.shield(self._saving)  # a cancelled stop leaves the write to finish on its own
        if after is not None and after != self.saved and not self._closed:
            await self._save(after)
        await asyncio.to_thread(self._close)

    async def _save(self, after: Arrival) -> None:
        try:
            await asyncio.to_thread(self._write, after)
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
        self.saved = after

    def _write(self, after: Arrival) -> None:
        self._table.write(after)

    def _close(self) -> None:
        self._closed = True
        self._table.close()
