"""What the OTLP/HTTP receiver answers, in the request's encoding: a ``Reject`` as a ``google.rpc.Status``, a
trace export's ``ExportTraceServiceResponse`` (``traces_reply``) and a metrics export's reply
(``metrics_not_stored``), both of which the gRPC receiver gives too (a logs export's is ``_logs.logs_reply``).

``Reject`` is how every part of a request's handling refuses it: the HTTP status, the ``google.rpc`` code, the
message and, for a retryable refusal, the ``Retry-After`` seconds.
"""

from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.requests import Request
from starlette.responses import Response

from ragtrace_collector._otlp import Batch, OtlpDecodeError

__all__ = [
    "JSON",
    "METRICS_NOT_STORED",
    "PROTOBUF",
    "PROTOBUF_ALIASES",
    "Reject",
    "encode",
    "media_type",
    "metrics_not_stored",
    "status_response",
    "traces_reply",
]

PROTOBUF = "application/x-protobuf"
PROTOBUF_ALIASES = frozenset({PROTOBUF, "application/protobuf"})  # some senders use the unregistered name
JSON = "application/json"

METRICS_NOT_STORED = (
    "ragtrace-collector stores spans, not metrics (it derives score statistics from the spans): send metrics "
    "to a metrics backend with OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, or configure(export_metrics=False)"
)
"""The partial-success message of every metrics export."""


class Reject(Exception):
    """A request refused: its HTTP status, the ``google.rpc`` code and message, and the ``Retry-After`` seconds
    when the sender should retry."""

    def __init__(self, status: int, code: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def encode(message: object, media_type: str) -> bytes:
    if media_type == JSON:
        return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")
    return bytes(message.SerializeToString())  # type: ignore[attr-defined]


def status_response(reject: Reject, media_type: str) -> Response:
    body = encode(status_pb2.Status(code=reject.code, message=reject.message), media_type)
    headers = {"Retry-After": str(reject.retry_after)} if reject.retry_after is not None else None
    if reject.status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return Response(body, status_code=reject.status, media_type=media_type, headers=headers)


def traces_reply(batch: Batch) -> ExportTraceServiceResponse:
    """A trace export's reply (OTLP/HTTP and OTLP/gRPC alike): empty, or ``partial_success`` with the spans
    rejected and why (a message with none rejected is a warning, e.g. a resource that could not be read)."""
    reply = ExportTraceServiceResponse()
    if batch.rejected or batch.errors:
        reply.partial_success.rejected_spans = batch.rejected
        reply.partial_success.error_message = batch.error_message or "; ".join(batch.errors)
    return reply


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
