"""The collector's scores on the wire, through the app's codec (``ragtrace.wire``): the score rows it stores
and the carrier span it forwards are what the app would have written for the same result."""

from __future__ import annotations

import os
import time
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragtrace import semconv, wire
from ragtrace.metrics import SuiteResult
from ragtrace_collector._otlp import SOURCE_COLLECTOR, Row
from ragtrace_collector._otlp._score_row import score_row


def score_rows(row: Row, encoded: wire.Encoded) -> list[Row]:
    # The rows are what the decoder would read back from the carrier: the collector stores what it sends.
    return [
        score_row(
            name,
            fields,
            span_id=row["span_id"],
            trace_id=row["trace_id"],
            service=row["service"],
            route=row["route"],
            time_ns=row["time_ns"],
            source=SOURCE_COLLECTOR,
        )
        for name, fields in wire.decode(encoded.attributes, encoded.events).items()
    ]


def encode(result: SuiteResult) -> wire.Encoded:
    """The wire form of a server-side result: the in-app processor's decision, attributes and events."""
    return wire.encode(list(result.scores.values()), result.cost, result.judge)


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def carrier_export(row: Row, result: SuiteResult, encoded: wire.Encoded | None = None) -> bytes:
    """A carrier span (kind EVALUATOR, linked to the RAG span) with the collector's scores, as an OTLP export.

    Its attributes and events are the in-app processor's, from the same codec (``ragtrace.wire``).
    """
    now = time.time_ns()
    if encoded is None:
        encoded = encode(result)
    attrs: dict[str, Any] = {
        **wire.carrier_attributes(row["span_id"], row["trace_id"]),
        **wire.finished(encoded.attributes, encoded.decision, result.seconds),
    }
    span = Span(
        trace_id=bytes.fromhex(row["trace_id"]),
        span_id=os.urandom(8),
        name=semconv.CARRIER_SPAN_NAME,
        kind=Span.SpanKind.SPAN_KIND_INTERNAL,
        start_time_unix_nano=now,
        end_time_unix_nano=now,
    )
    span.links.add(trace_id=bytes.fromhex(row["trace_id"]), span_id=bytes.fromhex(row["span_id"]))
    for name, event_attrs in encoded.events:
        event = span.events.add(time_unix_nano=now, name=name)
        event.attributes.extend(_kv(k, v) for k, v in event_attrs.items())
    span.attributes.extend(_kv(k, v) for k, v in attrs.items())
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    if row.get("service"):
        rs.resource.attributes.append(_kv(semconv.SERVICE_NAME, row["service"]))
    ss = rs.scope_spans.add()
    ss.scope.name = semconv.INSTRUMENTATION_SCOPE
    ss.spans.append(span)
    return bytes(request.SerializeToString())
