"""Resting a judge that keeps failing, so that a dead or hostile endpoint costs the app nothing.

A judge that fails at once (a 401, a reply that is not JSON, a body over the byte cap) would otherwise
be asked again for every picked span: the worker then spends a core on requests that cannot succeed,
and that core is taken from the app's request path (the GIL). After ``after`` records in a row whose
every judged score failed, the judge rests ``first_rest`` seconds. Spans picked meanwhile are not
queued: they leave at once, as a span the queue has no room for does, with ``decision=error`` and the
failure's own ``ragtrace.eval.error.type`` (so every span is still exported once, and a dashboard keeps
naming the cause). When the rest ends, one record is a trial: if any of its scores is measured the judge
is well again; if it fails, the next rest is twice as long, up to ``max_rest``. A trial that never
settles (its span overflowed, or shutdown cancelled it) expires after one rest.

Retries inside one record (429, 5xx, timeouts) stay the transport's business; this is the step above it,
across records, as an OTLP exporter backs off a dead collector.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragtrace._rate_limit import Every
from ragtrace.metrics._base import REASON_JUDGE_ERROR, Direction, Score

_log = logging.getLogger("ragtrace")


@dataclass(frozen=True, slots=True)
class PauseSettings:
    """When a failing judge rests, and for how long (seconds)."""

    after: int = 5
    """Records in a row whose every judged score failed before the judge rests."""
    first_rest: float = 1.0
    max_rest: float = 60.0


DEFAULT_PAUSE = PauseSettings()

JUDGE_ERROR = "judge_error"
"""The error type recorded when the failure that started a rest named none."""


def failed(scores: Sequence[Score]) -> bool:
    """Whether a record's scores say its judge failed: some score is a judge error and none was measured
    (a metric that had nothing to measure, or was skipped, says nothing about the judge)."""
    return any(s.status == "error" for s in scores) and not any(s.ok for s in scores)


class JudgePause:
    """Whether picked records go to the judge; see the module docstring. ``resting`` is read where spans
    end (app threads), ``admit`` and ``settle`` by the worker: thread-safe. ``clock`` is injectable for
    tests."""

    def __init__(
        self,
        judge: str,
        settings: PauseSettings = DEFAULT_PAUSE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._judge = judge
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0  # records in a row that failed
        self._rest = 0.0  # the current rest's length; 0 while the judge is well
        self._until = 0.0  # the rest's end, or a trial's expiry
        self._trial = False  # a trial record was admitted and has not settled
        self.cause = JUDGE_ERROR
        """The error type of the failure that started the current rest (what rested spans record)."""
        self._log_every = Every(60.0, clock)

    def resting(self) -> bool:
        """Whether picked spans should leave without reaching the worker: the judge rests, or its trial is out.
        Lock-free, for the app's threads: a stale read only sends one span more to ``admit``."""
        return self._rest > 0 and self._clock() < self._until

    def admit(self) -> bool:
        """Whether the next picked record may go to the judge: always while it is well; while it rests,
        False, except for one trial record once the rest has ended."""
        if self._rest == 0:  # the hot path takes no lock: a stale read only admits one record more
            return True
        with self._lock:
            if self._rest == 0:
                return True
            now = self._clock()
            if now < self._until:
                return False
            self._trial = True
            self._until = now + self._rest  # the trial's expiry: the others wait for it meanwhile
            return True

    def settle(self, scores: Sequence[Score]) -> None:
        """Hear how an admitted record went."""
        with self._lock:
            was_trial, self._trial = self._trial, False
            if not failed(scores):
                self._failures, self._rest = 0, 0.0
                return
            self._failures += 1
            if was_trial:
                self._rest = min(self._rest * 2, self._settings.max_rest)
            elif self._rest == 0 and self._failures >= self._settings.after:
                self._rest = self._settings.first_rest
            else:
                return  # still counting, or a record the judge had before the rest began
            self.cause = next(s.error_type for s in scores if s.status == "error") or JUDGE_ERROR
            self._until = self._clock() + self._rest
            rest, failures, cause = self._rest, self._failures, self.cause
        skipped = self._log_every.allow("rest")
        if skipped is not None:
            _log.warning(
                "ragtrace: judge %s rests %.0f s after %d records in a row failed (%s); picked spans leave "
                "meanwhile with decision=error, without a call",
                self._judge,
                rest,
                failures,
                cause,
            )

    def rested(self, name: str, direction: Direction = "higher") -> Score:
        """The score of metric ``name`` for a record the resting judge is not asked for, where a score is stored
        rather than a span's decision (the collector's scoring): a judge error of the rest's cause."""
        return Score.absent(
            name,
            "error",
            REASON_JUDGE_ERROR,
            direction=direction,
            explanation="not asked: the judge rests after failing record after record",
            error_type=self.cause,
        )
