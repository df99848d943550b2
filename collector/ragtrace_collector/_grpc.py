"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on a grpc.aio server.

``opentelemetry.proto.collector.logs.v1.LogsService/Export`` stores the evaluations a logs export carries, exactly
as ``POST /v1/logs`` does (``ragtrace_collector._http.accept_logs``), with the same replies as traces.
``opentelemetry.proto.collector.metrics.v1.MetricsService/Export`` is answered too, not stored, exactly as
``POST /v1/metrics`` is (``ragtrace_collector._http.metrics_not_stored``): an app pointed at this port sends its
score histogram here by default, and must get the spec's partial success, not ``UNIMPLEMENTED``.

The request is taken as raw bytes and decoded by ``ragtrace_collector._otlp`` (not by grpcio), so a span
with invalid UTF-8 costs that span, not the whole export: the reply's ``partial_success`` counts it.
Status codes follow the OTLP specification: ``INVALID_ARGUMENT`` for a malformed body (not retryable),
``UNAUTHENTICATED`` for a missing or wrong bearer token, ``UNAVAILABLE`` when the store could not commit
(retryable: nothing was acknowledged), ``RESOURCE_EXHAUSTED`` from grpcio for a message over the limit, and
``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` (retryable: the spec makes it so only with one) when the
message would pass the in-flight byte budget shared with the HTTP receiver (``_budget.ByteBudget``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import grpc
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from ragtrace_collector._budget import RETRY_AFTER_SECONDS, ByteBudget, Hold, OverBudget
from ragtrace_collector._decoded import DecodedTooLarge, hold_decoded
from ragtrace_collector._http import accept_logs, bearer_matches, logs_reply, metrics_not_stored, traces_reply
from ragtrace_collector._otlp import OtlpDecodeError
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._stats import Stats
from ragtrace_collector._store import StoreError

_log = logging.getLogger("ragtrace_collector")

SERVICE_NAME = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
"""``opentelemetry.proto.collector.trace.v1.TraceService``, from the proto's own descriptor."""

LOGS_SERVICE_NAME = logs_service_pb2.DESCRIPTOR.services_by_name["LogsService"].full_name
"""``opentelemetry.proto.collector.logs.v1.LogsService``, from the proto's own descriptor."""

METRICS_SERVICE_NAME = metrics_service_pb2.DESCRIPTOR.services_by_name["MetricsService"].full_name
"""``opentelemetry.proto.collector.metrics.v1.MetricsService``, from the proto's own descriptor."""


RETRY_INFO_KEY = "google.rpc.retryinfo-bin"
"""Trailing metadata key of a serialised ``google.rpc.RetryInfo``: how long the sender should wait."""

_RETRY_LATER = ((RETRY_INFO_KEY, RetryInfo(retry_delay=Duration(seconds=RETRY_AFTER_SECONDS)).SerializeToString()),)

CONNECTION_OPTIONS: tuple[tuple[str, int], ...] = (
    # A connection must finish its HTTP/2 handshake in 10 s (grpc's default is 120 s).
    ("grpc.server_handshake_timeout_ms", 10_000),
    # One connection holds at most 100 calls at once (unbounded by default).
    ("grpc.max_concurrent_streams", 100),
    # A connection with no call for 5 minutes is closed (GOAWAY; exporters reconnect when they next export).
    ("grpc.max_connection_idle_ms", 300_000),
    # A peer that stops answering pings is dropped: one ping after 2 minutes of silence, 20 s to answer.
    ("grpc.keepalive_time_ms", 120_000),
    ("grpc.keepalive_timeout_ms", 20_000),
)
"""Connection limits of the gRPC port: no connection holds it idle, none takes a thread or memory unbounded."""


class _Refusal(Exception):
    """The call is to be aborted with ``code``, ``details`` and ``trailing_metadata``. Raised by the handlers and
    turned into ``context.abort`` by ``_answering``: grpc keeps the exception an abort raises, and with it every
    frame of its traceback, so an abort raised where the request's bytes are a local kept them (two 8 MiB bodies
    stayed in memory after their calls were refused)."""

    def __init__(
        self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[tuple[str, str | bytes], ...] = ()
    ) -> None:
        super().__init__(details)
        self.code, self.details, self.trailing_metadata = code, details, trailing_metadata


def _answering(behaviour: _Export) -> _Export:
    """``behaviour`` with its ``_Refusal`` turned into ``context.abort`` once no frame holds the request."""

    async def answer(request: bytes, context: grpc.aio.ServicerContext[bytes, Message]) -> object:
        try:
            return await behaviour(request, context)
        except _Refusal as refusal:
            code, details, trailing = refusal.code, refusal.details, refusal.trailing_metadata
        del request  # the only frame left that holds it; the refusal (and its traceback) went with the except
        await context.abort(code, details, trailing_metadata=trailing)
        raise AssertionError("context.abort raises")  # for the type checker: abort never returns

    return answer


_Export = Callable[[bytes, "grpc.aio.ServicerContext[bytes, Message]"], Awaitable[object]]


def _identity(payload: bytes) -> bytes:
    return payload


def _serialize(reply: Message) -> bytes:
    return bytes(reply.SerializeToString())


def create_grpc_server(
    pipeline: Pipeline,
    address: str,
    *,
    token: str | None = None,
    max_message_bytes: int = 64 * 1024 * 1024,
    budget: ByteBudget | None = None,
    stats: Stats | None = None,
) -> tuple[grpc.aio.Server, int]:
    """A grpc.aio server bound to ``address`` (``host:port``, port 0 picks one); return it and the port.

    ``budget``: the in-flight byte budget each message is held against while it is handled (shared with the
    HTTP receiver); a budget of its own with the default limit when not given. ``stats``: counts the exports (traces,
    logs and metrics) refused whole.
    Call inside the running event loop; ``await server.start()`` to serve, ``await server.stop(grace)`` to stop.
    """
    budget = budget if budget is not None else ByteBudget()

    def refused(reason: str) -> None:
        if stats is not None:
            stats.refused("grpc", reason)

    async def check_token(context: grpc.aio.ServicerContext[bytes, Message]) -> None:
        """Abort with ``UNAUTHENTICATED`` unless the metadata carries ``authorization: Bearer <token>``."""
        if token:
            given = dict(context.invocation_metadata() or ()).get("authorization", "")
            if not isinstance(given, str) or not bearer_matches(given, token):
                refused("unauthenticated")
                raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    async def take(hold: Hold, size: int, context: grpc.aio.ServicerContext[bytes, Message]) -> None:
        """Hold ``size`` bytes of the budget, or abort with a retryable ``RESOURCE_EXHAUSTED``."""
        try:
            hold.take(size)
        except OverBudget as exc:
            refused("over_budget")
            raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc), trailing_metadata=_RETRY_LATER) from None

    async def hold_decoded_size(
        hold: Hold, request: bytes, export: str, context: grpc.aio.ServicerContext[bytes, Message]
    ) -> None:
        """Hold what ``request`` decodes to (``_decoded``), or abort: ``RESOURCE_EXHAUSTED`` without a retry delay
        past the per-request bound (the same message would be refused again), with one past the budget."""
        try:
            await hold_decoded(hold, request, export=export, as_json=False, max_body_bytes=max_message_bytes)
        except DecodedTooLarge as exc:
            refused("too_large")
            raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)) from None
        except OverBudget as exc:
            refused("over_budget")
            raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc), trailing_metadata=_RETRY_LATER) from None

    async def receive(
        request: bytes,
        context: grpc.aio.ServicerContext[bytes, Message],
        store: Callable[[bytes], Awaitable[Message]],
        export: str,
    ) -> Message:
        """``store(request)``'s reply once its rows are committed, or the call aborted with the OTLP status."""
        await check_token(context)
        with budget.hold() as hold:
            await take(hold, len(request), context)
            await hold_decoded_size(hold, request, export, context)
            try:
                return await store(request)
            except OtlpDecodeError as exc:
                refused("malformed")
                raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"malformed OTLP body: {exc}") from None
            except DecodedTooLarge as exc:  # a decode process's memory limit
                refused("too_large")
                raise _Refusal(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc)) from None
            except StoreError as exc:
                _log.error("store write failed, export not acknowledged: %s", exc)
                refused("store_unavailable")
                raise _Refusal(grpc.StatusCode.UNAVAILABLE, "store unavailable, retry later") from None
        raise AssertionError("every path above returns or raises")  # for the type checker

    async def store_spans(request: bytes) -> Message:
        batch = await pipeline.accept_protobuf(request)
        if batch.rejected or batch.errors:
            _log.warning("partial success: %s", batch.error_message)
        return traces_reply(batch)

    async def store_evaluations(request: bytes) -> Message:
        return logs_reply(await accept_logs(pipeline, request))

    async def export(request: bytes, context: grpc.aio.ServicerContext[bytes, Message]) -> object:
        return await receive(request, context, store_spans, "traces")

    async def export_logs(request: bytes, context: grpc.aio.ServicerContext[bytes, Message]) -> object:
        return await receive(request, context, store_evaluations, "logs")

    async def export_metrics(request: bytes, context: grpc.aio.ServicerContext[bytes, Message]) -> object:
        await check_token(context)
        with budget.hold() as hold:
            await take(hold, len(request), context)
            await hold_decoded_size(hold, request, "metrics", context)
            try:
                reply = metrics_not_stored(request)
            except OtlpDecodeError as exc:
                raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"malformed OTLP body: {exc}") from None
        return reply

    def export_handler(service: str, behaviour: _Export) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            service,
            {
                "Export": grpc.unary_unary_rpc_method_handler(
                    _answering(behaviour),
                    request_deserializer=_identity,
                    response_serializer=_serialize,
                )
            },
        )

    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
            *CONNECTION_OPTIONS,
        ]
    )
    server.add_generic_rpc_handlers(
        (
            export_handler(SERVICE_NAME, export),
            export_handler(LOGS_SERVICE_NAME, export_logs),
            export_handler(METRICS_SERVICE_NAME, export_metrics),
        )
    )
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:  # newer grpcio raises where older ones returned 0
        raise OSError(f"could not bind the OTLP/gRPC receiver to {address}: {exc}") from None
    if port == 0:
        raise OSError(f"could not bind the OTLP/gRPC receiver to {address}")
    return server, port
