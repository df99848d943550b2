"""Messages to rows: one scope's spans to ``spans``, ``rag_records`` and ``scores`` rows, a bad span rejected alone."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from ragtrace import semconv, wire
from ragtrace._foreign._classify import role_of
from ragtrace._foreign._pending import span_size
from ragtrace_collector._otlp._batch import SOURCE_APP, SOURCE_CARRIER, Batch, Part, short
from ragtrace_collector._otlp._keys import DOC, KEY_KINDS, chunks_from_documents, classify, span_attributes
from ragtrace_collector._otlp._score_row import score_row
from ragtrace_collector._otlp._values import attributes, dumps, int_or_none, number, text


def rows_from_parts(parts: list[Part], batch: Batch, received_ns: int) -> Batch:
    """Append the rows of every part to ``batch`` and return it."""
    for resource, scope, spans in parts:
        batch.extend(scope_rows(resource, scope, spans, received_ns))
    return batch


def scope_rows(
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
        resource_json = dumps(resource_attrs)
    except Exception as exc:
        # A resource we cannot read costs the service name, not the spans.
        batch.reject(0, f"resource not convertible (spans kept without resource attributes): {short(exc)}")
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
        marks = len(batch.spans), len(batch.rag_records), len(batch.scores), len(batch.pending)
        try:
            _span_rows(batch, span, span_id, trace_id, service, scope_name, resource_json, received_ns)
        except Exception as exc:
            # A bug or an input we did not foresee costs this span only, never the batch.
            # Drop whatever the span had added, so that no half of it is stored.
            del batch.spans[marks[0] :], batch.rag_records[marks[1] :], batch.scores[marks[2] :]
            del batch.pending[marks[3] :]
            batch.reject(1, f"span {span_id}: not convertible: {type(exc).__name__}: {short(exc)}")
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
    attrs, documents, evals = span_attributes(span.attributes)
    chunks: list[dict[str, Any]] | None = None
    if attrs.get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG:
        # A RAG span's documents are stored once, in rag_records.chunks, not again in spans.attributes.
        chunks = chunks_from_documents(documents)
    elif documents:
        attrs.update(documents)
    if role_of(attrs) is not None:
        # A span of a RAG call another instrumentation traced: its trace waits to be joined once it settles.
        batch.pending.append({"trace_id": trace_id, "received_ns": received_ns, "bytes": span_size(attrs)})
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
            "attributes": dumps(attrs),
            "events": dumps(events),
            "links": dumps(links),
            "resource": resource_json,
            "received_ns": received_ns,
            **model_call(attrs),
        }
    )
    _rag_and_scores(batch, attrs, evals, chunks, events, span, span_id, trace_id, service)


_INPUT_TOKENS = (semconv.GEN_AI_USAGE_INPUT_TOKENS, semconv.LLM_TOKEN_COUNT_PROMPT)
_OUTPUT_TOKENS = (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, semconv.LLM_TOKEN_COUNT_COMPLETION)
_MODELS = (semconv.GEN_AI_RESPONSE_MODEL, semconv.GEN_AI_REQUEST_MODEL, semconv.LLM_MODEL_NAME)
_NO_CALL: dict[str, Any] = {"model": None, "input_tokens": None, "output_tokens": None}


def _tokens(attrs: Mapping[str, Any], keys: tuple[str, str]) -> int | None:
    for key in keys:
        value = int_or_none(attrs.get(key))
        if value is not None and 0 <= value <= _MAX_SQLITE_INTEGER:
            return value
    return None


def model_call(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The span's ``model``, ``input_tokens`` and ``output_tokens`` columns: what a model call says it took (a count
    that is not a whole number >= 0 is not one), all None on a span that says no tokens."""
    prompt, completion = _tokens(attrs, _INPUT_TOKENS), _tokens(attrs, _OUTPUT_TOKENS)
    if prompt is None and completion is None:
        return _NO_CALL
    model = next((attrs[key] for key in _MODELS if isinstance(attrs.get(key), str) and attrs[key]), None)
    return {"model": model, "input_tokens": prompt, "output_tokens": completion}


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


def chunks_of(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The OpenInference ``retrieval.documents.{i}.document.*`` attributes as ``{id, content, score, metadata}``."""
    return chunks_from_documents(
        {k: v for k, v in attrs.items() if (KEY_KINDS.get(k) or classify(k) or (None,))[0] == DOC}
    )


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
                "query": text(attrs.get(semconv.INPUT_VALUE)),
                "answer": text(attrs.get(semconv.OUTPUT_VALUE)),
                "chunks": dumps(chunks),
                "reference": text(attrs.get(semconv.RAGTRACE_REFERENCE)),
                "decision": decision if isinstance(decision, str) else None,
                "judge": text(attrs.get(semconv.EVAL_JUDGE)),
                "calls": int_or_none(attrs.get(semconv.EVAL_JUDGE_CALLS)),
                "prompt_tokens": int_or_none(attrs.get(semconv.EVAL_JUDGE_PROMPT_TOKENS)),
                "completion_tokens": int_or_none(attrs.get(semconv.EVAL_JUDGE_COMPLETION_TOKENS)),
                "seconds": number(attrs.get(semconv.EVAL_SECONDS)),
                "reason": text(attrs.get(semconv.EVAL_NOT_SCORED_REASON)),
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
            score_row(
                metric,
                fields,
                span_id=owner_span,
                trace_id=owner_trace,
                service=service,
                route=owner_route,
                time_ns=time_ns,
                source=source,
            )
        )


def _scores(evals: list[tuple[str, str, Any]], events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Scores by metric, read with the one codec (``ragtrace.wire``); JSON text written with orjson."""
    return wire.decode_scores(evals, events, text=text)
