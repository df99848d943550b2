"""The worker's ledger: which jobs are held, queued and being scored, under one lock, and the exits a held span takes.

``_held`` is the single source of truth for "not yet exported": a job leaves it, under the lock, exactly
when its span is handed to ``emit``. Only two methods take a job out of it: ``_take_and_export`` (one job:
scored, or at its deadline) and ``_abandon`` (every held job, unscored: a drain that gave up, a shutdown).
That makes every exit path (deadline, flush, a wedged loop, fork) exactly-once by construction.

``emit`` and ``count`` are called so that neither can raise: once a job has left ``_held`` nothing may stand
between its span and ``emit``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ragtrace import semconv
from ragtrace._jobs import Job
from ragtrace._spans import safe_copy

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.util.types import AttributeValue

__all__ = ["TIMEOUT", "Ledger"]

_log = logging.getLogger("ragtrace._worker")

TIMEOUT: Mapping[str, AttributeValue] = {semconv.EVAL_DECISION: semconv.DECISION_TIMEOUT}
"""The attributes of a span exported unscored because its time ran out."""


class Ledger:
    """The state ``submit``, the loop and a drain share, guarded by ``_lock``, and the exits from ``_held``."""

    _emit: Callable[[ReadableSpan], None]
    _count: Callable[[str], None]
    _count_warned: bool

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._incoming: deque[Job] = deque()
        self._held: set[Job] = set()
        self._queued = 0
        self._wake_pending = False
        self._busy = 0  # jobs being scored; written by the loop under the lock, read by submit

    def _dequeue(self, job: Job) -> bool:
        """Take ``job`` off the queue count (under the lock); False when ``_abandon`` already did."""
        if not job.queued:
            return False
        job.queued = False
        self._queued -= 1
        return True

    def _abandon(self, *, final: bool) -> int:
        # Runs on the caller's thread while the loop may still hold some of these jobs in ``_waiting``:
        # only what is taken here leaves the queue count, and a job no longer ``queued`` is skipped by
        # the loop (never scored: its span has left). A job being scored goes on, and, unless this is
        # the final drain, brings its scores on a carrier span like any job past its deadline.
        with self._lock:
            jobs = list(self._held)
            self._held.clear()
            self._incoming.clear()
            for job in jobs:
                if job.queued:
                    job.queued = False
                    self._queued -= 1
                elif not final:
                    job.late = True
        for job in jobs:
            span, decision = safe_copy(job.span, TIMEOUT)
            self._safe_emit(span)
            self._safe_count(decision)
        return len(jobs)

    def _take_and_export(
        self,
        job: Job,
        attributes: Mapping[str, AttributeValue],
        events: Sequence[Event] = (),
        decision: str = semconv.DECISION_TIMEOUT,
    ) -> bool:
        """Export the job's span with ``attributes`` unless it already left; True when this call exported it.

        Never raises: once the job has left ``_held`` nothing may stand between it and ``emit``.
        """
        with self._lock:
            if job not in self._held:
                return False
            self._held.discard(job)
        span, decision = safe_copy(job.span, attributes, events, decision)
        self._safe_emit(span)
        self._safe_count(decision)
        return True

    def _safe_emit(self, span: ReadableSpan) -> None:
        try:
            self._emit(span)
        except Exception:
            _log.exception("ragtrace: the downstream span processor raised")

    def _safe_count(self, decision: str) -> None:
        try:
            self._count(decision)
        except Exception:
            if not self._count_warned:  # a broken meter would otherwise log once per span
                self._count_warned = True
                _log.exception("ragtrace: counting a scoring decision failed")
