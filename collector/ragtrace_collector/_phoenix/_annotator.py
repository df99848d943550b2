"""``PhoenixAnnotator``: the store's new scores, posted to Arize Phoenix as span annotations from a background task.

Every ``poll_seconds`` it reads the scores committed since its cursor (``ScoreTail``, on a worker thread with a
connection of its own) and posts them in batches of ``batch_size``. Ingest never waits for it: it reads what the
receivers already committed, and at most ``queue_size`` annotations are held in memory; past that it reads no
further until some are delivered or given up (the rest wait in the store, which holds them anyway).

Phoenix's replies (``_wire.classify``):

- a span Phoenix does not hold yet (the app's own export, or ``--forward``, may reach it after the collector
  stored the score): that annotation waits and is tried again, 1 s later, then 2, 4 ... (at most 10 s apart),
  for up to ``span_wait_seconds``; the rest of the batch is sent again at once;
- 5xx, 408, 429 or no connection: the batch is sent again after 0.5 s, 1, 2 ... (at most 10 s), at most
  ``max_retries`` times;
- any other refusal: the batch is given up.

Given-up annotations are logged and counted (``dropped``, by reason in ``dropped_by``). Phoenix upserts on
(span, name, identifier), so a batch sent again after a lost reply leaves no duplicate.

A crash or a restart loses nothing: how far it delivered is kept in the store (``DurableCursor``, a row per
annotation URL) and ``start()`` resumes there, reading what was stored meanwhile in batches as usual. The
stored value passes a score only once its annotation was delivered or given up: just before the first row still
held (one waiting for its span completes after later ones), else the read cursor. It is written in the
background at start, after a delivered batch or a poll, and at ``stop``; what was delivered after the last
write is sent again after a crash, which Phoenix's upsert makes harmless. With no cursor stored for the URL (a
first start) it starts past the scores stored before ``start()``: it does not post the store's history.

On PostgreSQL every replica runs an annotator and one of them posts: the one holding the annotator's advisory lock
of its URL (``Leadership`` with ``phoenix_lock``, checked at every poll). The others read and store nothing. A
replica that takes the lock over starts from the stored cursor, so what its predecessor delivered after its last
write is sent again (Phoenix upserts); a predecessor that lost the lock without knowing it can at worst write back
an older cursor, which also only sends annotations again, since every cursor written was delivered up to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass

import httpx

from ragtrace_collector._phoenix._cursor import DurableCursor
from ragtrace_collector._phoenix._wire import Annotation, Delivery, Reply, annotations_url, classify, request_body
from ragtrace_collector._store.arrival import START, Arrival
from ragtrace_collector._store.connection import Target, is_postgres
from ragtrace_collector._store.leadership import Leadership, phoenix_lock
from ragtrace_collector._store.phoenix import ScoreTail, TailRow

__all__ = ["PhoenixAnnotator"]

_log = logging.getLogger("ragtrace_collector")

_MAX_DELAY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class _Waiting:
    """An annotation whose span Phoenix did not hold: since when (loop time), its next try, and how many so far."""

    annotation: Annotation
    first_missing: float
    due: float
    tries: int


_Key = tuple[str, str]
"""(span id, metric): what Phoenix keeps one annotation of (with the fixed identifier)."""


class PhoenixAnnotator:
    """Posts the scores the store ``target`` commits to Phoenix at ``url``. ``start``/``stop`` on the event loop."""

    def __init__(
        self,
        url: str,
        target: Target,
        *,
        api_key: str | None = None,
        batch_size: int = 100,
        queue_size: int = 1000,
        poll_seconds: float = 1.0,
        timeout: float = 10.0,
        max_retries: int = 5,
        retry_seconds: float = 0.5,
        span_retry_seconds: float = 1.0,
        span_wait_seconds: float = 120.0,
        cursor_timeout: float = 5.0,  # how long a write of the stored cursor waits for the store's writers
    ) -> None:
        self.url = annotations_url(url)
        self._target = target
        self._leadership = (
            Leadership(target, lock=phoenix_lock(self.url), role="the Phoenix annotator")
            if is_postgres(target)
            else None
        )
        self._leading = self._leadership is None
        """Whether this process posts: always on SQLite; on PostgreSQL, while it holds the annotator's lock."""
        self._first_end: Arrival | None = None
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._batch_size = batch_size
        self._queue_size = queue_size
        self._poll_seconds = poll_seconds
        self._timeout = timeout
        self._max_retries = max_retries
        self._retry_seconds = retry_seconds
        self._span_retry_seconds = span_retry_seconds
        self._span_wait_seconds = span_wait_seconds
        self._cursor_timeout = cursor_timeout
        self._ready: deque[Annotation] = deque()
        self._posting: list[Annotation] = []
        self._waiting: list[_Waiting] = []
        self._missing: dict[_Key, _Waiting] = {}
        """Every annotation found missing and not delivered or given up yet, waiting or back in line."""
        self._tail: ScoreTail | None = None
        self._stored: DurableCursor | None = None
        self._cursor = START
        self._drained = False
        self._read_failed = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.sent = 0
        """Annotations Phoenix stored."""
        self.dropped_by: dict[str, int] = {}
        """Annotations given up, by reason: ``refused``, ``retries`` (spent), ``span_missing`` (the span did not
        reach Phoenix in ``span_wait_seconds``). Annotations still unsent when ``stop`` runs out of time are not
        given up: the stored cursor stays below them, so the next start on this file sends them."""

    @property
    def dropped(self) -> int:
        """Annotations given up, whatever the reason."""
        return sum(self.dropped_by.values())

    @property
    def pending(self) -> int:
        """Annotations read from the store and not yet delivered or given up."""
        return len(self._ready) + len(self._posting) + len(self._waiting)

    def start(self) -> None:
        """Start posting (on the running loop) the scores after this URL's stored cursor; with none, from now on."""
        if self._task is None:
            self._tail = ScoreTail(self._target)
            self._stored = DurableCursor(self._target, self.url, timeout=self._cursor_timeout)
            # Read here, not in the task: a score committed between start() and the task's first read counts.
            self._first_end = self._tail.end()
            if self._leading:
                self._resume(self._stored.load())
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ragtrace-phoenix-annotator")

    async def stop(self, timeout: float = 5.0) -> None:
        """Post what is stored and not sent yet, for at most ``timeout`` seconds, then stop.

        Call after everything that writes scores has stopped: the last read happens here. The stored cursor is
        written last (up to twice ``cursor_timeout`` on a locked file): the unsent stay above it, for the next start.
        """
        self._closing = True
        self._wake.set()
        if self._task is not None:
            task, self._task = self._task, None
            try:
                if not task.done():  # done already: it was cancelled (the loop's teardown, a test's crash)
                    await asyncio.wait_for(task, timeout)
            except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
                if self.pending:
                    _log.warning("Phoenix annotator stopped, %d annotation(s) unsent: sent on restart", self.pending)
        if self._stored is not None:
            # idempotent; a replica that does not post never writes the cursor the posting one keeps
            await self._stored.close(self._delivered_up_to() if self._leading else None)
        if self._leadership is not None:
            await asyncio.to_thread(self._leadership.close)  # after the last write: another replica takes over
        if self._tail is not None:
            tail, self._tail = self._tail, None
            await asyncio.to_thread(tail.close)  # waits for a read that a timed-out stop left running

    # -- the task ----------------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._deliver()
        except Exception:
            # A bug, not Phoenix's answer (those are handled): say so loudly; ingest carries on without it.
            _log.exception("the Phoenix annotator stopped: %d annotation(s) unsent, sent on restart", self.pending)

    async def _deliver(self) -> None:
        async with httpx.AsyncClient(timeout=self._timeout, headers=self._headers) as client:
            while True:
                closing = self._closing  # read before the store: the last read then sees every score
                await self._read()
                self._release_due()
                if self._ready:
                    count = min(self._batch_size, len(self._ready))
                    self._posting = [self._ready.popleft() for _ in range(count)]
                    await self._post(client, self._posting)
                    self._posting = []
                    self._store_cursor()
                    continue
                self._store_cursor()
                if closing and self._drained and not self._waiting:
                    return
                await self._pause(read_closing=closing)

    def _resume(self, resumed: Arrival | None) -> None:
        """Start a term of posting (on the loop): from ``resumed``, the stored cursor, or (none stored: a first
        start) past the scores stored before ``start()``; stored now, as a crash before the first poll must not
        lose what is stored meanwhile."""
        assert self._first_end is not None
        self._cursor = self._first_end if resumed is None else resumed
        self._store_cursor()

    async def _lead(self) -> bool:
        """PostgreSQL: whether this replica posts this round; one that just took over resumes from the stored
        cursor, and one that lost the lock lets go of what it held (the new holder reads it again)."""
        if self._leadership is None:
            return True
        leadership = self._leadership

        def hold() -> tuple[bool, bool]:
            with leadership.lead() as session:
                return session is not None, leadership.gained

        try:
            leading, gained = await asyncio.to_thread(hold)
        except Exception:
            _log.warning("Phoenix annotator could not tell whether it posts for the fleet", exc_info=True)
            leading, gained = False, False
        if leading and gained:
            self._forget_held()
            self._leading = True
            assert self._stored is not None
            self._resume(await asyncio.to_thread(self._stored.load))
        elif not leading and self._leading:
            self._forget_held()
            self._leading = False
        return leading

    def _forget_held(self) -> None:
        self._ready.clear()
        self._waiting.clear()
        self._missing.clear()

    async def _read(self) -> None:
        if not await self._lead():
            self._drained = True  # nothing to read here: stopping need not wait for this replica's reads
            return
        room = self._queue_size - self.pending
        if room <= 0 or self._tail is None:
            return
        try:
            found, self._cursor, self._drained = await asyncio.to_thread(self._tail.read, self._cursor, room)
        except Exception:
            # A locked or vanished file: the next poll reads again from the same cursor.
            _log.warning("Phoenix annotator could not read the stored scores", exc_info=True)
            self._drained, self._read_failed = False, True
            return
        self._read_failed = False
        self._ready.extend(_annotation(row) for row in found)

    def _delivered_up_to(self) -> Arrival:
        """The cursor to store: below every annotation still held (they complete out of order), else the read one."""
        held = [a.row for a in self._ready] + [a.row for a in self._posting] + [w.annotation.row for w in self._waiting]
        # Never above the read cursor: after a start-over (_tail) rows held from before have higher rowids.
        return min(min(held).before(), self._cursor) if held else self._cursor

    def _store_cursor(self) -> None:
        """Store the cursor in the background, unless it did not move, a write still runs, or another replica
        posts."""
        if self._stored is not None and self._leading:
            self._stored.save_soon(self._delivered_up_to())

    def _release_due(self) -> None:
        now = asyncio.get_running_loop().time()
        if any(w.due <= now for w in self._waiting):
            due = [w.annotation for w in self._waiting if w.due <= now]
            self._waiting = [w for w in self._waiting if w.due > now]
            self._ready.extendleft(reversed(due))

    async def _pause(self, read_closing: bool) -> None:
        """Sleep until the next poll, the next waiting annotation's turn, or ``stop``. ``read_closing``: whether
        the last read began after ``stop`` was called (the last read must)."""
        self._wake.clear()  # before reading ``_closing``: a stop() from now on ends the wait at once
        delay = self._poll_seconds
        if self._closing and not read_closing:
            # stop() came during the last read and its wake was just cleared: the last read is still to do.
            delay = 0.0
        elif self._closing and not self._drained and not self._read_failed and self.pending < self._queue_size:
            delay = 0.0  # stopping: read the rest of the store now
        elif self._closing:
            delay = _MAX_DELAY_SECONDS  # only the waiting annotations are left
        if self._waiting:
            next_due = min(w.due for w in self._waiting) - asyncio.get_running_loop().time()
            delay = min(delay, max(0.0, next_due))
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):  # distinct before Python 3.11
            await asyncio.wait_for(self._wake.wait(), delay)

    async def _post(self, client: httpx.AsyncClient, batch: list[Annotation]) -> None:
        span_ids = frozenset(a.span_id for a in batch)
        body = request_body(batch)
        delay = self._retry_seconds
        for attempt in range(self._max_retries + 1):
            reply = await self._send(client, body, span_ids)
            if reply.outcome is Delivery.SENT:
                self.sent += len(batch)
                self._forget(batch)
                return
            if reply.outcome is Delivery.MISSING:
                self._wait_for_spans(batch, reply)
                return
            if reply.outcome is Delivery.REFUSED:
                _log.warning("Phoenix refused %d annotation(s) (%s): dropped", len(batch), reply.reason)
                self._drop("refused", len(batch), batch)
                return
            if attempt < self._max_retries:
                # Also while stopping: ``stop``'s timeout bounds how long the retries may take.
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY_SECONDS)
        _log.warning("Phoenix did not take %d annotation(s) (%s): dropped", len(batch), reply.reason)
        self._drop("retries", len(batch), batch)

    async def _send(self, client: httpx.AsyncClient, body: dict[str, object], span_ids: frozenset[str]) -> Reply:
        try:
            response = await client.post(self.url, params={"sync": "true"}, json=body)
        except httpx.HTTPError as exc:
            return Reply(Delivery.RETRY, reason=f"{type(exc).__name__}: {exc}")
        return classify(response.status_code, response.text, span_ids)

    def _wait_for_spans(self, batch: list[Annotation], reply: Reply) -> None:
        """Hold the annotations of the spans Phoenix lacks (Phoenix wrote none of the batch); put the others
        first in line again."""
        now = asyncio.get_running_loop().time()
        self._ready.extendleft(reversed([a for a in batch if a.span_id not in reply.missing]))
        given_up: list[Annotation] = []
        for annotation in batch:
            if annotation.span_id not in reply.missing:
                continue
            key = (annotation.span_id, annotation.name)
            previous = self._missing.get(key)
            first = now if previous is None else previous.first_missing
            tries = 1 if previous is None else previous.tries + 1
            if now - first >= self._span_wait_seconds:
                given_up.append(annotation)
                continue
            pause = min(self._span_retry_seconds * 2 ** (tries - 1), _MAX_DELAY_SECONDS)
            waiting = self._missing[key] = _Waiting(annotation, first, now + pause, tries)
            self._waiting.append(waiting)
        if given_up:
            _log.warning(
                "%d annotation(s) dropped: their spans did not reach Phoenix in %g s (%s)",
                len(given_up),
                self._span_wait_seconds,
                reply.reason,
            )
            self._drop("span_missing", len(given_up), given_up)

    def _forget(self, annotations: list[Annotation]) -> None:
        if self._missing:
            for annotation in annotations:
                self._missing.pop((annotation.span_id, annotation.name), None)

    def _drop(self, reason: str, count: int, annotations: list[Annotation] | None = None) -> None:
        self.dropped_by[reason] = self.dropped_by.get(reason, 0) + count
        self._forget(annotations or [])


def _annotation(row: TailRow) -> Annotation:
    """A stored score as Phoenix's annotation of its span (Phoenix spells span ids in lower case)."""
    return Annotation(
        span_id=row.span_id.lower(),
        name=row.metric,
        score=row.value,
        row=row.row,
        label=row.label,
        explanation=row.explanation,
        judge=row.judge,
        source=row.source,
    )
