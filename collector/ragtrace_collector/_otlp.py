"""Decode OTLP trace exports (protobuf or JSON) into plain rows for the store. Pure: no I/O.

``decode_protobuf`` and ``decode_json`` return a ``Batch``: the rows of the ``spans``, ``rag_records`` and
``scores`` tables (see docs/collector.md for the schema) plus how many spans were rejected and why.

Bad input never loses what was good. A body whose wire structure is broken raises ``OtlpDecodeError`` (the
sender gets a 400 and must not retry). A body whose structure is sound but where one span cannot be parsed
(invalid UTF-8 in a string field, a wrong id length, a JSON value of the wrong type) keeps every other span
and counts the bad one in ``Batch.rejected``: the receivers turn that into an OTLP partial-success reply.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from ragtrace import _wire, semconv

Row = dict[str, Any]

SOURCE_APP = "app"
"""``scores.source`` of a score the app put on the RAG span itself."""
SOURCE_CARRIER = "carrier"
"""``scores.source`` of a late score brought by a carrier (EVALUATOR) span."""
SOURCE_COLLECTOR = "collector"
"""``scores.source`` of a score computed by the collector's server-side scoring."""

_MAX_REJECTION_MESSAGES = 5


class OtlpDecodeError(ValueError):
    """The body is not an OTLP trace export at all (broken wire format, not JSON, wrong shape)."""


@dataclass(slots=True)
class Batch:
    """The rows decoded from one export request, ready for ``Store.write`` (one transaction).

    Mutable on purpose: the decoder builds it up span by span; nothing changes it after ``decode_*`` returns.
    """

    spans: list[Row] = field(default_factory=list)
    rag_records: list[Row] = field(default_factory=list)
    scores: list[Row] = field(default_factory=list)
    rejected: int = 0
    """Spans that could not be decoded and were not stored."""
    errors: list[str] = field(default_factory=list)
    """Why spans were rejected (the first few reasons), for the partial-success message."""

    @property
    def error_message(self) -> str:
        """One line for ``ExportTracePartialSuccess.error_message`` (empty when nothing was rejected)."""
        if not self.rejected:
            return ""
        return f"rejected {self.rejected} span(s): " + "; ".join(self.errors)

    def reject(self, count: int, reason: str) -> None:
        """Count ``count`` spans as rejected for ``reason``."""
        self.rejected += count
        if len(self.errors) < _MAX_REJECTION_MESSAGES:
            self.errors.append(reason)

    def extend(self, other: Batch) -> None:
        """Append another batch's rows and rejections to this one."""
        self.spans.extend(other.spans)
        self.rag_records.extend(other.rag_records)
        self.scores.extend(other.scores)
        for reason in other.errors:
            if len(self.errors) < _MAX_REJECTION_MESSAGES:
                self.errors.append(reason)
        self.rejected += other.rejected


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------


def decode_protobuf(body: bytes, received_ns: int) -> Batch:
    """Decode a binary ``ExportTraceServiceRequest``; see the module docstring for what is kept."""
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError:
        return _salvage_protobuf(body, received_ns)
    return rows_from_request(request, received_ns)


def decode_json(body: bytes, received_ns: int) -> Batch:
    """Decode an OTLP/JSON ``ExportTraceServiceRequest`` (hex ids, lowerCamelCase or snake_case keys).

    Invalid UTF-8 is replaced (U+FFFD) rather than failing the whole request; a span whose fields have the
    wrong JSON types is rejected on its own.
    """
    batch = Batch()
    return _rows_from_parts(_json_parts(body, batch), batch, received_ns)


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
        return _request_from_parts(_salvage_parts(body, Batch()))
    return _request_from_parts(
        [(rs.resource, ss.scope, list(ss.spans)) for rs in request.resource_spans for ss in rs.scope_spans]
    )


_Part = tuple[Resource, InstrumentationScope, list[Span]]


def _rows_from_parts(parts: list[_Part], batch: Batch, received_ns: int) -> Batch:
    for resource, scope, spans in parts:
        batch.extend(_rows(resource, scope, spans, received_ns))
    return batch


def _request_from_parts(parts: list[_Part]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    for resource, scope, spans in parts:
        rs = request.resource_spans.add()
        rs.resource.CopyFrom(resource)
        ss = rs.scope_spans.add()
        ss.scope.CopyFrom(scope)
        kept: list[Span] = []
        _rows(resource, scope, spans, 0, kept)  # the rows are thrown away: only the verdict per span counts
        ss.spans.extend(kept)
    return request


def _json_parts(body: bytes, batch: Batch) -> list[_Part]:
    try:
        document = json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise OtlpDecodeError(f"body is not JSON: {_short(exc)}") from None
    if not isinstance(document, dict):
        raise OtlpDecodeError("an OTLP/JSON export is a JSON object with a 'resourceSpans' array")
    resource_spans = _json_list(document, "resourceSpans", "resource_spans")
    if resource_spans is None:
        raise OtlpDecodeError("'resourceSpans' must be an array")
    parts: list[_Part] = []
    for rs in resource_spans:
        if not isinstance(rs, dict):
            batch.reject(0, "a resourceSpans item is not an object")
            continue
        resource = _json_message(rs.get("resource"), Resource)
        for ss in _json_list(rs, "scopeSpans", "scope_spans") or []:
            if not isinstance(ss, dict):
                batch.reject(0, "a scopeSpans item is not an object")
                continue
            scope = _json_message(ss.get("scope"), InstrumentationScope)
            good: list[Span] = []
            for raw in _json_list(ss, "spans", "spans") or []:
                try:
                    good.append(_json_span(raw))
                except (json_format.ParseError, ValueError, TypeError, RecursionError, binascii.Error) as exc:
                    batch.reject(1, f"span not decodable: {_short(exc)}")
            parts.append((resource or Resource(), scope or InstrumentationScope(), good))
    return parts


def rows_from_request(request: ExportTraceServiceRequest, received_ns: int) -> Batch:
    """Rows of an already parsed request (the gRPC path, and the fast path of ``decode_protobuf``)."""
    batch = Batch()
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            batch.extend(_rows(rs.resource, ss.scope, ss.spans, received_ns))
    return batch


# --------------------------------------------------------------------------------------------------
# Salvage: the wire structure is sound but some message inside does not parse (e.g. bad UTF-8)
# --------------------------------------------------------------------------------------------------

_WIRE_VARINT, _WIRE_I64, _WIRE_LEN, _WIRE_I32 = 0, 1, 2, 5


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


def _fields(buf: bytes) -> Iterator[tuple[int, int, bytes | int]]:
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
        elif wire == _WIRE_LEN:
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


def _salvage_protobuf(body: bytes, received_ns: int) -> Batch:
    batch = Batch()
    return _rows_from_parts(_salvage_parts(body, batch), batch, received_ns)


def _salvage_parts(body: bytes, batch: Batch) -> list[_Part]:
    # Field numbers from opentelemetry/proto/{collector/trace,trace}/v1/*.proto.
    rs_field = ExportTraceServiceRequest.DESCRIPTOR.fields_by_name["resource_spans"].number
    resource_field = ResourceSpans.DESCRIPTOR.fields_by_name["resource"].number
    scope_spans_field = ResourceSpans.DESCRIPTOR.fields_by_name["scope_spans"].number
    scope_field = ScopeSpans.DESCRIPTOR.fields_by_name["scope"].number
    spans_field = ScopeSpans.DESCRIPTOR.fields_by_name["spans"].number

    parts: list[tuple[bytes, list[tuple[bytes | None, list[bytes]]]]] = []
    # Walk the whole structure first, so that a broken body is refused as a whole (nothing half-stored).
    for number, wire, payload in _fields(body):
        if number != rs_field or wire != _WIRE_LEN:
            continue  # unknown field: ignored, as protobuf does
        assert isinstance(payload, bytes)
        resource_bytes = b""
        scopes: list[tuple[bytes | None, list[bytes]]] = []
        for rnum, rwire, rpayload in _fields(payload):
            if rwire != _WIRE_LEN:
                continue
            assert isinstance(rpayload, bytes)
            if rnum == resource_field:
                resource_bytes = rpayload
            elif rnum == scope_spans_field:
                scope_bytes: bytes | None = None
                spans: list[bytes] = []
                for snum, swire, spayload in _fields(rpayload):
                    if swire != _WIRE_LEN:
                        continue
                    assert isinstance(spayload, bytes)
                    if snum == scope_field:
                        scope_bytes = spayload
                    elif snum == spans_field:
                        spans.append(spayload)
                scopes.append((scope_bytes, spans))
        parts.append((resource_bytes, scopes))

    result: list[_Part] = []
    for resource_bytes, scopes in parts:
        resource = _parse_or_none(Resource, resource_bytes)
        if resource is None:
            # Keep the spans: a resource we cannot read costs the service name, not the data.
            batch.reject(0, "resource not decodable (spans kept without resource attributes)")
            resource = Resource()
        for scope_bytes, span_payloads in scopes:
            scope = _parse_or_none(InstrumentationScope, scope_bytes or b"") or InstrumentationScope()
            good: list[Span] = []
            for payload in span_payloads:
                span = _parse_or_none(Span, payload)
                if span is None:
                    batch.reject(1, "span not decodable (malformed field or invalid UTF-8)")
                else:
                    good.append(span)
            result.append((resource, scope, good))
    return result


def _parse_or_none(cls: Any, payload: bytes) -> Any:
    try:
        return cls.FromString(payload)
    except DecodeError:
        return None


# --------------------------------------------------------------------------------------------------
# JSON helpers: OTLP/JSON differs from proto3 JSON in its ids (hex, not base64)
# --------------------------------------------------------------------------------------------------

_ID_KEYS = frozenset({"traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"})


def _json_list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any] | None:
    value = obj.get(camel, obj.get(snake, []))
    if value is None:
        return []
    return value if isinstance(value, list) else None


def _json_message(value: Any, cls: Any) -> Any:
    if not isinstance(value, dict):
        return None
    try:
        return json_format.ParseDict(value, cls(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        return None


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str) or value == "":
        return value
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _fix_ids(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: (_hex_to_b64(v) if k in _ID_KEYS else v) for k, v in obj.items()}


def _json_span(raw: Any) -> Span:
    if not isinstance(raw, dict):
        raise ValueError("a span is not a JSON object")
    fixed = _fix_ids(raw)
    for key in ("links",):
        links = fixed.get(key)
        if isinstance(links, list):
            fixed[key] = [_fix_ids(link) if isinstance(link, dict) else link for link in links]
    span = Span()
    json_format.ParseDict(fixed, span, ignore_unknown_fields=True)
    return span


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 160 else text[:157] + "..."


# --------------------------------------------------------------------------------------------------
# Messages -> rows
# --------------------------------------------------------------------------------------------------


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a JSON-safe Python value (bytes as base64, non-finite doubles as strings)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes(items: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP key-values as a dict (a repeated key keeps its last value, as the SDKs do)."""
    result: dict[str, Any] = {}
    for kv in items:
        value = kv.value
        # Most attribute values are strings: skip the general conversion for them (the ingest hot path).
        result[kv.key] = value.string_value if value.WhichOneof("value") == "string_value" else any_value(value)
    return result


_DOCS_DOT = semconv.RETRIEVAL_DOCUMENTS + "."
_DOC_FIELDS = {
    semconv.DOCUMENT_ID: "id",
    semconv.DOCUMENT_CONTENT: "content",
    semconv.DOCUMENT_SCORE: "score",
    semconv.DOCUMENT_METADATA: "metadata",
}
_DOC = 0
_EVAL = 1

# What an attribute key is, computed once per distinct key: the same few dozen keys recur on every span,
# and classifying them anew was a large share of the ingest cost. Bounded so odd keys cannot grow it forever.
_KeyKind = tuple[int, Any, str] | None
_KEY_KINDS: dict[str, _KeyKind] = {}
_MAX_KEY_KINDS = 65_536
_UNKNOWN: Any = object()


def _classify(key: str) -> _KeyKind:
    """``(_DOC, index, column)``, ``(_EVAL, metric, field)`` or None for any other attribute."""
    kind: _KeyKind = None
    if key.startswith(_DOCS_DOT):
        index, _, field_name = key[len(_DOCS_DOT) :].partition(".")
        column = _DOC_FIELDS.get(field_name)
        # ASCII digits only: str.isdigit() also accepts "²" or "١", which int() refuses (or reads as another
        # number). Such a key is an ordinary attribute.
        if column is not None and index.isascii() and index.isdigit():
            kind = (_DOC, int(index), column)
    else:
        score_key = _wire.eval_key(key)
        if score_key is not None:
            kind = (_EVAL, *score_key)
    if len(_KEY_KINDS) < _MAX_KEY_KINDS:
        _KEY_KINDS[key] = kind
    return kind


def _span_attributes(
    items: Iterable[KeyValue],
) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, Any]]]:
    """A span's attributes without its retrieval documents, the documents' attributes, and its score attributes.

    Documents come back as ``{key: value}`` (put them back for a span that is not a RAG span); score
    attributes as ``(metric, field, value)`` (they also stay in the attributes).
    """
    result: dict[str, Any] = {}
    documents: dict[str, Any] = {}
    evals: list[tuple[str, str, Any]] = []
    kinds = _KEY_KINDS
    for kv in items:
        key = kv.key
        value = kv.value
        # Most attribute values are strings: skip the general conversion for them (the ingest hot path).
        converted = value.string_value if value.WhichOneof("value") == "string_value" else any_value(value)
        kind = kinds.get(key, _UNKNOWN)
        if kind is _UNKNOWN:
            kind = _classify(key)
        if kind is None:
            result[key] = converted
        elif kind[0] == _DOC:
            documents[key] = converted
        else:
            result[key] = converted
            evals.append((kind[1], kind[2], converted))
    return result, documents, evals


def _chunks(documents: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Document attributes (``retrieval.documents.{i}.document.*``) as chunks ``{id, content, score, metadata}``."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in documents.items():
        kind = _KEY_KINDS.get(key) or _classify(key)
        assert kind is not None and kind[0] == _DOC
        fields = by_index.get(kind[1])
        if fields is None:
            fields = by_index[kind[1]] = {}
        fields[kind[2]] = value
    chunks: list[dict[str, Any]] = []
    for index in sorted(by_index):
        fields = by_index[index]
        metadata = fields.get("metadata")
        chunk_id = fields.get("id")
        chunks.append(
            {
                "id": None if chunk_id is None else str(chunk_id),
                "content": _text(fields.get("content")),
                "score": _number(fields.get("score")),
                "metadata": _json_or_text(metadata) if isinstance(metadata, str) else metadata,
            }
        )
    return chunks


def _json_or_text(text: str) -> Any:
    """Parsed JSON, or the string itself when it is not JSON (kept as the app sent it)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _dumps(value: Any) -> str:
    try:
        # orjson: the JSON columns are most of the decode cost at ingest rates.
        return orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        # e.g. a lone surrogate from OTLP/JSON: escaped JSON is still valid JSON text.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _rows(
    resource: Resource,
    scope: InstrumentationScope,
    spans: Iterable[Span],
    received_ns: int,
    kept: list[Span] | None = None,
) -> Batch:
    """The rows of one scope's spans; a span that cannot be converted is rejected alone.

    ``kept``, when given, receives every span that was accepted (to forward exactly what was stored).
    """
    batch = Batch()
    try:
        resource_attrs = attributes(resource.attributes)
        resource_json = _dumps(resource_attrs)
    except Exception as exc:
        # A resource we cannot read costs the service name, not the spans.
        batch.reject(0, f"resource not convertible (spans kept without resource attributes): {_short(exc)}")
        resource_attrs, resource_json = {}, "{}"
    service = resource_attrs.get(semconv.SERVICE_NAME)
    service = service if isinstance(service, str) else None
    scope_name = scope.name or None
    for span in spans:
        trace_id = span.trace_id.hex()
        span_id = span.span_id.hex()
        if not _ids_valid(span):
            batch.reject(1, f"span {span_id or '?'} in trace {trace_id or '?'}: ids must be 16/8 non-zero bytes")
            continue
        if not _times_valid(span):
            batch.reject(1, f"span {span_id}: start/end time out of range (nanoseconds since 1970, before 2262)")
            continue
        marks = len(batch.spans), len(batch.rag_records), len(batch.scores)
        try:
            _span_rows(batch, span, span_id, trace_id, service, scope_name, resource_json, received_ns)
        except Exception as exc:
            # A bug or an input we did not foresee costs this span only, never the batch.
            # Drop whatever the span had added, so that no half of it is stored.
            del batch.spans[marks[0] :], batch.rag_records[marks[1] :], batch.scores[marks[2] :]
            batch.reject(1, f"span {span_id}: not convertible: {type(exc).__name__}: {_short(exc)}")
            continue
        if kept is not None:
            kept.append(span)
    return batch


def _span_rows(
    batch: Batch,
    span: Span,
    span_id: str,
    trace_id: str,
    service: str | None,
    scope_name: str | None,
    resource_json: str,
    received_ns: int,
) -> None:
    """Append one valid span's rows (span, RAG record, scores) to ``batch``."""
    attrs, documents, evals = _span_attributes(span.attributes)
    chunks: list[dict[str, Any]] | None = None
    if attrs.get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG:
        # A RAG span's documents are stored once, in rag_records.chunks, not again in spans.attributes.
        chunks = _chunks(documents)
    elif documents:
        attrs.update(documents)
    events = [
        {
            "time_ns": e.time_unix_nano,
            "name": e.name,
            "attributes": attributes(e.attributes),
        }
        for e in span.events
    ]
    links = [
        {
            "trace_id": link.trace_id.hex(),
            "span_id": link.span_id.hex(),
            "attributes": attributes(link.attributes),
        }
        for link in span.links
    ]
    batch.spans.append(
        {
            "span_id": span_id,
            "trace_id": trace_id,
            "parent_span_id": span.parent_span_id.hex() or None,
            "name": span.name,
            "kind": span.kind,
            "service": service,
            "scope": scope_name,
            "start_ns": span.start_time_unix_nano,
            "end_ns": span.end_time_unix_nano,
            "status_code": span.status.code,
            "status_message": span.status.message or None,
            "attributes": _dumps(attrs),
            "events": _dumps(events),
            "links": _dumps(links),
            "resource": resource_json,
            "received_ns": received_ns,
        }
    )
    _rag_and_scores(batch, attrs, evals, chunks, events, span, span_id, trace_id, service)


_MAX_SQLITE_INTEGER = 2**63 - 1


def _times_valid(span: Span) -> bool:
    # fixed64 on the wire, signed 64-bit in SQLite: anything past the year 2262 is not a time.
    return span.start_time_unix_nano <= _MAX_SQLITE_INTEGER and span.end_time_unix_nano <= _MAX_SQLITE_INTEGER


def _ids_valid(span: Span) -> bool:
    return len(span.trace_id) == 16 and any(span.trace_id) and len(span.span_id) == 8 and any(span.span_id)


def route_of(attrs: Mapping[str, Any], span_name: str) -> str:
    """The route a RAG span is grouped under: its ``http.route`` when present, else its name."""
    route = attrs.get(semconv.HTTP_ROUTE)
    return route if isinstance(route, str) and route else span_name


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else _dumps(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def chunks_of(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The OpenInference ``retrieval.documents.{i}.document.*`` attributes as ``{id, content, score, metadata}``."""
    return _chunks({k: v for k, v in attrs.items() if (_KEY_KINDS.get(k) or _classify(k) or (None,))[0] == _DOC})


def _rag_and_scores(
    batch: Batch,
    attrs: dict[str, Any],
    evals: list[tuple[str, str, Any]],
    chunks: list[dict[str, Any]] | None,
    events: list[dict[str, Any]],
    span: Span,
    span_id: str,
    trace_id: str,
    service: str | None,
) -> None:
    target = attrs.get(semconv.EVAL_TARGET_SPAN_ID)
    is_carrier = attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_EVALUATOR and isinstance(target, str)
    route = route_of(attrs, span.name)
    time_ns = span.end_time_unix_nano
    if chunks is not None:
        decision = attrs.get(semconv.EVAL_DECISION)
        batch.rag_records.append(
            {
                "span_id": span_id,
                "trace_id": trace_id,
                "service": service,
                "route": route,
                "time_ns": time_ns,
                "query": _text(attrs.get(semconv.INPUT_VALUE)),
                "answer": _text(attrs.get(semconv.OUTPUT_VALUE)),
                "chunks": _dumps(chunks),
                "reference": _text(attrs.get(semconv.RAGTRACE_REFERENCE)),
                "decision": decision if isinstance(decision, str) else None,
                "judge": _text(attrs.get(semconv.EVAL_JUDGE)),
                "calls": _int(attrs.get(semconv.EVAL_JUDGE_CALLS)),
                "prompt_tokens": _int(attrs.get(semconv.EVAL_JUDGE_PROMPT_TOKENS)),
                "completion_tokens": _int(attrs.get(semconv.EVAL_JUDGE_COMPLETION_TOKENS)),
                "seconds": _number(attrs.get(semconv.EVAL_SECONDS)),
            }
        )
    scores = _scores(evals, events)
    if not scores:
        return
    if is_carrier:
        assert isinstance(target, str)
        target_trace = attrs.get(semconv.EVAL_TARGET_TRACE_ID)
        owner_span, owner_trace, source = (
            target.lower(),
            (target_trace.lower() if isinstance(target_trace, str) else trace_id),
            SOURCE_CARRIER,
        )
        # The carrier's own name is not the RAG route; the store fills it from the target's record.
        owner_route: str | None = None
    else:
        owner_span, owner_trace, source, owner_route = span_id, trace_id, SOURCE_APP, route
    for metric, fields in scores.items():
        batch.scores.append(
            {
                "span_id": owner_span,
                "metric": metric,
                "value": fields.get("value"),
                "label": fields.get("label"),
                "explanation": fields.get("explanation"),
                "reason": fields.get("reason"),
                "error_type": fields.get("error_type"),
                "trace_id": owner_trace,
                "service": service,
                "route": owner_route,
                "time_ns": time_ns,
                "source": source,
            }
        )


def _scores(evals: list[tuple[str, str, Any]], events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Scores by metric, read with the one codec (``ragtrace._wire``); JSON text written with orjson."""
    return _wire.decode_scores(evals, events, text=_text)
