"""The C allocator told to give memory back: large buffers mapped on their own, few arenas.

A request body and its copies are megabytes each and live for one request. glibc's defaults keep them: its
mmap threshold rises after each large free (so the next large buffers come from a heap that is rarely trimmed),
and every thread that allocates (the event loop, the decode threads, gRPC's) gets an arena of its own whose freed
memory no other thread reuses. Under a burst of large or hostile requests the resident size then grows well past
what is held at any moment (measured: 73 MiB against 44 MiB for the same attacks on an 8 MiB body limit).
``tune_allocator`` fixes the threshold at 128 KiB (a larger buffer is unmapped when freed) and caps the arenas at
two. Linux with glibc only; elsewhere, or when ``MALLOC_*`` environment variables already say, it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

__all__ = ["tune_allocator"]

_log = logging.getLogger("ragtrace_collector")

_M_MMAP_THRESHOLD = -3  # malloc.h
_M_ARENA_MAX = -8
_MMAP_THRESHOLD_BYTES = 128 * 1024
_ARENAS = 2


def tune_allocator() -> bool:
    """Apply the settings above to this process's allocator; return whether they were applied."""
    if not sys.platform.startswith("linux") or any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)) and bool(mallopt(_M_ARENA_MAX, _ARENAS))
    if not applied:
        _log.debug("mallopt refused the allocator settings: glibc defaults kept")
    return applied
