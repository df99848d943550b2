"""OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, optionally gzip), as a Starlette app.

Replies follow the OTLP/HTTP specification:

* 200 with an ``ExportTraceServiceResponse`` (in the request's encoding) once the rows are committed; when
  some spans were rejected, its ``partial_success`` says how many and why.
* 400 malformed body (not protobuf / not JSON / broken gzip): the sender must not retry.
* 401 missing or wrong bearer token, 413 body (or its decompressed size) over the limit, 415 unsupported
  content type or encoding.
* 429 with ``Retry-After`` when the bytes of every request in flight would pass the in-flight budget
  (``_budget.ByteBudget``): nothing was read into the store, the sender retries.
* 503 with ``Retry-After`` when the store could not commit: nothing was acknowledged, the sender retries.

Error bodies are a ``google.rpc.Status`` in the request's encoding. A sender that closes the connection before
its whole body arrived (an exporter's timeout, a crash) costs one WARNING line and nothing else: nothing of the
export is stored and there is no one to reply to.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import zlib
from collections.abc import Callable, Sequence

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ragtrace_collector._budget import RETRY_AFTER_SECONDS, ByteBudget, Hold, OverBudget
from ragtrace_collector._otlp import Batch, OtlpDecodeError
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._store import StoreError

_log = logging.getLogger("ragtrace_collector")

TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP traces path."""

METRICS_PATH = "/v1/metrics"
"""The OTLP/HTTP metrics path: answered, not stored (see ``METRICS_NOT_STORED``)."""

METRICS_NOT_STORED = (
    "ragtrace-collector stores spans, not metrics (it derives score statistics from the spans): send metrics "
    "to a metrics backend with OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, or configure(export_metrics=False)"
)
"""The partial-success message of every metrics export."""

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest accepted body, after gzip decompression (64 MiB)."""

PROTOBUF = "application/x-protobuf"
_PROTOBUF_ALIASES = frozenset({PROTOBUF, "application/protobuf"})  # some senders use the unregistered name
JSON = "application/json"
_STORE_RETRY_AFTER_SECONDS = 5


class _Reject(Exception):
    def __init__(self, status: int, code: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` value is ``Bearer <token>``, the scheme in any case (RFC 7235 section 2.1).

    The token itself is compared in constant time.
    """
    scheme, _, credentials = authorization.strip().partition(" ")
    given = credentials.strip().encode("utf-8", errors="replace")
    # Compare even when the scheme is wrong, so the time taken does not tell which part was.
    same = hmac.compare_digest(given, token.encode("utf-8"))
    return scheme.lower() == "bearer" and same


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


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


def _over_budget(exc: OverBudget) -> _Reject:
    return _Reject(429, code_pb2.RESOURCE_EXHAUSTED, str(exc), retry_after=RETRY_AFTER_SECONDS)


async def _read_body(request: Request, limit: int, hold: Hold) -> bytes:
    """The body, its bytes taken from the in-flight budget as they arrive (413 past ``limit``, 429 past the budget).

    A declared ``Content-Length`` is checked against the budget before a byte is read (a refused sender that waits
    for "100 Continue" sends none) but not taken: a sender that declares 64 MiB and sends nothing, or sends it
    slowly, holds only what it sent, and cannot keep the budget from every other sender.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > limit:
            raise _Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"body of {declared} bytes is over the {limit}-byte limit")
        _check(hold, int(declared))
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"body is over the {limit}-byte limit")
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
        raise _Reject(400, code_pb2.CANCELLED, "the sender closed the connection before its body arrived") from None
    return b"".join(parts)


_GZIP_MAGIC = b"\x1f\x8b"
# Compressed bytes handed to zlib at a time. At a member's end zlib copies the input it did not use; handing it
# the whole rest of the body made a body of many small members cost time quadratic in its size.
_GZIP_PIECE_BYTES = 16 * 1024
_GZIP_OUT_BYTES = 256 * 1024
"""Inflated bytes zlib may produce in one call: each such chunk is taken from the in-flight budget before the
next is inflated, so a body refused for the budget has allocated at most this much past it."""
_GZIP_INLINE_BYTES = 64 * 1024
"""A gzip body up to this size is inflated on the event loop; a larger one in a worker thread, so one
big export (zlib inflates 64 MiB in 0.1-0.3 s) does not hold up every other request meanwhile."""


def _gunzip(body: bytes, limit: int, take: Callable[[int], None]) -> bytes:
    """Every member of a gzip body, concatenated (RFC 1952 section 2.2: a gzip file is a series of members).

    Raise 400 on broken, truncated or trailing non-gzip data (NUL padding after the last member is tolerated,
    as gzip(1) and Python's gzip module do), 413 once the output passes ``limit``. The output is inflated in
    chunks of at most ``_GZIP_OUT_BYTES``, each handed to ``take`` (which holds it against the in-flight budget,
    or raises to refuse the request) before the next is inflated. Time is linear in the body.
    """
    parts: list[bytes] = []
    size = 0
    pos = 0  # start of the input not yet consumed
    view = memoryview(body)  # slices share the body: no copy
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        output_full = False  # the last call stopped at its output bound: zlib may have more without more input
        while not inflater.eof:
            piece = view[pos : pos + _GZIP_PIECE_BYTES]
            if not piece and not output_full:
                raise _Reject(400, code_pb2.INVALID_ARGUMENT, "gzip body is truncated")
            room = min(limit + 1 - size, _GZIP_OUT_BYTES)  # always >= 1: 0 would mean "no bound"
            try:
                # Bounded decompression: a small gzip bomb must not become a huge allocation.
                data = inflater.decompress(piece, room)
            except zlib.error as exc:
                raise _Reject(400, code_pb2.INVALID_ARGUMENT, f"body is not valid gzip: {exc}") from None
            size += len(data)
            if size > limit:
                raise _Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"decompressed body is over the {limit}-byte limit")
            take(len(data))
            parts.append(data)
            output_full = len(data) == room
            # The input zlib did not use: past the member's end (unused_data), or left for want of output room
            # (unconsumed_tail, handed to it again from the body). At the end, unconsumed_tail may repeat
            # unused_data rather than be empty.
            left = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
            pos += len(piece) - len(left)
        if not body.startswith(_GZIP_MAGIC, pos):
            if body.count(0, pos) == len(body) - pos:  # nothing left, or NUL padding only
                return b"".join(parts)
            raise _Reject(
                400, code_pb2.INVALID_ARGUMENT, f"{len(body) - pos} bytes of trailing data after the gzip body"
            )


def _encode(message: object, media_type: str) -> bytes:
    if media_type == JSON:
        return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")
    return bytes(message.SerializeToString())  # type: ignore[attr-defined]


def _status_response(reject: _Reject, media_type: str) -> Response:
    body = _encode(status_pb2.Status(code=reject.code, message=reject.message), media_type)
    headers = {"Retry-After": str(reject.retry_after)} if reject.retry_after is not None else None
    if reject.status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return Response(body, status_code=reject.status, media_type=media_type, headers=headers)


def _success(batch: Batch, media_type: str) -> Response:
    reply = ExportTraceServiceResponse()
    if batch.rejected or batch.errors:
        reply.partial_success.rejected_spans = batch.rejected
        reply.partial_success.error_message = batch.error_message or "; ".join(batch.errors)
    return Response(_encode(reply, media_type), status_code=200, media_type=media_type)


def metrics_not_stored(body: bytes, *, json_body: bool = False) -> ExportMetricsServiceResponse:
    """The reply to a metrics export (OTLP/HTTP and OTLP/gRPC alike): nothing is stored.

    Every data point is rejected in ``partial_success`` with ``METRICS_NOT_STORED``; an export without data
    points gets an empty reply (the spec's full success). Raise ``OtlpDecodeError`` when ``body`` (protobuf, or
    OTLP/JSON with ``json_body``) is not an ``ExportMetricsServiceRequest``.
    """
    request = ExportMetricsServiceRequest()
    try:
        if json_body:
            json_format.Parse(body, request, ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
    except (json_format.ParseError, DecodeError, ValueError) as exc:
        raise OtlpDecodeError(str(exc)) from None
    points = 0
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    points += len(getattr(metric, kind).data_points)
    reply = ExportMetricsServiceResponse()
    if points:
        reply.partial_success.rejected_data_points = points
        reply.partial_success.error_message = METRICS_NOT_STORED
    return reply


def create_app(
    pipeline: Pipeline,
    *,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    budget: ByteBudget | None = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The collector's HTTP app: ``POST /v1/traces``, ``GET /healthz`` and ``extra_routes`` (the page).

    ``token``: when set, ``/v1/traces`` and ``/v1/metrics`` require ``Authorization: Bearer <token>`` (the scheme in
    any case) and answer without it in OTLP terms; every other path but ``/healthz`` requires it too.
    ``budget``: the in-flight byte budget the request bodies are held against (shared with the gRPC receiver);
    a budget of its own with the default limit when not given.
    """
    budget = budget if budget is not None else ByteBudget()

    async def read_otlp(request: Request, hold: Hold) -> tuple[str, bytes]:
        """Check the token, content type and encoding; return the media type and the (gunzipped) body.

        The body's bytes, as received and as inflated, are taken from the in-flight budget through ``hold``.
        """
        media_type = _media_type(request)
        if token and not bearer_matches(request.headers.get("authorization", ""), token):
            raise _Reject(401, code_pb2.UNAUTHENTICATED, "missing or wrong bearer token")
        if media_type not in _PROTOBUF_ALIASES and media_type != JSON:
            raise _Reject(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"content type {media_type or '(none)'!r} is not supported: send {PROTOBUF} or {JSON}",
            )
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "gzip", ""):
            raise _Reject(415, code_pb2.INVALID_ARGUMENT, f"content encoding {encoding!r} is not supported")
        body = await _read_body(request, max_body_bytes, hold)
        if encoding == "gzip":

            def take(size: int) -> None:  # each inflated chunk, before the next is inflated
                _take(hold, size)

            if len(body) <= _GZIP_INLINE_BYTES:
                body = _gunzip(body, max_body_bytes, take)
            else:
                # zlib releases the GIL while it inflates: the loop serves other requests meanwhile.
                body = await asyncio.to_thread(_gunzip, body, max_body_bytes, take)
        return media_type, body

    async def traces(request: Request) -> Response:
        reply_type = JSON if _media_type(request) == JSON else PROTOBUF
        # Held until the rows are committed: the body, and the rows decoded from it, live until then.
        with budget.hold() as hold:
            try:
                media_type, body = await read_otlp(request, hold)
                try:
                    if media_type == JSON:
                        batch = await pipeline.accept_json(body)
                    else:
                        batch = await pipeline.accept_protobuf(body)
                except OtlpDecodeError as exc:
                    raise _Reject(400, code_pb2.INVALID_ARGUMENT, f"malformed OTLP body: {exc}") from None
                except StoreError as exc:
                    _log.error("store write failed, export not acknowledged: %s", exc)
                    raise _Reject(
                        503,
                        code_pb2.UNAVAILABLE,
                        "store unavailable, retry later",
                        retry_after=_STORE_RETRY_AFTER_SECONDS,
                    ) from None
            except _Reject as reject:
                return _status_response(reject, reply_type)
        if batch.rejected:
            _log.warning("partial success: %s", batch.error_message)
        return _success(batch, reply_type)

    async def metrics(request: Request) -> Response:
        # ragtrace.configure() exports the score histogram to the same endpoint as the spans by default.
        # The collector derives its statistics from the spans it stores and keeps no metrics: it says so
        # with the spec's partial success (every data point rejected, do not retry) instead of a 404 the
        # exporter would log every minute.
        reply_type = JSON if _media_type(request) == JSON else PROTOBUF
        with budget.hold() as hold:
            try:
                media_type, body = await read_otlp(request, hold)
                try:
                    reply = metrics_not_stored(body, json_body=media_type == JSON)
                except OtlpDecodeError as exc:
                    raise _Reject(400, code_pb2.INVALID_ARGUMENT, f"malformed OTLP body: {exc}") from None
            except _Reject as reject:
                return _status_response(reject, reply_type)
        return Response(_encode(reply, reply_type), status_code=200, media_type=reply_type)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes: list[BaseRoute] = [
        Route(TRACES_PATH, traces, methods=["POST"]),
        Route(METRICS_PATH, metrics, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        *extra_routes,
    ]
    app = Starlette(routes=routes)
    if token:
        # The page shows stored queries and answers: with a token set it is as private as the receiver.
        app.add_middleware(_PageTokenMiddleware, token=token)
    return app


class _PageTokenMiddleware:
    """Require the token on every path but the receivers (which answer in OTLP terms) and ``/healthz``.

    Accepts ``Authorization: Bearer <token>`` or, for a browser, ``?token=<token>``.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in (TRACES_PATH, METRICS_PATH, "/healthz"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given_query = request.query_params.get("token", "").encode("utf-8", errors="replace")
        header_ok = bearer_matches(request.headers.get("authorization", ""), self.token)
        if header_ok or hmac.compare_digest(given_query, self.token.encode("utf-8")):
            await self.app(scope, receive, send)
            return
        response = PlainTextResponse(
            "this collector needs its token: add ?token=... to the URL\n",
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)
