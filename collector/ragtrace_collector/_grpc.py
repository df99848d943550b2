"""OTLP/gRPC receiver: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on a grpc.aio server.

The request is taken as raw bytes and decoded by ``ragtrace_collector._otlp`` (not by grpcio), so a span
with invalid UTF-8 costs that span, not the whole export: the reply's ``partial_success`` counts it.
Status codes follow the OTLP specification: ``INVALID_ARGUMENT`` for a malformed body (not retryable),
``UNAUTHENTICATED`` for a missing or wrong bearer token, ``UNAVAILABLE`` when the store could not commit
(retryable: nothing was acknowledged), ``RESOURCE_EXHAUSTED`` from grpcio for a message over the limit.
"""

from __future__ import annotations

import logging

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragtrace_collector._http import bearer_matches
from ragtrace_collector._otlp import OtlpDecodeError
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._store import StoreError

_log = logging.getLogger("ragtrace_collector")

SERVICE_NAME = trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"].full_name
"""``opentelemetry.proto.collector.trace.v1.TraceService``, from the proto's own descriptor."""


def _identity(payload: bytes) -> bytes:
    return payload


def _serialize(reply: ExportTraceServiceResponse) -> bytes:
    return bytes(reply.SerializeToString())


def create_grpc_server(
    pipeline: Pipeline,
    address: str,
    *,
    token: str | None = None,
    max_message_bytes: int = 64 * 1024 * 1024,
) -> tuple[grpc.aio.Server, int]:
    """A grpc.aio server bound to ``address`` (``host:port``, port 0 picks one); return it and the port.

    Call inside the running event loop; ``await server.start()`` to serve, ``await server.stop(grace)`` to stop.
    """

    async def export(request: bytes, context: grpc.aio.ServicerContext[bytes, ExportTraceServiceResponse]) -> object:
        if token:
            given = dict(context.invocation_metadata() or ()).get("authorization", "")
            if not isinstance(given, str) or not bearer_matches(given, token):
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            batch = await pipeline.accept_protobuf(request)
        except OtlpDecodeError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"malformed OTLP body: {exc}")
        except StoreError as exc:
            _log.error("store write failed, export not acknowledged: %s", exc)
            await context.abort(grpc.StatusCode.UNAVAILABLE, "store unavailable, retry later")
        reply = ExportTraceServiceResponse()
        if batch.rejected or batch.errors:
            _log.warning("partial success: %s", batch.error_message)
            reply.partial_success.rejected_spans = batch.rejected
            reply.partial_success.error_message = batch.error_message or "; ".join(batch.errors)
        return reply

    handler = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "Export": grpc.unary_unary_rpc_method_handler(
                export, request_deserializer=_identity, response_serializer=_serialize
            )
        },
    )
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
    )
    server.add_generic_rpc_handlers((handler,))
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:  # newer grpcio raises where older ones returned 0
        raise OSError(f"could not bind the OTLP/gRPC receiver to {address}: {exc}") from None
    if port == 0:
        raise OSError(f"could not bind the OTLP/gRPC receiver to {address}")
    return server, port
