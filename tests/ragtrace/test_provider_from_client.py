"""``gen_ai.provider.name`` from the model client: a ``@generate`` span given no ``provider=`` takes the
provider the real OpenInference OpenAI instrumentation names on the client span beneath it (real HTTP to
the stub OpenAI server); an explicit ``provider=`` wins, and other spans are left alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from ragtrace.testing import FakeJudge, StubOpenAIServer

openai_instrumentation = pytest.importorskip("openinference.instrumentation.openai")


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter, Any, Any]]:
    from openai import OpenAI

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    instrumentor = openai_instrumentation.OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    # Not sampled: the spans pass straight through, each exported as it ends.
    handle = ragtrace.instrument(provider, SimpleSpanProcessor(exporter), judge=FakeJudge(), sample_rate=0.0)
    with StubOpenAIServer() as server, OpenAI(base_url=server.base_url, api_key="not-needed") as client:
        try:
            yield provider, exporter, client, handle.processor
        finally:
            handle.shutdown()
            instrumentor.uninstrument()
            provider.shutdown()


def _by_role(exporter: InMemorySpanExporter, role: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == role]


def test_a_generate_span_takes_the_provider_of_its_model_client(traced: Any) -> None:
    provider, exporter, client, _ = traced

    @ragtrace.generate(model="gpt-4o-mini", tracer_provider=provider)
    def write(question: str) -> str:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": question}])
        return reply.choices[0].message.content or ""

    @ragtrace.generate(model="gpt-4o-mini", provider="azure.ai.openai", tracer_provider=provider)
    def write_on_azure(question: str) -> str:
        return write.__wrapped__(question)  # type: ignore[attr-defined,no-any-return]

    @ragtrace.rag(tracer_provider=provider)
    def answer(question: str) -> str:
        ragtrace.record(chunks=["Paris is the capital of France."])
        return write(question) + write_on_azure(question)

    answer("What is the capital of France?")
    (named, explicit) = sorted(_by_role(exporter, semconv.ROLE_GENERATE), key=lambda s: s.start_time or 0)
    # This OpenInference version names the product (llm.system) at the start of the client's span.
    client_spans = [s for s in exporter.get_finished_spans() if semconv.LLM_SYSTEM in (s.attributes or {})]
    assert client_spans and client_spans[0].attributes[semconv.LLM_SYSTEM] == "openai"  # type: ignore[index]
    assert named.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]
    assert explicit.attributes[semconv.GEN_AI_PROVIDER_NAME] == "azure.ai.openai"  # type: ignore[index]
    # The RAG span (not an inference span) is left alone.
    (rag,) = _by_role(exporter, semconv.ROLE_RAG)
    assert semconv.GEN_AI_PROVIDER_NAME not in (rag.attributes or {})


def test_a_span_between_does_not_hide_the_client_and_is_forgotten_when_it_ends(traced: Any) -> None:
    """The client's span stands beneath the app's own span (as beneath a framework's chain span: OpenLLMetry's
    LangChain instrumentation makes its chain the client span's parent); the provider still reaches the
    @generate span, and no span is remembered once the call ends."""
    provider, exporter, client, processor = traced
    tracer = provider.get_tracer("app")

    @ragtrace.generate(model="gpt-4o-mini", tracer_provider=provider)
    def write(question: str) -> str:
        with tracer.start_as_current_span("prepare"), tracer.start_as_current_span("format"):
            pass  # two levels beneath, no provider: remembered while open, then forgotten
        with tracer.start_as_current_span("call"):
            messages = [{"role": "user", "content": question}]
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        return reply.choices[0].message.content or ""

    write("What is the capital of France?")
    (generated,) = _by_role(exporter, semconv.ROLE_GENERATE)
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}
    (client_span,) = [s for s in by_id.values() if semconv.LLM_SYSTEM in (s.attributes or {})]
    assert by_id[client_span.parent.span_id].name == "call"  # type: ignore[union-attr]
    assert generated.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]
    assert processor._adoption._beneath == {}


def test_a_retrieval_beneath_a_generation_keeps_its_clients_to_itself(traced: Any) -> None:
    """Nearest wins and stops there: the retrieval takes its embedder's provider, and a second client beneath
    it (a reranker) names neither span; the generation takes its own model's, from beneath an app span."""
    provider, exporter, _, _ = traced
    tracer = provider.get_tracer("clients")  # model-client spans as an instrumentation starts them

    def client_call(system: str) -> None:
        with tracer.start_as_current_span(f"{system} call", attributes={semconv.GEN_AI_SYSTEM: system}):
            pass

    @ragtrace.retrieve(data_source="kb", tracer_provider=provider)
    def search(question: str) -> list[str]:
        client_call("OpenAI")  # the embedder
        client_call("cohere")  # the reranker
        return ["Paris is the capital of France."]

    @ragtrace.generate(model="claude", tracer_provider=provider)
    def write(question: str) -> str:
        search(question)
        with tracer.start_as_current_span("prompt"):
            client_call("anthropic")
        return "Paris."

    write("What is the capital of France?")
    (retrieved,) = _by_role(exporter, semconv.ROLE_RETRIEVE)
    (generated,) = _by_role(exporter, semconv.ROLE_GENERATE)
    assert retrieved.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]
    assert generated.attributes[semconv.GEN_AI_PROVIDER_NAME] == "anthropic"  # type: ignore[index]


def test_a_span_with_a_provider_of_its_own_does_not_pass_it_up(traced: Any) -> None:
    provider, exporter, _, _ = traced
    tracer = provider.get_tracer("clients")

    @ragtrace.retrieve(data_source="kb", provider="cohere", tracer_provider=provider)
    def search(question: str) -> list[str]:
        return ["Paris is the capital of France."]

    @ragtrace.generate(model="gpt-4o-mini", tracer_provider=provider)
    def write(question: str) -> str:
        search(question)  # a retrieval on another provider, first
        with tracer.start_as_current_span("chat", attributes={semconv.GEN_AI_SYSTEM: "openai"}):
            pass
        return "Paris."

    write("What is the capital of France?")
    (generated,) = _by_role(exporter, semconv.ROLE_GENERATE)
    assert generated.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]
