"""The collector's Starlette app: the routes (``POST /v1/traces``, ``POST /v1/logs``, ``POST /v1/metrics``,
``GET /healthz`` and the page's) and what each receiver does with a request it has read.

Every OTLP export is read the same way (``_receive``): held against the in-flight budget until its rows are
committed, then answered with a 200 (partial success when some spans or log records were rejected); a body that
does not decode is a 400, a store that cannot commit a 503 with ``Retry-After``. A trace export stores its spans,
a logs export the evaluations it carries (``_logs``); a metrics export is answered, never stored.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from google.protobuf.message import Message
from google.rpc import code_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from ragtrace_collector._budget import RETRY_AFTER_SECONDS, ByteBudget, OverBudget
from ragtrace_collector._decoded import DecodedTooLarge, hold_decoded
from ragtrace_collector._http._auth import Access, PageGuard
from ragtrace_collector._http._body import DEFAULT_MAX_BODY_BYTES, read_otlp
from ragtrace_collector._http._logs import LOGS_PATH, accept_logs, logs_reply
from ragtrace_collector._http._replies import (
    JSON,
    PROTOBUF,
    Reject,
    encode,
    media_type,
    metrics_not_stored,
    status_response,
    traces_reply,
)
from ragtrace_collector._otlp import OtlpDecodeError
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._stats import Stats, http_refusal_reason
from ragtrace_collector._store import StoreError

__all__ = ["METRICS_PATH", "TRACES_PATH", "create_app"]

_log = logging.getLogger("ragtrace_collector")

TRACES_PATH = "/v1/traces"
"""The OTLP/HTTP traces path."""

METRICS_PATH = "/v1/metrics"
"""The OTLP/HTTP metrics path: answered, not stored (see ``METRICS_NOT_STORED``)."""

_HEALTHZ_PATH = "/healthz"
_STORE_RETRY_AFTER_SECONDS = 5

_Handle = Callable[[str, bytes], Awaitable[Message]]
"""What a receiver does with a request's media type and body: its rows committed, the OTLP reply."""


def create_app(
    pipeline: Pipeline,
    *,
    token: str | None = None,
    ingest_token: str | None = None,
    access: Access | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    budget: ByteBudget | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    stats: Stats | None = None,
    not_found: Callable[[Request, Exception], Awaitable[Response]] | None = None,
) -> Starlette:
    """The collector's HTTP app: the OTLP receivers, ``GET /healthz`` and ``extra_routes`` (the page).

    ``ingest_token``: when set, ``/v1/traces``, ``/v1/logs`` and ``/v1/metrics`` require ``Authorization: Bearer
    <ingest_token>`` (the scheme in any case) and answer without it in OTLP terms. ``access``: who may use every
    other path but ``/healthz`` (the pages, the API, ``/metrics``), guarded by ``_auth.PageGuard``: its admin token,
    the Host names answered, the trusted user header. ``token``: one token doing both (``--token``), for what
    ``ingest_token`` or ``access`` does not set; the guard runs whatever they are (Host, Origin, CSRF, framing).
    ``budget``: the in-flight byte budget the request bodies are held against (shared with the gRPC
    receiver); a budget of its own with the default limit when not given. ``stats``: counts the exports refused
    whole. ``not_found``: the answer to a path no route serves (the pages' error page), else Starlette's.
    """
    budget = budget if budget is not None else ByteBudget()
    sender_token = ingest_token if ingest_token is not None else token
    access = access if access is not None else Access(admin_token=token)

    async def receive(request: Request, handle: _Handle, export: str) -> Response:
        """Read the request within the limits and answer ``handle``'s reply, or the refusal, in its encoding.

        ``export`` (traces, logs, metrics) says how to estimate what the body decodes to (``_decoded``)."""
        reply_type = JSON if media_type(request) == JSON else PROTOBUF
        # Held until the rows are committed: the body, and the rows decoded from it, live until then.
        with budget.hold() as hold:
            try:
                media, body = await read_otlp(request, hold, token=sender_token, max_body_bytes=max_body_bytes)
                try:
                    # What the body decodes to, held before it is decoded: wire bytes alone bound nothing.
                    await hold_decoded(hold, body, export=export, as_json=media == JSON, max_body_bytes=max_body_bytes)
                except DecodedTooLarge as exc:
                    raise Reject(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
                except OverBudget as exc:
                    raise Reject(429, code_pb2.RESOURCE_EXHAUSTED, str(exc), retry_after=RETRY_AFTER_SECONDS) from None
                try:
                    reply = await handle(media, body)
                except OtlpDecodeError as exc:
                    raise Reject(400, code_pb2.INVALID_ARGUMENT, f"malformed OTLP body: {exc}") from None
                except DecodedTooLarge as exc:  # a decode process's memory limit
                    raise Reject(413, code_pb2.RESOURCE_EXHAUSTED, str(exc)) from None
                except StoreError as exc:
                    _log.error("store write failed, export not acknowledged: %s", exc)
                    raise Reject(
                        503,
                        code_pb2.UNAVAILABLE,
                        "store unavailable, retry later",
                        retry_after=_STORE_RETRY_AFTER_SECONDS,
                    ) from None
            except Reject as reject:
                if stats is not None:
                    stats.refused(
                        "http", http_refusal_reason(reject.status, cancelled=reject.code == code_pb2.CANCELLED)
                    )
                return status_response(reject, reply_type)
        return Response(encode(reply, reply_type), status_code=200, media_type=reply_type)

    async def store_spans(media: str, body: bytes) -> Message:
        batch = await (pipeline.accept_json(body) if media == JSON else pipeline.accept_protobuf(body))
        if batch.rejected:
            _log.warning("partial success: %s", batch.error_message)
        return traces_reply(batch)

    async def store_evaluations(media: str, body: bytes) -> Message:
        return logs_reply(await accept_logs(pipeline, body, json_body=media == JSON))

    async def answer_metrics(media: str, body: bytes) -> Message:
        # ragtrace.configure() exports the score histogram to the same endpoint as the spans by default.
        # The collector derives its statistics from the spans it stores and keeps no metrics: it says so
        # with the spec's partial success (every data point rejected, do not retry) instead of a 404 the
        # exporter would log every minute.
        return metrics_not_stored(body, json_body=media == JSON)

    async def traces(request: Request) -> Response:
        return await receive(request, store_spans, "traces")

    async def logs(request: Request) -> Response:
        return await receive(request, store_evaluations, "logs")

    async def metrics(request: Request) -> Response:
        return await receive(request, answer_metrics, "metrics")

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes: list[BaseRoute] = [
        Route(TRACES_PATH, traces, methods=["POST"]),
        Route(LOGS_PATH, logs, methods=["POST"]),
        Route(METRICS_PATH, metrics, methods=["POST"]),
        Route(_HEALTHZ_PATH, healthz, methods=["GET"]),
        *extra_routes,
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found} if not_found is not None else None)
    # The page shows stored queries and answers and changes alerts: guarded whatever the tokens (Host, Origin,
    # CSRF, framing), and with an admin token as private as the receivers. The receivers answer in OTLP terms and
    # need no browser defences (their content types need a CORS preflight), and a health check needs nothing.
    app.add_middleware(PageGuard, access=access, open_paths=(TRACES_PATH, LOGS_PATH, METRICS_PATH, _HEALTHZ_PATH))
    return app
