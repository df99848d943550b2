"""What the GenAI conventions ask of retrieval and inference spans, on the spans the decorators make."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

import ragtrace
from ragtrace import ConfigurationError, _capture, semconv


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _capture.set_tracer_provider(provider)
    yield exporter
    _capture.set_tracer_provider(None)
    provider.shutdown()


def test_provider_top_k_and_model_reach_the_spans(exporter: InMemorySpanExporter) -> None:
    @ragtrace.retrieve(data_source="handbook", top_k=4, provider="openai")
    def search(q: str) -> list[str]:
        return ["a", "b"]

    @ragtrace.generate(model="gpt-4o-mini", provider="openai")
    def write(q: str) -> str:
        return "answer"

    @ragtrace.rag
    def ask(q: str) -> str:
        search(q)
        return write(q)

    ask("q")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    retriever = spans["search"].attributes or {}
    generation = spans["write"].attributes or {}
    assert retriever[semconv.GEN_AI_OPERATION_NAME] == "retrieval"
    assert retriever[semconv.GEN_AI_RETRIEVAL_TOP_K] == 4
    assert retriever[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert retriever[semconv.GEN_AI_DATA_SOURCE_ID] == "handbook"
    assert generation[semconv.GEN_AI_OPERATION_NAME] == "chat"
    assert generation[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert generation[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    # User functions: kind INTERNAL and the function's name (docs/backends.md, "Span kinds and names").
    assert {s.kind for s in spans.values()} == {SpanKind.INTERNAL}


def test_a_retriever_of_your_own_carries_no_provider(exporter: InMemorySpanExporter) -> None:
    @ragtrace.retrieve
    def search(q: str) -> list[str]:
        return ["a"]

    search("q")
    [span] = exporter.get_finished_spans()
    attributes = span.attributes or {}
    assert semconv.GEN_AI_PROVIDER_NAME not in attributes
    assert semconv.GEN_AI_RETRIEVAL_TOP_K not in attributes


@pytest.mark.parametrize("top_k", [0, -1, True, 2.5, "4"])
def test_a_bad_top_k_raises_at_decoration(top_k: object) -> None:
    with pytest.raises(ConfigurationError, match="top_k"):
        ragtrace.retrieve(top_k=top_k)  # type: ignore[call-overload]


@pytest.mark.parametrize("provider", ["", 3])
def test_a_bad_provider_raises_at_decoration(provider: object) -> None:
    with pytest.raises(ConfigurationError, match="provider"):
        ragtrace.generate(provider=provider)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="provider"):
        ragtrace.retrieve(provider=provider)  # type: ignore[call-overload]
