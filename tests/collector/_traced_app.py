"""An app traced the way users trace theirs: OpenInference's LangChain instrumentation on an SDK provider whose
only processor sends to an exporter (no ragtrace in the app), and helpers that deliver its spans to a
collector with the real OTLP/HTTP exporter, in several exports and out of order."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ragtrace_collector._server import Collector

from ragtrace import semconv


@dataclass(frozen=True)
class TracedApp:
    """The app's provider (for spans of its own, such as a web framework's) and what it has ended so far."""

    provider: TracerProvider
    memory: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        """Every span ended so far, in the order they ended."""
        return list(self.memory.get_finished_spans())


@contextmanager
def langchain_app(service: str = "lc-app") -> Iterator[TracedApp]:
    """A provider instrumented by OpenInference for LangChain; its ended spans are kept in memory, to be sent."""
    with traced_app(LangChainInstrumentor(), service) as app:
        yield app


@contextmanager
def traced_app(instrumentor: Any, service: str) -> Iterator[TracedApp]:
    """A provider instrumented by ``instrumentor`` (an OpenTelemetry ``BaseInstrumentor``); its ended spans are
    kept in memory, to be sent."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({semconv.SERVICE_NAME: service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield TracedApp(provider, memory)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def send(collector: Collector, spans: Sequence[ReadableSpan]) -> None:
    """One export through the real OTLP/HTTP exporter; it must be acknowledged."""
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
    try:
        assert exporter.export(list(spans)) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def shuffled_parts(spans: Sequence[ReadableSpan], parts: int, seed: int) -> list[list[ReadableSpan]]:
    """``spans`` in a seeded random order, cut into ``parts`` exports, none empty."""
    order = list(spans)
    random.Random(seed).shuffle(order)
    size = -(-len(order) // parts)
    return [order[i : i + size] for i in range(0, len(order), size)]


def span_id(span: ReadableSpan) -> str:
    """The span's id as the store keeps it."""
    assert span.context is not None
    return format(span.context.span_id, "016x")
