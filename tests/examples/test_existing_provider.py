"""examples/existing_provider.py: ragtrace added to an app's own provider with OpenAI auto-instrumentation."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.testing import StubOpenAIServer

pytest.importorskip("openinference.instrumentation.openai")

from examples.existing_provider import run, span_tree


def test_llm_spans_nest_under_the_rag_span_and_judge_calls_make_no_spans() -> None:
    exporter = InMemorySpanExporter()
    questions = ["When did the Golden Gate Bridge open?", "What is Big Ben?"]
    with StubOpenAIServer() as server:
        run(server.base_url, exporter, questions=questions)
        app_calls = [r for r in server.chat_requests if r.step is None]
        judge_calls = [r for r in server.requests if r.step is not None or r.is_embeddings]
    spans = exporter.get_finished_spans()
    rag_spans = [s for s in spans if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG]
    llm_spans = [s for s in spans if (s.attributes or {}).get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_LLM]
    assert len(app_calls) == len(questions) == len(rag_spans) == len(llm_spans)
    assert judge_calls, "the judge scored through the same server"
    # Three spans per question (RAG, retriever, OpenAI call): the judge's calls were not traced.
    assert len(spans) == 3 * len(questions)
    for rag_span in rag_spans:
        assert rag_span.context is not None
        (llm,) = [s for s in llm_spans if s.parent is not None and s.parent.span_id == rag_span.context.span_id]
        assert llm.context is not None and llm.context.trace_id == rag_span.context.trace_id
        attrs = rag_span.attributes or {}
        assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
        # Every claim supported, scored by the judge's P("yes") (the stub's for a claim all in the chunk).
        assert attrs[semconv.eval_label("faithfulness")] == "faithful"
        assert 0.5 <= attrs[semconv.eval_score("faithfulness")] < 1.0  # type: ignore[operator]
        assert attrs[semconv.OUTPUT_VALUE] in llm.attributes[semconv.OUTPUT_VALUE]  # type: ignore[index,operator]
    tree = span_tree(spans)
    score = (rag_spans[0].attributes or {})[semconv.eval_score("faithfulness")]
    expected = f"existing_app.answer [CHAIN]  faithfulness={score:.2f}\n  App.retrieve [RETRIEVER]\n"
    expected += "  ChatCompletion [LLM]"
    assert expected in tree
