"""Salvage: the wire structure is sound but some message inside does not parse (e.g. bad UTF-8).

The body's fields are walked by hand (varints, lengths) so that every span that parses is kept and each
one that does not is rejected alone; a broken structure refuses the body as a whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from ragtrace_collector._otlp._batch import Batch, OtlpDecodeError, Part
from ragtrace_collector._otlp._rows import rows_from_parts

_WIRE_VARINT, _WIRE_I64, WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise OtlpDecodeError("truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int, bytes | int]]:
    """Yield (field number, wire type, payload) of one message level; raise on a broken structure."""
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise OtlpDecodeError("field number 0")
        if wire == _WIRE_VARINT:
            value, pos = _read_varint(buf, pos)
            yield number, wire, value
        elif wire == WIRE_LEN:
            size, pos = _read_varint(buf, pos)
            if pos + size > end:
                raise OtlpDecodeError("length-delimited field runs past the end of the body")
            yield number, wire, buf[pos : pos + size]
            pos += size
        elif wire in (_WIRE_I64, _WIRE_I32):
            size = 8 if wire == _WIRE_I64 else 4
            if pos + size > end:
                raise OtlpDecodeError("fixed-width field runs past the end of the body")
            yield number, wire, buf[pos : pos + size]
            pos += size
        else:
            raise OtlpDecodeError(f"unsupported wire type {wire}")


def salvage_protobuf(body: bytes, received_ns: int) -> Batch:
    batch = Batch()
    return rows_from_parts(salvage_parts(body, batch), batch, received_ns)


def salvage_parts(body: bytes, batch: Batch) -> list[Part]:
    # Field numbers from opentelemetry/proto/{collector/trace,trace}/v1/*.proto.
    rs_field = ExportTraceServiceRequest.DESCRIPTOR.fields_by_name["resource_spans"].number
    resource_field = ResourceSpans.DESCRIPTOR.fields_by_name["resource"].number
    scope_spans_field = ResourceSpans.DESCRIPTOR.fields_by_name["scope_spans"].number
    scope_field = ScopeSpans.DESCRIPTOR.fields_by_name["scope"].number
    spans_field = ScopeSpans.DESCRIPTOR.fields_by_name["spans"].number

    parts: list[tuple[bytes, list[tuple[bytes | None, list[bytes]]]]] = []
    # Walk the whole structure first, so that a broken body is refused as a whole (nothing half-stored).
    for number, wire, payload in fields(body):
        if number != rs_field or wire != WIRE_LEN:
            continue  # unknown field: ignored, as protobuf does
        assert isinstance(payload, bytes)
        resource_bytes = b""
        scopes: list[tuple[bytes | None, list[bytes]]] = []
        for rnum, rwire, rpayload in fields(payload):
            if rwire != WIRE_LEN:
                continue
            assert isinstance(rpayload, bytes)
            if rnum == resource_field:
                resource_bytes = rpayload
            elif rnum == scope_spans_field:
                scope_bytes: bytes | None = None
                spans: list[bytes] = []
                for snum, swire, spayload in fields(rpayload):
                    if swire != WIRE_LEN:
                        continue
                    assert isinstance(spayload, bytes)
                    if snum == scope_field:
                        scope_bytes = spayload
                    elif snum == spans_field:
                        spans.append(spayload)
                scopes.append((scope_bytes, spans))
        parts.append((resource_bytes, scopes))

    result: list[Part] = []
    for resource_bytes, scopes in parts:
        resource = parse_or_none(Resource, resource_bytes)
        if resource is None:
            # Keep the spans: a resource we cannot read costs the service name, not the data.
            batch.reject(0, "resource not decodable (spans kept without resource attributes)")
            resource = Resource()
        for scope_bytes, span_payloads in scopes:
            scope = parse_or_none(InstrumentationScope, scope_bytes or b"") or InstrumentationScope()
            good: list[Span] = []
            for payload in span_payloads:
                span = parse_or_none(Span, payload)
                if span is None:
                    batch.reject(1, "span not decodable (malformed field or invalid UTF-8)")
                else:
                    good.append(span)
            result.append((resource, scope, good))
    return result


def parse_or_none(cls: Any, payload: bytes) -> Any:
    try:
        return cls.FromString(payload)
    except DecodeError:
        return None
