"""The background scorer: one daemon thread running its own asyncio loop.

The request path only calls ``submit`` (a lock, a length check, a deque append and, when the loop is
idle, one wake-up), so the app never waits for a judge. The loop scores up to ``max_concurrency``
jobs at once; every job leaves exactly once through ``emit``:

* scored in time -> the scored copy of its span;
* still waiting when its hold deadline passes -> the original, unscored, decision ``timeout`` (it is
  not scored at all: nothing was computed yet, and scoring it would only feed a growing backlog);
* still being scored at its deadline -> the original, unscored, decision ``timeout``; when scoring
  ends the scores go out on a carrier span linked to it;
* ``flush``/``shutdown`` -> jobs finished while the budget lasts, the rest exported unscored.

``_held`` is the single source of truth for "not yet exported": a job leaves it, under the lock,
exactly when its span is handed to ``emit``. That makes every exit path (deadline, flush, a wedged
loop, fork) exactly-once by construction.

After ``fork`` the child discards the parent's jobs without exporting them (they are the parent's
and the parent exports them) and starts its own thread and loop on its first ``submit``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context

from ragtrace import _wire, semconv
from ragtrace._fork import at_fork_in_child_of
from ragtrace._jobs import Job, Outcome, Score, wait_seconds
from ragtrace._spans import carrier_span, safe_copy
from ragtrace._suppress import suppressed

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.util.types import AttributeValue

    from ragtrace._record import RagRecord

_log = logging.getLogger(__name__)

# Loops abandoned in a forked child: kept referenced so their finaliser never runs there (it would
# warn about an unclosed loop whose file descriptors belong to the parent).
_ABANDONED: list[Any] = []


_TIMEOUT: Mapping[str, AttributeValue] = {semconv.EVAL_DECISION: semconv.DECISION_TIMEOUT}


class Worker:
    """Bounded queue + scoring thread. See the module docstring for the contract."""

    def __init__(
        self,
        *,
        score: Score,
        emit: Callable[[ReadableSpan], None],
        count: Callable[[str], None],
        queue_size: int,
        max_concurrency: int,
        hold_timeout: float,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._score = score
        self._emit = emit
        self._count = count
        self.queue_size = queue_size
        self.max_concurrency = max_concurrency
        self.hold_timeout = hold_timeout
        self._on_close = on_close
        self._count_warned = False
        self._reset()
        at_fork_in_child_of(self, Worker._after_fork_in_child)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._incoming: deque[Job] = deque()
        self._held: set[Job] = set()
        self._queued = 0
        self._wake_pending = False
        self._busy = 0  # jobs being scored; written by the loop under the lock, read by submit
        self._closed = False
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Loop-side state (touched only on the loop thread).
        self._waiting: deque[Job] = deque()
        self._running: set[Job] = set()
        self._reaper: asyncio.TimerHandle | None = None
        self._waiters: list[tuple[set[Job], asyncio.Future[None]]] = []

    # -- any thread ---------------------------------------------------------------------------

    @property
    def held(self) -> int:
        """Spans held (queued or being scored) and not yet exported."""
        return len(self._held)

    @property
    def in_flight(self) -> int:
        """Jobs queued or being scored (also those whose span already left at its deadline): the records
        picked for scoring that have not been charged yet."""
        with self._lock:
            return self._queued + self._busy

    def submit(self, span: ReadableSpan, record: RagRecord, metrics: tuple[str, ...]) -> bool:
        """Queue a span for scoring; False when the queue is full or the worker is closed (never blocks)."""
        job = Job(span, record, metrics, time.monotonic() + self.hold_timeout)
        with self._lock:
            if self._closed or self._queued >= self.queue_size:
                return False
            # Started before the job is held: if starting fails, the caller forwards the span itself.
            loop = self._loop
            if loop is None:
                loop = self._start()
            self._queued += 1
            self._held.add(job)
            self._incoming.append(job)
            # Wake the loop only when it can start the job now. With every slot busy the job waits in
            # ``_incoming`` until a slot frees (the loop looks then) or the reaper's tick expires it:
            # a wake-up per submit would make the request path fight the worker for the GIL.
            wake = not self._wake_pending and self._busy < self.max_concurrency
            if wake:
                self._wake_pending = True
        if wake:
            # RuntimeError: a shutdown closed the loop since the lock was released. It set ``_closed``
            # after this job was held, so its drain has exported the job: it was accepted, and must
            # not be forwarded again by the caller.
            with contextlib.suppress(RuntimeError):
                # An empty context: by default the callback would run in a copy of the request's
                # context (its current span, its baggage), and so would every task and timer made from it.
                loop.call_soon_threadsafe(self._pump, context=contextvars.Context())
        return True

    def flush(self, timeout: float) -> bool:
        """Score what is held while ``timeout`` seconds remain; export the rest unscored. True when all was scored."""
        return self._drain(time.monotonic() + wait_seconds(timeout), final=False)

    def shutdown(self, timeout: float) -> bool:
        """Like ``flush``, then cancel what is still running, close the judge and stop the thread. Idempotent."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        deadline = time.monotonic() + wait_seconds(timeout)
        complete = self._drain(deadline, final=True)
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            self._stopping = True  # a flush from now on must not hand the stopping loop a coroutine
            loop.call_soon_threadsafe(loop.stop)
            # Only what is left of the budget: the thread closes its loop itself once it stops, so
            # nothing is left open when it outlives this wait.
            thread.join(wait_seconds(deadline - time.monotonic()))
        if loop is not None and thread is not None and not thread.is_alive() and not loop.is_closed():
            loop.close()
        return complete

    # -- thread start, fork -------------------------------------------------------------------

    def _start(self) -> asyncio.AbstractEventLoop:
        # Called under the lock, on the first submit in this process.
        # A daemon thread: it must never keep the interpreter alive; ``shutdown`` (called by the
        # TracerProvider's and our own atexit hooks, which run while daemon threads still live)
        # drains it. A policy the app installed (uvloop) applies to this loop too, which is fine.
        loop = asyncio.new_event_loop()

        def _run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_forever()
            finally:
                # Only ``shutdown`` stops the loop; closing it here lets shutdown return without
                # waiting for the thread when its budget is spent.
                loop.close()

        thread = threading.Thread(target=_run, name="ragtrace-scorer", daemon=True)
        try:
            thread.start()
        except BaseException:
            loop.close()
            raise
        self._loop, self._thread = loop, thread
        return loop

    def _after_fork_in_child(self) -> None:
        # The parent's jobs belong to the parent (its thread exports them); the child must neither
        # export them twice nor wait on a thread that does not exist here.
        if self._loop is not None:
            _ABANDONED.append(self._loop)
        closed = self._closed
        self._reset()
        self._closed = closed

    # -- draining -----------------------------------------------------------------------------

    def _drain(self, deadline: float, *, final: bool) -> bool:
        loop, thread = self._loop, self._thread
        complete = answered = True
        if (
            loop is not None
            and thread is not None
            and thread.is_alive()
            and not loop.is_closed()
            and not self._stopping
        ):
            settle = self._settle(deadline, final)
            try:
                # From an empty context, like the wake-up: the caller's (a request) is no business of the loop's.
                future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, settle, loop)
            except RuntimeError:  # a shutdown closed the loop since the check above
                settle.close()
                complete = answered = False
            else:
                try:
                    complete = future.result(wait_seconds(deadline - time.monotonic() + 1.0))
                except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError):
                    complete = answered = False
        elif self._held:
            answered = False
        # A loop that did not answer (wedged, stopped) must not keep spans: export them unscored.
        if (not answered or final) and self._abandon(final=final):
            complete = False
        return complete

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
            span, decision = safe_copy(job.span, _TIMEOUT)
            self._safe_emit(span)
            self._safe_count(decision)
        return len(jobs)

    # -- loop thread --------------------------------------------------------------------------

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
            self._take_and_export(job, _TIMEOUT)
        self._finished(job)

    def _dequeue(self, job: Job) -> bool:
        """Take ``job`` off the queue count (under the lock); False when ``_abandon`` already did."""
        if not job.queued:
            return False
        job.queued = False
        self._queued -= 1
        return True

    def _on_deadline(self, job: Job) -> None:
        job.timer = None
        if self._take_and_export(job, _TIMEOUT):
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
                if self._take_and_export(job, _TIMEOUT):
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

    # -- export -------------------------------------------------------------------------------

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
