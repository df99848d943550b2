"""The C allocator told to give memory back: large buffers mapped on their own, few arenas.

A request body and its copies are megabytes each and live for one request. glibc's defaults keep them: its
mmap threshold rises after each large free (so the next large buffers come from a heap that is rarely trimmed),
and every thread that allocates (the event loop, the decode threads, gRPC's) gets an arena of its own whose freed
memory no other thread reuses. Under a burst of large or hostile requests the resident size then grows well past
what is held at any moment (measured: 73 MiB against 44 MiB for the same attacks on an 8 MiB body limit).
``tune_allocator`` fixes the threshold at 128 KiB (a larger buffer is unmapped when freed) and caps the arenas at
two. Linux with glibc only; elsewhere, or when ``MALLOC_*`` environment variables already say, it does nothing.

What is freed in pieces (gRPC reads a message in slices, uvicorn a body in chunks) stays in the arenas all the
same. ``give_back`` asks a thread of its own to run ``malloc_trim(0)``, which returns every arena's free pages to
the system; the in-flight budget calls it when a large request lets go of its bytes. One trim at a time, at
most one a second: asks that come meanwhile are served by the next.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import time
from typing import Any

__all__ = ["give_back", "tune_allocator"]

_log = logging.getLogger("ragtrace_collector")

_M_MMAP_THRESHOLD = -3  # malloc.h
_M_ARENA_MAX = -8
_MMAP_THRESHOLD_BYTES = 128 * 1024
_ARENAS = 2
_MIN_TRIM_INTERVAL_SECONDS = 1.0


def _glibc() -> Any:
    """glibc, or None (not Linux, not glibc: musl has neither mallopt nor malloc_trim)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 (both must exist)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


class _Trimmer:
    """A daemon thread that runs ``malloc_trim(0)`` once after each burst of asks."""

    def __init__(self, libc: Any) -> None:
        self._trim = libc.malloc_trim
        self._trim.argtypes, self._trim.restype = [ctypes.c_size_t], ctypes.c_int
        self._asked = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def ask(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ragtrace-malloc-trim", daemon=True)
                self._thread.start()
        self._asked.set()

    def _run(self) -> None:
        while True:
            self._asked.wait()
            self._asked.clear()
            self._trim(0)  # ctypes lets go of the GIL meanwhile
            # At most one trim a second: it holds each arena's lock while it walks it, and a busy collector
            # releasing large requests all the time must not have its allocations wait on it.
            time.sleep(_MIN_TRIM_INTERVAL_SECONDS)


_TRIMMER = _Trimmer(_LIBC) if _LIBC is not None else None


def give_back() -> None:
    """Ask for the allocator's free memory to be returned to the system, soon, off this thread (no-op without
    glibc)."""
    if _TRIMMER is not None:
        _TRIMMER.ask()


def tune_allocator() -> bool:
    """Apply the settings above to this process's allocator; return whether they were applied."""
    if _LIBC is None or any(name.startswith("MALLOC_") for name in os.environ):
        return False
    mallopt = _LIBC.mallopt
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_ARENA_MAX, _ARENAS))
    if not applied:
        _log.debug("mallopt refused the allocator settings: glibc defaults kept")
    return applied
