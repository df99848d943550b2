"""At most one log line per key and interval: how ragtrace warns about a condition that repeats.

A dead judge, a degenerate judge step or a failing LLM tier would otherwise log on every record.
``Every.allow(key)`` says whether a message for ``key`` may go out now, and how many it held back
since the last one, so that message can say so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable


class Every:
    """Lets one message per key through every ``interval`` seconds (the first at once). Thread-safe."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[Hashable, float] = {}
        self._held: dict[Hashable, int] = {}

    def allow(self, key: Hashable = None) -> int | None:
        """``None`` when a message for ``key`` went out less than ``interval`` ago (this one is held
        back and counted); else the number held back since the last one, and the clock restarts."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._held[key] = self._held.get(key, 0) + 1
                return None
            self._last[key] = now
            return self._held.pop(key, 0)

    def clear(self) -> None:
        """Forget every key (the next message of each goes out at once)."""
        with self._lock:
            self._last.clear()
            self._held.clear()
