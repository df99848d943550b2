"""``Worker``: a bounded queue and one daemon thread running its own asyncio loop, for items that must leave once.

The worker is generic, like OpenTelemetry's ``BatchProcessor``: it knows nothing of spans, scores or the
wire. It runs ``work(item)`` for each submitted item on its loop and hands every item to its ``Exits``
exactly once, by one of two doors:

* ``exits.in_time(item, result, seconds)``: the work finished before the item's hold deadline (``result``
  is what ``work`` returned, or the exception it raised);
* ``exits.unfinished(item)``: the item leaves without a result: still waiting at its deadline (it is then
  never worked on: a growing backlog would only grow), still running at its deadline, or held when a
  ``flush`` ran out of time or ``shutdown`` came.

An item still running when it left unfinished goes on; when its work ends, ``exits.late(item, result,
seconds, started_ns)`` gets the result (unless the drain was the final one, which cancels it).

The request path only calls ``submit`` (a lock, a length check, a deque append and, when the loop is idle,
one wake-up), so the app never waits for the work. At most ``max_concurrency`` items run at once, each as a
task in an empty OpenTelemetry context with instrumentation suppressed, with a timer at its deadline.

``_held`` is the single source of truth for "not yet handed to an exit": an item leaves it, under the lock,
exactly when it is handed on (``_take``, one item; ``_abandon``, every held item). That makes every exit path
(deadline, flush, a wedged loop, fork) exactly-once by construction. Exits must not raise; if one does, it
is logged and the item still counts as gone.

After ``fork`` the child discards the parent's items without handing them on (they are the parent's and the
parent exports them) and starts its own thread and loop on its first ``submit``.
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry import context as otel_context

from ragtrace._fork import at_fork_in_child_of
from ragtrace._suppress import suppressed

__all__ = ["Exits", "Worker", "wait_seconds"]

_log = logging.getLogger("ragtrace.scoring")

P = TypeVar("P")
R = TypeVar("R")
P_contra = TypeVar("P_contra", contravariant=True)
R_contra = TypeVar("R_contra", contravariant=True)

# Loops abandoned in a forked child: kept referenced so their finaliser never runs there (it would
# warn about an unclosed loop whose file descriptors belong to the parent).
_ABANDONED: list[Any] = []


class Exits(Protocol[P_contra, R_contra]):
    """Where the worker's items leave (see the module docstring). None of these may raise or block for long."""

    def in_time(self, item: P_contra, result: R_contra | Exception, seconds: float) -> None:
        """The item's work finished before its deadline."""

    def unfinished(self, item: P_contra) -> None:
        """The item leaves without a result (its deadline, a drain out of time, shutdown)."""

    def late(self, item: P_contra, result: R_contra | Exception, seconds: float, started_ns: int) -> None:
        """The work of an item that already left unfinished ended (``started_ns``: when it began)."""


def wait_seconds(seconds: float) -> float:
    """A time budget made safe to wait on: NaN or negative -> 0, at most ``threading.TIMEOUT_MAX``.

    A longer wait (``inf``, ``1e12`` s) makes ``Future.result``/``Thread.join`` raise OverflowError, which
    would escape from ``shutdown`` or ``force_flush`` with the held items never handed on.
    """
    if not seconds > 0:
        return 0.0
    return min(float(seconds), threading.TIMEOUT_MAX)


@dataclass(eq=False, slots=True)
class _Job(Generic[P]):
    """One held item and its bookkeeping (touched under the lock or on the loop thread)."""

    item: P
    deadline: float
    """``time.monotonic()`` past which the item leaves unfinished."""
    late: bool = False
    """Set when the item left at its deadline while its work went on."""
    queued: bool = True
    """True while the job counts against ``queue_size`` (submitted, not yet started, expired or abandoned)."""
    finished: bool = False
    """Set when no more work will be done for the job (done, failed, expired or cancelled)."""
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    started_ns: int = 0


class Worker(Generic[P, R]):
    """Bounded queue + working thread (see the module docstring for the contract).

    ``work``: the coroutine run for each item (it may raise: the exception is its result).
    ``exits``: where items leave. ``on_close``: awaited on the loop at shutdown (a judge's connections live
    there). ``queue_size``: items waiting at most; ``max_concurrency``: items worked on at once;
    ``hold_timeout``: seconds an item may be held before it leaves unfinished.
    """

    def __init__(
        self,
        *,
        work: Callable[[P], Awaitable[R]],
        exits: Exits[P, R],
        queue_size: int,
        max_concurrency: int,
        hold_timeout: float,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._work = work
        self._exits = exits
        self.queue_size = queue_size
        self.max_concurrency = max_concurrency
        self.hold_timeout = hold_timeout
        self._on_close = on_close
        self._reset()
        at_fork_in_child_of(self, Worker._after_fork_in_child)

    def _reset(self) -> None:
        # Shared state, under ``_lock``.
        self._lock = threading.Lock()
        self._incoming: deque[_Job[P]] = deque()
        self._held: set[_Job[P]] = set()
        self._queued = 0
        self._wake_pending = False
        self._busy = 0  # jobs being worked on; written by the loop under the lock, read by submit
        self._closed = False
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Loop-side state (touched only on the loop thread).
        self._waiting: deque[_Job[P]] = deque()
        self._running: set[_Job[P]] = set()
        self._reaper: asyncio.TimerHandle | None = None
        self._waiters: list[tuple[set[_Job[P]], asyncio.Future[None]]] = []

    # -- what any thread calls ---------------------------------------------------------------------

    @property
    def held(self) -> int:
        """Items held (queued or being worked on) and not yet handed to an exit."""
        return len(self._held)

    @property
    def in_flight(self) -> int:
        """Items queued or being worked on (also those that already left at their deadline)."""
        with self._lock:
            return self._queued + self._busy

    def submit(self, item: P) -> bool:
        """Queue ``item``; False when the queue is full or the worker is closed (never blocks, never raises
        but for a thread that cannot start: then the caller still owns the item)."""
        job = _Job(item, time.monotonic() + self.hold_timeout)
        with self._lock:
            if self._closed or self._queued >= self.queue_size:
                return False
            # Started before the job is held: if starting fails, the caller hands the item on itself.
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
            # after this job was held, so its drain has handed the job on: it was accepted.
            with contextlib.suppress(RuntimeError):
                # An empty context: by default the callback would run in a copy of the request's
                # context (its current span, its baggage), and so would every task and timer made from it.
                loop.call_soon_threadsafe(self._pump, context=contextvars.Context())
        return True

    def flush(self, timeout: float) -> bool:
        """Work on what is held while ``timeout`` seconds remain; the rest leaves unfinished. True when all finished."""
        return self._drain(time.monotonic() + wait_seconds(timeout), final=False)

    def shutdown(self, timeout: float) -> bool:
        """Like ``flush``, then cancel what still runs, await ``on_close`` and stop the thread. Idempotent."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        deadline = time.monotonic() + wait_seconds(timeout)
        complete = self._drain(deadline, final=True)
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            # A flush from now on must not hand the stopping loop a coroutine (it reads this only while the
            # thread is alive).
            self._stopping = True
            if thread.is_alive():
                loop.call_soon_threadsafe(loop.stop)
                # Only what is left of the budget: the thread closes its loop itself once it stops, so
                # nothing is left open when it outlives this wait.
                thread.join(wait_seconds(deadline - time.monotonic()))
            if not thread.is_alive() and not loop.is_closed():
                loop.close()
        return complete

    def _start(self) -> asyncio.AbstractEventLoop:
        # Called under the lock, on the first submit in this process. A daemon thread: it must never keep
        # the interpreter alive; ``shutdown`` (called by the TracerProvider's and our own atexit hooks,
        # which run while daemon threads still live) drains it. A policy the app installed (uvloop)
        # applies to this loop too, which is fine.
        loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_forever()
            finally:
                # Only ``shutdown`` stops the loop; closing it here lets shutdown return without
                # waiting for the thread when its budget is spent.
                loop.close()

        thread = threading.Thread(target=run, name="ragtrace-scorer", daemon=True)
        try:
            thread.start()
        except BaseException:
            loop.close()
            raise
        self._loop, self._thread = loop, thread
        return loop

    def _after_fork_in_child(self) -> None:
        # The parent's items belong to the parent (its thread hands them on); the child must neither
        # hand them on twice nor wait on a thread that does not exist here.
        if self._loop is not None:
            _ABANDONED.append(self._loop)
        closed = self._closed
        self._reset()
        self._closed = closed

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
        # A loop that did not answer (wedged, stopped) must not keep items: they leave unfinished.
        if (not answered or final) and self._abandon(final=final):
            complete = False
        return complete

    # -- the only exits from ``_held`` -------------------------------------------------------------

    def _dequeue(self, job: _Job[P]) -> bool:
        """Take ``job`` off the queue count (under the lock); False when ``_abandon`` already did."""
        if not job.queued:
            return False
        job.queued = False
        self._queued -= 1
        return True

    def _abandon(self, *, final: bool) -> int:
        # Runs on the caller's thread while the loop may still hold some of these jobs in ``_waiting``:
        # only what is taken here leaves the queue count, and a job no longer ``queued`` is skipped by
        # the loop (never worked on: it has left). A job being worked on goes on, and, unless this is
        # the final drain, brings its result through ``late`` like any job past its deadline.
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
            self._call(self._exits.unfinished, job.item)
        return len(jobs)

    def _take(self, job: _Job[P]) -> bool:
        """Take ``job`` out of ``_held``; True when this call did (the caller then hands it to one exit)."""
        with self._lock:
            if job not in self._held:
                return False
            self._held.discard(job)
        return True

    def _leave_unfinished(self, job: _Job[P]) -> bool:
        if not self._take(job):
            return False
        self._call(self._exits.unfinished, job.item)
        return True

    @staticmethod
    def _call(exit_: Callable[..., None], *args: Any) -> None:
        # Once a job has left ``_held`` nothing may stand between it and its exit, nor may an exit that
        # raises reach the loop or the app.
        try:
            exit_(*args)
        except Exception:
            _log.exception("ragtrace: handing a scoring job on failed")

    # -- what runs on the loop thread --------------------------------------------------------------

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

    def _begin(self, job: _Job[P], now: float) -> None:
        loop = asyncio.get_running_loop()
        self._running.add(job)
        job.started_ns = time.time_ns()
        job.timer = loop.call_later(job.deadline - now, self._on_deadline, job)
        # Created in an empty context whoever runs the pump (a wake-up, a flush's coroutine): the
        # task's context is a copy of the one current here, and the work must not inherit the app's.
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

    def _expire(self, job: _Job[P]) -> None:
        with self._lock:
            expired = self._dequeue(job)
        if expired:
            self._leave_unfinished(job)
        self._finished(job)

    def _on_deadline(self, job: _Job[P]) -> None:
        job.timer = None
        if self._leave_unfinished(job):
            job.late = True

    async def _run(self, job: _Job[P]) -> None:
        # A fresh OpenTelemetry context: no current span, no baggage, and instrumentation suppressed, so
        # the work's calls (HTTP clients, OpenAI instrumentors) make no spans in the user's trace.
        token = otel_context.attach(suppressed(otel_context.Context()))
        started = time.perf_counter()
        try:
            result: R | Exception
            try:
                result = await self._work(job.item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failure is a result, never a lost item
                result = exc
            seconds = time.perf_counter() - started
            if job.timer is not None:
                job.timer.cancel()
                job.timer = None
            if self._take(job):
                self._call(self._exits.in_time, job.item, result, seconds)
            elif job.late:
                self._call(self._exits.late, job.item, result, seconds, job.started_ns or time.time_ns())
        except asyncio.CancelledError:
            # Cancelled by shutdown: the item leaves unfinished through ``_abandon``.
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

    def _finished(self, job: _Job[P]) -> None:
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
            # Time is up: what still waits leaves unfinished and is dropped; what runs leaves unfinished
            # now and, unless this is the final drain, brings its result through ``late``.
            for job in [j for j in self._waiting if j in snapshot]:
                self._waiting.remove(job)
                self._expire(job)
            for job in [j for j in self._running if j in snapshot]:
                if self._leave_unfinished(job):
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
            # The work may run blocking calls in the loop's executor (the offline model) or keep async
            # generators open; release both while the loop still runs.
            closers += [("async generators", loop.shutdown_asyncgens), ("the executor", loop.shutdown_default_executor)]
            for what, close in closers:
                try:
                    await asyncio.wait_for(close(), max(deadline - time.monotonic(), 0.1))
                except Exception as exc:
                    _log.warning("ragtrace: closing %s failed: %s: %s", what, type(exc).__name__, exc)
        return complete
