"""Salvage: the wire structure is sound but some message inside does not parse (e.g. bad UTF-8).

The body's fields are walked by hand (varints, lengths) so that every span that parses is kept and each
one that does not is rejected alone; a broken structure refuses the body as a whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

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


@dataclass(frozen=True, slots=True)
class Layout:
    """Where an OTLP export keeps its items (spans, log records): the field numbers of each level, read from
    the messages' descriptors: export -> resource_X -> (resource, scope_X -> (scope, items))."""

    resources: int
    resource: int
    scopes: int
    scope: int
    items: int

    @classmethod
    def of(cls, export: Any, resources: str, level: Any, scopes: str, scope_level: Any, items: str) -> Layout:
        fields_of = level.DESCRIPTOR.fields_by_name
        return cls(
            export.DESCRIPTOR.fields_by_name[resources].number,
            fields_of["resource"].number,
            fields_of[scopes].number,
            scope_level.DESCRIPTOR.fields_by_name["scope"].number,
            scope_level.DESCRIPTOR.fields_by_name[items].number,
        )


Walked = list[tuple[bytes, list[tuple[bytes, list[bytes]]]]]
"""Per resource: its bytes and, per scope, the scope's bytes and its items' bytes."""


class _Rejects(Protocol):
    def reject(self, count: int, reason: str) -> None: ...


def walk(body: bytes, layout: Layout) -> Walked:
    """The body's structure down to each item's bytes, walked whole first, so that a broken body is refused
    as a whole (``OtlpDecodeError``; nothing half-stored). Unknown fields are ignored, as protobuf does."""
    walked: Walked = []
    for number, wire, payload in fields(body):
        if number != layout.resources or wire != WIRE_LEN:
            continue
        assert isinstance(payload, bytes)
        resource = b""
        scopes: list[tuple[bytes, list[bytes]]] = []
        for rnum, rwire, rpayload in fields(payload):
            if rwire != WIRE_LEN:
                continue
            assert isinstance(rpayload, bytes)
            if rnum == layout.resource:
                resource = rpayload
            elif rnum == layout.scopes:
                scope = b""
                items: list[bytes] = []
                for snum, swire, spayload in fields(rpayload):
                    if swire != WIRE_LEN:
                        continue
                    assert isinstance(spayload, bytes)
                    if snum == layout.scope:
                        scope = spayload
                    elif snum == layout.items:
                        items.append(spayload)
                scopes.append((scope, items))
        walked.append((resource, scopes))
    return walked


def parsed(walked: Walked, item: Any, batch: _Rejects, *, what: str, without_resource: str) -> list[Any]:
    """``(resource, scope, items)`` of a walked body, every item that parses as ``item`` kept and each one that
    does not rejected alone in ``batch`` (as ``what``); a resource that does not parse costs its attributes
    (``without_resource`` says what is kept), never its items."""
    result: list[Any] = []
    for resource_bytes, scopes in walked:
        resource = parse_or_none(Resource, resource_bytes)
        if resource is None:
            batch.reject(0, f"resource not decodable ({without_resource})")
            resource = Resource()
        for scope_bytes, payloads in scopes:
            scope = parse_or_none(InstrumentationScope, scope_bytes) or InstrumentationScope()
            good: list[Any] = []
            for payload in payloads:
                parsed_item = parse_or_none(item, payload)
                if parsed_item is None:
                    batch.reject(1, f"{what} not decodable (malformed field or invalid UTF-8)")
                else:
                    good.append(parsed_item)
            result.append((resource, scope, good))
    return result


_SPANS = Layout.of(ExportTraceServiceRequest, "resource_spans", ResourceSpans, "scope_spans", ScopeSpans, "spans")
"""Field numbers from opentelemetry/proto/{collector/trace,trace}/v1/*.proto."""


def salvage_parts(body: bytes, batch: Batch) -> list[Part]:
    """The spans of ``body`` that parse, by resource and scope; each one that does not is rejected in ``batch``."""
    return parsed(
        walk(body, _SPANS), Span, batch, what="span", without_resource="spans kept without resource attributes"
    )


def parse_or_none(cls: Any, payload: bytes) -> Any:
    try:
        return cls.FromString(payload)
    except DecodeError:
        return None
