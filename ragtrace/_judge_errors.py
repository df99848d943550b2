"""One WARNING per kind of judge failure and minute: a dead judge endpoint is visible in the app's log
without flooding it.

Spans already say ``decision=error`` and ``ragtrace.eval.error.type``, and ``ragtrace.judge.errors``
counts every failed score; this log line is for the person reading the app's output, so it names the
failure (e.g. the URL that cannot be reached) and how many more of its kind were not logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtrace.metrics._base import Score

_log = logging.getLogger("ragtrace")

INTERVAL_SECONDS = 60.0


class JudgeErrorLog:
    """Logs the first failed score of each error type, then at most one line per ``interval`` seconds
    per type, saying how many were left out since the last line. Thread-safe."""

    def __init__(self, judge: str, interval: float = INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._judge = judge
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}

    def report(self, scores: Iterable[Score]) -> None:
        for score in scores:
            if score.status != "error":
                continue
            kind = score.error_type or "judge_error"
            now = self._clock()
            with self._lock:
                last = self._last.get(kind)
                if last is not None and now - last < self._interval:
                    self._skipped[kind] = self._skipped.get(kind, 0) + 1
                    continue
                self._last[kind] = now
                skipped = self._skipped.pop(kind, 0)
            more = f" ({skipped} more since the last message)" if skipped else ""
            _log.warning(
                "ragtrace: judge %s failed (%s): %s%s; spans get decision=error, counted in ragtrace.judge.errors",
                self._judge,
                kind,
                score.explanation or score.reason,
                more,
            )
