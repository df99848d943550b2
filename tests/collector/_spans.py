"""Real spans for the collector tests: made by the OpenTelemetry SDK, encoded by the real OTLP encoder."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, TraceFlags
from ragtrace_collector._server import Collector, CollectorConfig

from ragtrace import semconv


def rag_attributes(
    query: str,
    chunks: Sequence[str],
    answer: str,
    *,
    scores: Mapping[str, float] | None = None,
    decision: str | None = None,
    route: str | None = None,
) -> dict[str, Any]:
    """The attributes ragtrace puts on a RAG span (capture + scores as flat attributes)."""
    attrs: dict[str, Any] = {
        semconv.RAGTRACE_ROLE: semconv.ROLE_RAG,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: query,
        semconv.OUTPUT_VALUE: answer,
        semconv.RAGTRACE_CHUNK_COUNT: len(chunks),
    }
    for i, text in enumerate(chunks):
        attrs[semconv.retrieval_document(i, semconv.DOCUMENT_ID)] = f"doc-{i}"
        attrs[semconv.retrieval_document(i, semconv.DOCUMENT_CONTENT)] = text
        attrs[semconv.retrieval_document(i, semconv.DOCUMENT_SCORE)] = 1.0 - i / 10
        attrs[semconv.retrieval_document(i, semconv.DOCUMENT_METADATA)] = json.dumps({"rank": i})
    if decision is not None:
        attrs[semconv.EVAL_DECISION] = decision
    if route is not None:
        attrs[semconv.HTTP_ROUTE] = route
    for metric, value in (scores or {}).items():
        attrs[semconv.eval_score(metric)] = value
        attrs[semconv.eval_label(metric)] = f"{metric}-label"
    if scores:
        attrs[semconv.EVAL_JUDGE] = "fake:judge"
        attrs[semconv.EVAL_JUDGE_CALLS] = 2
        attrs[semconv.EVAL_SECONDS] = 0.25
    return attrs


class SpanFactory:
    """An SDK tracer provider whose ended spans are kept in memory."""

    def __init__(self, service: str = "shop") -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({semconv.SERVICE_NAME: service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)

    def rag(
        self,
        name: str = "answer",
        *,
        query: str = "What is the capital of Brazil?",
        chunks: Sequence[str] = ("Brazil is a country in South America.", "Its capital is Brasilia."),
        answer: str = "Brasilia.",
        scores: Mapping[str, float] | None = None,
        decision: str | None = None,
        route: str | None = None,
        events: bool = True,
        end_ns: int | None = None,
    ) -> ReadableSpan:
        """One ended RAG span (with a child retriever span), scores as attributes and evaluation events.

        ``end_ns`` sets when the RAG span ended (its record's time in the store); default: now.
        """
        start_ns = None if end_ns is None else end_ns - 2_000_000
        with self.tracer.start_as_current_span(name, start_time=start_ns, end_on_exit=end_ns is None) as span:
            with self.tracer.start_as_current_span(
                "retrieve", start_time=start_ns, end_on_exit=end_ns is None
            ) as child:
                child.set_attribute(semconv.RAGTRACE_ROLE, semconv.ROLE_RETRIEVE)
            if end_ns is not None:
                child.end(end_time=end_ns - 1_000_000)
            span.set_attributes(rag_attributes(query, chunks, answer, scores=scores, decision=decision, route=route))
            if events:
                for metric, value in (scores or {}).items():
                    span.add_event(
                        semconv.GEN_AI_EVALUATION_RESULT,
                        {
                            semconv.GEN_AI_EVALUATION_NAME: metric,
                            semconv.GEN_AI_EVALUATION_SCORE_VALUE: value,
                            semconv.GEN_AI_EVALUATION_SCORE_LABEL: f"{metric}-label",
                            semconv.GEN_AI_EVALUATION_EXPLANATION: f"why {metric}",
                        },
                        timestamp=end_ns,
                    )
            if end_ns is not None:
                span.end(end_time=end_ns)
        return self.exporter.get_finished_spans()[-1]

    def carrier(self, target: ReadableSpan, scores: Mapping[str, float]) -> ReadableSpan:
        """A carrier (EVALUATOR) span bringing late scores for ``target``."""
        ctx = target.get_span_context()
        assert ctx is not None
        attrs: dict[str, Any] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_EVALUATOR,
            semconv.EVAL_TARGET_SPAN_ID: format(ctx.span_id, "016x"),
            semconv.EVAL_TARGET_TRACE_ID: format(ctx.trace_id, "032x"),
        }
        for metric, value in scores.items():
            attrs[semconv.eval_score(metric)] = value
        link = Link(SpanContext(ctx.trace_id, ctx.span_id, is_remote=True, trace_flags=TraceFlags(1)))
        with self.tracer.start_as_current_span(semconv.CARRIER_SPAN_NAME, links=[link], attributes=attrs):
            pass
        return self.exporter.get_finished_spans()[-1]

    def all(self) -> list[ReadableSpan]:
        """Every span ended so far."""
        return list(self.exporter.get_finished_spans())


def otlp_bytes(spans: Sequence[ReadableSpan]) -> bytes:
    """The spans as the OTLP/HTTP protobuf exporter sends them."""
    return bytes(encode_spans(spans).SerializeToString())


def otlp_json(spans: Sequence[ReadableSpan]) -> str:
    """The spans as OTLP/JSON: proto3 JSON of the real encoder's message, with hex ids as the spec writes them."""
    document = json_format.MessageToDict(encode_spans(spans))
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document)


def nested_value_json(kind: str, levels: int) -> str:
    """An OTLP/JSON ``AnyValue`` that is a ``kvlistValue`` or an ``arrayValue`` nested ``levels`` times.

    Written as text: ``json.dumps`` itself gives up on a few hundred levels of dicts.
    """
    if kind == "kvlistValue":
        opening, closing = '{"kvlistValue": {"values": [{"key": "k", "value": ', "}]}}"
    else:
        opening, closing = '{"arrayValue": {"values": [', "]}}"
    return opening * levels + '{"stringValue": "leaf"}' + closing * levels


def deep_protobuf_export(spans: Sequence[ReadableSpan], levels: int) -> bytes:
    """The spans as protobuf, the value of every attribute ``deep`` swapped for a ``kvlistValue`` nested
    ``levels`` times (protobuf writes such a message; its parser refuses it past 100 nested messages)."""
    request = encode_spans(spans)
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                for attribute in span.attributes:
                    if attribute.key == "deep":
                        value = attribute.value
                        for _ in range(levels):
                            value = value.kvlist_value.values.add(key="k").value
                        value.string_value = "leaf"
    return bytes(request.SerializeToString())


def hex_span_id(span: ReadableSpan) -> str:
    """The span's id as the store keeps it."""
    ctx = span.get_span_context()
    assert ctx is not None
    return format(ctx.span_id, "016x")


def start_collector(target: Path | str, **options: Any) -> Collector:
    """A real collector on 127.0.0.1 with free ports (HTTP and gRPC), running on a background thread, storing in
    ``target``: a SQLite file, or a ``postgresql://`` URL.

    Scoring, the watcher and the page are off unless ``options`` turns them on. Stop it with ``.stop()``.
    """
    settings: dict[str, Any] = {"port": 0, "grpc_port": 0, "score": False, "watch": False, "page": False}
    settings.update(options)
    where = {"store": target} if str(target).startswith("postgresql://") else {"db": Path(target)}
    return Collector(CollectorConfig(**where, **settings)).start_in_thread()


def grpc_export(
    port: int,
    service: str,
    body: bytes,
    reply_type: Callable[[bytes], Any] | None = None,
    metadata: tuple[tuple[str, str], ...] = (),
    timeout: float = 10,
) -> Any:
    """One ``Export`` call to ``service`` of a collector on 127.0.0.1 with ``body`` sent as it is (no client
    encoding, so a test can send any bytes); the reply parsed by ``reply_type`` (its ``FromString``), raw
    bytes without it. A refusal raises ``grpc.RpcError``."""
    import grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(
            f"/{service}/Export", request_serializer=lambda b: b, response_deserializer=reply_type
        )
        return export(body, timeout=timeout, metadata=metadata)
