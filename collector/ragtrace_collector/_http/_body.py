"""Reading an OTLP/HTTP request: its token, content type and encoding checked, its body read within the limits.

``read_otlp`` returns the media type and the body (inflated when gzip) or raises ``Reject``: 401 without the
token, 415 for a content type or encoding not served, 413 for a body (or its inflated size) over the limit,
429 when its bytes would pass the in-flight budget, 400 for broken gzip or a sender that left mid-body, 408 for
a body that arrives too slowly. Every byte, as received and as inflated, is taken from the budget through the
request's ``Hold`` as it arrives.

A body must arrive within ``BODY_GRACE_SECONDS`` plus one second per ``MIN_BODY_BYTES_PER_SECOND`` of it (its
declared length, or what has arrived so far): a sender dripping a byte every two seconds would otherwise hold
one of the requests in flight for as long as it likes, and 256 of them every one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

from google.rpc import code_pb2
from starlette.requests import ClientDisconnect, Request

from ragtrace_collector._budget import RETRY_AFTER_SECONDS, Hold, OverBudget
from ragtrace_collector._http import _gzip
from ragtrace_collector._http._replies import JSON, PROTOBUF, PROTOBUF_ALIASES, Reject, media_type
from ragtrace_collector._http._token import bearer_matches

__all__ = ["DEFAULT_MAX_BODY_BYTES", "read_otlp"]

_log = logging.getLogger("ragtrace_collector")

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest accepted body, after gzip decompression (64 MiB)."""

BODY_GRACE_SECONDS = 30.0
"""Time any body has to arrive, however small (a sender's own pauses, a slow start)."""

MIN_BODY_BYTES_PER_SECOND = 64 * 1024
"""The slowest sustained rate a body may arrive at past the grace (a 64 MiB body: 17 minutes)."""

_GZIP_INLINE_BYTES = 64 * 1024
"""A gzip body up to this size is inflated on the event loop; a larger one in a worker thread, so one
big export (zlib inflates 64 MiB in 0.1-0.3 s) does not hold up every other request meanwhile."""


async def read_otlp(request: Request, hold: Hold, *, token: str | None, max_body_bytes: int) -> tuple[str, bytes]:
    """Check the token, content type and encoding; return the media type and the (gunzipped) body.

    The body's bytes, as received and as inflated, are taken from the in-flight budget through ``hold``.
    """
    media = media_type(request)
    if token and not bearer_matches(request.headers.get("authorization", ""), token):
        raise Reject(401, code_pb2.UNAUTHENTICATED, "missing or wrong bearer token")
    if media not in PROTOBUF_ALIASES and media != JSON:
        raise Reject(
            415,
            code_pb2.INVALID_ARGUMENT,
            f"content type {media or '(none)'!r} is not supported: send {PROTOBUF} or {JSON}",
        )
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        raise Reject(415, code_pb2.INVALID_ARGUMENT, f"content encoding {encoding!r} is not supported")
    body = await _read_body(request, max_body_bytes, hold)
    if encoding == "gzip":

        def take(size: int) -> None:  # each inflated chunk, before the next is inflated
            _take(hold, size)

        if len(body) <= _GZIP_INLINE_BYTES:
            body = _gzip.gunzip(body, max_body_bytes, take)
        else:
            # zlib releases the GIL while it inflates: the loop serves other requests meanwhile.
            body = await asyncio.to_thread(_gzip.gunzip, body, max_body_bytes, take)
    return media, body


def _take(hold: Hold, size: int) -> None:
    """Hold ``size`` more bytes of the in-flight budget, or refuse the request with a retryable 429."""
    try:
        hold.take(size)
    except OverBudget as exc:
        raise _over_budget(exc) from None


def _check(hold: Hold, size: int) -> None:
    """Refuse the request with a retryable 429 if ``size`` more bytes would not fit now; hold nothing."""
    try:
        hold.check(size)
    except OverBudget as exc:
        raise _over_budget(exc) from None


class _Deadline:
    """Cancels the reading task when the body's time is up, without a task of its own per chunk.

    ``asyncio.wait_for`` wrapped each chunk's read in a task, and those tasks kept their chunks until the garbage
    collector came: a body was held twice. ``asyncio.timeout`` does not, but needs Python 3.11.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._started = self._loop.time()
        self._fired = False

    @contextlib.contextmanager
    def after(self, seconds: float) -> Iterator[None]:
        """Cancel the task if the block has not finished ``seconds`` after the body began."""
        handle = self._loop.call_at(self._started + seconds, self._fire)
        try:
            yield
        finally:
            handle.cancel()

    def _fire(self) -> None:
        self._fired = True
        if self._task is not None:
            self._task.cancel()

    def expired(self) -> bool:
        """Whether a cancellation was this deadline's (then it is taken back: the task carries on to reply)."""
        if not self._fired:
            return False
        uncancel = getattr(self._task, "uncancel", None)  # Python 3.11+
        if uncancel is not None:
            uncancel()
        return True


def _over_budget(exc: OverBudget) -> Reject:
    return Reject(429, code_pb2.RESOURCE_EXHAUSTED, str(exc), retry_after=RETRY_AFTER_SECONDS)


async def _read_body(request: Request, limit: int, hold: Hold) -> bytes:
    """The body, its bytes taken from the in-flight budget as they arrive (413 past ``limit``, 429 past the budget).

    A declared ``Content-Length`` is checked against the budget before a byte is read (a refused sender that waits
    for "100 Continue" sends none) but not taken: a sender that declares 64 MiB and sends nothing, or sends it
    slowly, holds only what it sent, and cannot keep the budget from every other sender.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > limit:
            raise Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"body of {declared} bytes is over the {limit}-byte limit")
        _check(hold, int(declared))
    parts: list[bytes] = []
    size = 0
    expected = int(declared) if declared is not None and declared.isdigit() else 0
    deadline = _Deadline()
    chunks = request.stream().__aiter__()
    try:
        while True:
            # The deadline moves with what has arrived when no length was declared (chunked encoding).
            allowed = BODY_GRACE_SECONDS + max(expected, size) / MIN_BODY_BYTES_PER_SECOND
            try:
                with deadline.after(allowed):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except asyncio.CancelledError:
                if not deadline.expired():
                    raise
                raise Reject(
                    408,
                    code_pb2.DEADLINE_EXCEEDED,
                    f"the body arrived too slowly: {size} bytes in {allowed:.0f} s",
                ) from None
            size += len(chunk)
            if size > limit:
                raise Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"body is over the {limit}-byte limit")
            _take(hold, len(chunk))
            parts.append(chunk)
    except ClientDisconnect:
        # An ordinary event (a sender's timeout, a restart), not a bug: one line, not the traceback the server
        # would log for an exception out of the app.
        peer = f"{request.client.host}:{request.client.port}" if request.client else "a sender"
        _log.warning(
            "%s closed the connection after %d of %s bytes of its %s body: nothing stored",
            peer,
            size,
            declared if declared is not None else "?",
            request.url.path,
        )
        raise Reject(400, code_pb2.CANCELLED, "the sender closed the connection before its body arrived") from None
    if len(parts) > 1:
        # Joining copies the body: for a moment it is held twice, and the budget must say so.
        _take(hold, size)
    return b"".join(parts)
