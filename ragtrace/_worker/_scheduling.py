"""What runs on the worker's loop thread: starting jobs, their deadlines, scoring one job, settling a drain.

Submitted jobs wait in ``_incoming`` (shared, under the ledger's lock) until the loop takes them into
``_waiting`` (``_pump``: on a wake-up, when a slot frees, on the reaper's tick). At most ``max_concurrency``
run at once, each as a task with a timer at its hold deadline:

* a job still waiting at its deadline leaves unscored, decision ``timeout``, and is never scored;
* a job still running at its deadline leaves unscored, decision ``timeout``, and its scores, when they
  come, go out on a carrier span linked to it;
* a job scored in time leaves as the scored copy of its span.

Scoring runs in an empty OpenTelemetry context with instrumentation suppressed. ``_settle`` is a drain's
half on the loop: it waits until what is held now has finished or the deadline passes and, on the final
drain, cancels what still runs and closes the judge, the async generators and the executor.
Everything here is touched only on the loop thread, except what the ledger guards with its lock.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable

from opentelemetry import context as otel_context

from ragtrace import _wire, semconv
from ragtrace._jobs import Job, Outcome, Score
from ragtrace._spans import carrier_span
from ragtrace._suppress import suppressed
from ragtrace._worker._ledger import TIMEOUT, Ledger

__all__ = ["Scheduler"]

_log = logging.getLogger("ragtrace._worker")


class Scheduler(Ledger):
    """The loop thread's side of the worker (see the module docstring); ``Worker`` is the side any thread calls."""

    _score: Score
    _on_close: Callable[[], Awaitable[None]] | None
    max_concurrency: int
    hold_timeout: float

    def _reset(self) -> None:
        super()._reset()
        # Loop-side state (touched only on the loop thread).
        self._waiting: deque[Job] = deque()
        self._running: set[Job] = set()
        self._reaper: asyncio.TimerHandle | None = None
        self._waiters: list[tuple[set[Job], asyncio.Future[None]]] = []

    def _take_incoming(self) -> None:
        with self._lock:
            self._wake_pending = False
            self._waiting.extend(self._incoming)
            self._incoming.clear()

    def _pump(self) -> None:
        """Move submitted jobs to the loop side, start what fits, expire what waited too long."""
        self._take_incoming()
        now = time.monotonic()
        while self._waiting and len(self._running) < self.max_concurrency:
            job = self._waiting.popleft()
            if now >= job.deadline:
                self._expire(job)
                continue
            with self._lock:
                start = self._dequeue(job)
                if start:
                    self._busy += 1
            if start:
                self._begin(job, now)
            else:
                self._finished(job)
        self._arm_reaper(now)

    def _begin(self, job: Job, now: float) -> None:
        loop = asyncio.get_running_loop()
        self._running.add(job)
        job.started_ns = time.time_ns()
        job.timer = loop.call_later(job.deadline - now, self._on_deadline, job)
        # Created in an empty context whoever runs the pump (a wake-up, a flush's coroutine): the
        # task's context is a copy of the one current here, and scoring must not inherit the app's.
        job.task = contextvars.Context().run(loop.create_task, self._run(job))

    def _arm_reaper(self, now: float) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        delay: float | None = None
        if self._waiting:
            # Jobs wait in FIFO order with equal hold times, so the head has the earliest deadline.
            delay = max(self._waiting[0].deadline - now, 0.0)
        if len(self._running) >= self.max_concurrency:
            # Submits do not wake a full loop, so new jobs may sit unseen in ``_incoming``: tick.
            tick = min(max(self.hold_timeout / 4, 0.01), 1.0)
            delay = tick if delay is None else min(delay, tick)
        if delay is not None:
            self._reaper = asyncio.get_running_loop().call_later(delay, self._reap)

    def _reap(self) -> None:
        self._reaper = None
        self._take_incoming()
        now = time.monotonic()
        while self._waiting and self._waiting[0].deadline <= now:
            self._expire(self._waiting.popleft())
        self._pump()

    def _expire(self, job: Job) -> None:
        with self._lock:
            expired = self._dequeue(job)
        if expired:
            self._take_and_export(job, TIMEOUT)
        self._finished(job)

    def _on_deadline(self, job: Job) -> None:
        job.timer = None
        if self._take_and_export(job, TIMEOUT):
            job.late = True

    async def _run(self, job: Job) -> None:
        # A fresh OpenTelemetry context: no current span, no baggage, and instrumentation suppressed, so
        # judge calls (HTTP clients, OpenAI instrumentors) make no spans in the user's trace.
        token = otel_context.attach(suppressed(otel_context.Context()))
        started = time.perf_counter()
        try:
            try:
                outcome = await self._score(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failing scorer is a recorded outcome, never a lost span
                _log.warning("ragtrace: scoring failed: %s: %s", type(exc).__name__, exc)
                outcome = Outcome(
                    semconv.DECISION_ERROR,
                    {semconv.EVAL_ERROR_TYPE: type(exc).__name__},
                )
            seconds = time.perf_counter() - started
            attributes = _wire.finished(outcome.attributes, outcome.decision, seconds)
            if job.timer is not None:
                job.timer.cancel()
                job.timer = None
            exported = self._take_and_export(job, attributes, outcome.events, outcome.decision)
            if not exported and job.late:
                end = time.time_ns()
                try:
                    carrier = carrier_span(
                        job.span, attributes, outcome.events, start_time=job.started_ns or end, end_time=end
                    )
                except Exception as exc:  # the original already left; only the late scores are lost
                    _log.warning("ragtrace: could not build the carrier span: %s: %s", type(exc).__name__, exc)
                else:
                    self._safe_emit(carrier)
        except asyncio.CancelledError:
            # Cancelled by shutdown: the span leaves unscored through ``_abandon``.
            pass
        finally:
            otel_context.detach(token)
            if job.timer is not None:
                job.timer.cancel()
                job.timer = None
            if job in self._running:
                self._running.discard(job)
                with self._lock:
                    self._busy -= 1
            self._finished(job)
            self._pump()

    def _finished(self, job: Job) -> None:
        job.finished = True
        for pending, waiter in self._waiters:
            pending.discard(job)
            if not pending and not waiter.done():
                waiter.set_result(None)

    async def _settle(self, deadline: float, final: bool) -> bool:
        """Wait (on the loop) until every job held now has finished, or the deadline passes."""
        self._pump()
        snapshot = {job for job in (*self._waiting, *self._running) if not job.finished}
        complete = True
        if snapshot:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (snapshot, waiter)
            self._waiters.append(entry)
            try:
                await asyncio.wait_for(asyncio.shield(waiter), max(deadline - time.monotonic(), 0.0))
            except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
                complete = False
            finally:
                self._waiters.remove(entry)
        if not complete:
            # Time is up: what still waits is exported unscored and dropped; what runs is exported
            # unscored now and, unless this is the final drain, brings its scores on a carrier span.
            for job in [j for j in self._waiting if j in snapshot]:
                self._waiting.remove(job)
                self._expire(job)
            for job in [j for j in self._running if j in snapshot]:
                if self._take_and_export(job, TIMEOUT):
                    job.late = True
                if final and job.task is not None:
                    job.task.cancel()
        if final:
            running = [job.task for job in self._running if job.task is not None]
            if running:
                await asyncio.gather(*running, return_exceptions=True)
            loop = asyncio.get_running_loop()
            closers: list[tuple[str, Callable[[], Awaitable[None]]]] = []
            if self._on_close is not None:
                closers.append(("the judge", self._on_close))
            # A judge may run blocking work in the loop's executor (the offline model) or keep async
            # generators open; release both while the loop still runs.
            closers += [("async generators", loop.shutdown_asyncgens), ("the executor", loop.shutdown_default_executor)]
            for what, close in closers:
                try:
                    await asyncio.wait_for(close(), max(deadline - time.monotonic(), 0.1))
                except Exception as exc:
                    _log.warning("ragtrace: closing %s failed: %s: %s", what, type(exc).__name__, exc)
        return complete
