"""One WARNING per kind of judge failure and minute: a dead judge endpoint is visible in the app's log
without flooding it.

Spans already say ``decision=error`` and ``ragtrace.eval.error.type``, and ``ragtrace.judge.errors``
counts every failed score; this log line is for the person reading the app's output, so it names the
failure (e.g. the URL that cannot be reached) and how many more of its kind were not logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ragtrace._rate_limit import Every
from ragtrace._secrets import scrub

if TYPE_CHECKING:
    from ragtrace.metrics._base import Score

_log = logging.getLogger("ragtrace")

INTERVAL_SECONDS = 60.0


class JudgeErrorLog:
    """Logs the first failed score of each error type, then at most one line per ``interval`` seconds
    per type, saying how many were left out since the last line. Thread-safe."""

    def __init__(self, judge: str, interval: float = INTERVAL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._judge = judge
        self._every = Every(interval, clock)

    def report(self, scores: Iterable[Score]) -> None:
        for score in scores:
            if score.status != "error":
                continue
            kind = score.error_type or "judge_error"
            skipped = self._every.allow(kind)
            if skipped is None:
                continue
            more = f" ({skipped} more since the last message)" if skipped else ""
            _log.warning(
                "ragtrace: judge %s failed (%s): %s%s; spans get decision=error, counted in ragtrace.judge.errors",
                self._judge,
                kind,
                scrub(score.explanation or score.reason or ""),
                more,
            )
