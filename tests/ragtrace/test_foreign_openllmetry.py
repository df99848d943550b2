"""RAG calls traced by OpenLLMetry's LangChain instrumentation (``opentelemetry-instrumentation-langchain``) are
scored, with nothing changed in the app: its workflow span is the root, its retriever task gives the chunks.

The instrumentation is set up once for the module: instrumented a second time in one process, it keeps
sending spans to the first provider.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from ragtrace import semconv
from tests.ragtrace.foreign_rig import Pipeline, Switch, decision, pipeline, texts
from tests.ragtrace.test_foreign_langchain import ANSWER, QUESTION, RANKED, lcel_chain


@pytest.fixture(scope="module")
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(Switch())
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider
    instrumentor.uninstrument()
    provider.shutdown()


@contextmanager
def instrumented(provider: TracerProvider, **kwargs: Any) -> Iterator[Pipeline]:
    p = pipeline(provider, **kwargs)
    try:
        yield p
    finally:
        p.processor.shutdown()


def test_a_workflow_is_scored_with_its_query_chunks_and_answer(provider: TracerProvider) -> None:
    with instrumented(provider) as p:
        assert lcel_chain().invoke(QUESTION) == ANSWER
        (root,) = p.roots()
        spans = p.exported()
    attributes = root.attributes or {}
    assert attributes[semconv.TRACELOOP_SPAN_KIND] == semconv.TRACELOOP_KIND_WORKFLOW and root.parent is None
    assert decision(root) == (semconv.DECISION_EVALUATED, None)
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == (QUESTION, RANKED, ANSWER)
    assert dict(record.chunks[1].metadata) == {"source": "hb-13"}
    assert all(s is root or semconv.EVAL_DECISION not in (s.attributes or {}) for s in spans)


def test_content_tracing_off_is_not_scored_and_says_so(
    provider: TracerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "false")
    with instrumented(provider) as p:
        lcel_chain().invoke(QUESTION)
        (root,) = p.roots()
    assert semconv.TRACELOOP_ENTITY_INPUT not in (root.attributes or {})
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert p.metric.records == []


def test_the_provider_reaches_a_generate_span_through_a_chain_span(provider: TracerProvider) -> None:
    """A @generate function runs a LangChain runnable that calls the OpenAI client: OpenLLMetry's chain span is
    the client span's parent, and the provider the real OpenInference OpenAI instrumentation names on the
    client span still reaches the @generate span above the chain."""
    from langchain_core.runnables import RunnableLambda
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    import ragtrace
    from ragtrace.testing import StubOpenAIServer

    client_instrumentor = OpenAIInstrumentor()
    client_instrumentor.instrument(tracer_provider=provider)
    try:
        with (
            instrumented(provider) as p,
            StubOpenAIServer() as server,
            OpenAI(base_url=server.base_url, api_key="not-needed") as client,
        ):
            chat = RunnableLambda(
                lambda q: client.chat.completions.create(model="m", messages=[{"role": "user", "content": q}])
            )

            @ragtrace.generate(model="m", tracer_provider=provider)
            def write(question: str) -> str:
                return chat.invoke(question).choices[0].message.content or ""

            write(QUESTION)
            spans = p.exported()
    finally:
        client_instrumentor.uninstrument()
    by_id = {s.context.span_id: s for s in spans}
    (generated,) = [s for s in spans if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_GENERATE]
    (client_span,) = [s for s in spans if semconv.LLM_SYSTEM in (s.attributes or {})]
    chain = by_id[client_span.parent.span_id]  # type: ignore[union-attr]
    assert chain.attributes[semconv.TRACELOOP_SPAN_KIND] and chain.parent.span_id == generated.context.span_id  # type: ignore[index,union-attr]
    assert generated.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"  # type: ignore[index]
