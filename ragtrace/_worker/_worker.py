"""``Worker``: what any thread calls on the background scorer (``submit``, ``flush``, ``shutdown``) and its fork hook.

``submit`` is the request path: a lock, a length check, a deque append and, when the loop is idle, one
wake-up; it never blocks and never raises into the app, and starts the thread on the first job in this
process. ``flush`` and ``shutdown`` drain: they hand the loop ``_settle`` and wait for it within their
budget; a loop that does not answer in time (wedged, stopped) does not keep spans, which leave unscored
through the ledger's ``_abandon``. After ``fork`` the child discards the parent's jobs without exporting
them (they are the parent's and the parent exports them) and starts its own thread and loop on its first
``submit``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ragtrace._fork import at_fork_in_child_of
from ragtrace._jobs import Job, Score, wait_seconds
from ragtrace._worker import _loop_thread
from ragtrace._worker._scheduling import Scheduler

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._record import RagRecord

__all__ = ["Worker"]


class Worker(Scheduler):
    """Bounded queue + scoring thread. See ``ragtrace._worker`` for the contract."""

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
        super()._reset()
        self._closed = False
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

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
        if loop is not None and thread is not None:
            # A flush from now on must not hand the stopping loop a coroutine (it reads this only while the
            # thread is alive).
            self._stopping = True
            _loop_thread.stop(loop, thread, deadline)
        return complete

    def _start(self) -> asyncio.AbstractEventLoop:
        # Called under the lock, on the first submit in this process.
        self._loop, self._thread = _loop_thread.start()
        return self._loop

    def _after_fork_in_child(self) -> None:
        # The parent's jobs belong to the parent (its thread exports them); the child must neither
        # export them twice nor wait on a thread that does not exist here.
        if self._loop is not None:
            _loop_thread.abandon(self._loop)
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
        # A loop that did not answer (wedged, stopped) must not keep spans: export them unscored.
        if (not answered or final) and self._abandon(final=final):
            complete = False
        return complete
