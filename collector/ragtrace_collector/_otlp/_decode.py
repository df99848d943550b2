"""The entry points: protobuf and JSON bodies (and parsed requests) to rows, and the clean requests to forward."""

from __future__ import annotations

import binascii
import json

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragtrace_collector._otlp._batch import Batch, OtlpDecodeError, Part, short
from ragtrace_collector._otlp._json_depth import TOO_DEEP, cut_deep, holds, too_deep
from ragtrace_collector._otlp._json_ids import json_list, json_message, json_span
from ragtrace_collector._otlp._rows import rows_from_parts, scope_rows
from ragtrace_collector._otlp._salvage import salvage_parts, salvage_protobuf


def decode_protobuf(body: bytes, received_ns: int) -> Batch:
    """Decode a binary ``ExportTraceServiceRequest``; see the module docstring for what is kept."""
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError:
        return salvage_protobuf(body, received_ns)
    return rows_from_request(request, received_ns)


def decode_json(body: bytes, received_ns: int) -> Batch:
    """Decode an OTLP/JSON ``ExportTraceServiceRequest`` (hex ids, lowerCamelCase or snake_case keys).

    Invalid UTF-8 is replaced (U+FFFD) rather than failing the whole request; a span whose fields have the
    wrong JSON types, or that is nested deeper than ``MAX_JSON_DEPTH`` levels, is rejected on its own.
    """
    batch = Batch()
    return rows_from_parts(_json_parts(body, batch), batch, received_ns)


def json_request(body: bytes) -> ExportTraceServiceRequest:
    """The spans ``decode_json`` accepts, as a protobuf request (for forwarding downstream)."""
    return _request_from_parts(_json_parts(body, Batch()))


def salvage_request(body: bytes) -> ExportTraceServiceRequest:
    """The spans ``decode_protobuf`` accepts from a partly bad body, as a clean request (for forwarding).

    A span it rejects (undecodable, bad ids or times, not convertible) is left out, whether or not the body
    as a whole parses.
    """
    try:
        request: ExportTraceServiceRequest = ExportTraceServiceRequest.FromString(body)
    except DecodeError:
        return _request_from_parts(salvage_parts(body, Batch()))
    return _request_from_parts(
        [(rs.resource, ss.scope, list(ss.spans)) for rs in request.resource_spans for ss in rs.scope_spans]
    )


def _request_from_parts(parts: list[Part]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for resource, scope, spans in parts:
        rs = request.resource_spans.add()
        rs.resource.CopyFrom(resource)
        ss = rs.scope_spans.add()
        ss.scope.CopyFrom(scope)
        kept: list[Span] = []
        scope_rows(resource, scope, spans, 0, kept)  # the rows are thrown away: only the verdict per span counts
        ss.spans.extend(kept)
    return request


def load_json(body: bytes) -> tuple[object, str | None]:
    """The parsed body, and the marker of the values cut for their depth (None when nothing was cut)."""
    text = body.decode("utf-8", errors="replace")
    try:
        try:
            return json.loads(text), None
        except RecursionError:
            # Too deep for json's recursion: cut the deep values out, so only their spans are lost.
            text, marker = cut_deep(text)
            return json.loads(text), marker
    except (ValueError, RecursionError) as exc:
        raise OtlpDecodeError(f"body is not JSON: {short(exc)}") from None


def _json_parts(body: bytes, batch: Batch) -> list[Part]:
    document, marker = load_json(body)
    if not isinstance(document, dict):
        raise OtlpDecodeError("an OTLP/JSON export is a JSON object with a 'resourceSpans' array")
    resource_spans = json_list(document, "resourceSpans", "resource_spans")
    if resource_spans is None:
        raise OtlpDecodeError("'resourceSpans' must be an array")
    parts: list[Part] = []
    for rs in resource_spans:
        if not isinstance(rs, dict):
            batch.reject(0, "a resourceSpans item is not an object")
            continue
        resource = json_message(rs.get("resource"), Resource)
        for ss in json_list(rs, "scopeSpans", "scope_spans") or []:
            if not isinstance(ss, dict):
                batch.reject(0, "a scopeSpans item is not an object")
                continue
            scope = json_message(ss.get("scope"), InstrumentationScope)
            good: list[Span] = []
            for raw in json_list(ss, "spans", "spans") or []:
                if marker is not None and holds(raw, marker):
                    batch.reject(1, TOO_DEEP)
                    continue
                try:
                    good.append(json_span(raw))
                except (json_format.ParseError, ValueError, TypeError, RecursionError, binascii.Error) as exc:
                    batch.reject(1, TOO_DEEP if too_deep(exc) else f"span not decodable: {short(exc)}")
            parts.append((resource or Resource(), scope or InstrumentationScope(), good))
    return parts


def rows_from_request(request: ExportTraceServiceRequest, received_ns: int) -> Batch:
    """Rows of an already parsed request (the gRPC path, and the fast path of ``decode_protobuf``)."""
    batch = Batch()
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            batch.extend(scope_rows(rs.resource, ss.scope, ss.spans, received_ns))
    return batch
