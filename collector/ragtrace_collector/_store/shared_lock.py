"""A write lock shared with other processes writing the same file (the decode processes), as a fast path.

SQLite alone keeps concurrent writers correct, but a writer that finds the file locked sleeps in growing
steps; waiting on a shared lock instead wakes the next writer at once. A lock that a dead process left held
is given up after a few seconds, for good, and SQLite's own locking carries on alone.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["SharedLock"]

_log = logging.getLogger("ragtrace_collector")

_SHARED_LOCK_TIMEOUT_SECONDS = 5.0


class SharedLock:
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
