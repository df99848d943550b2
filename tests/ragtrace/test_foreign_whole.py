"""``join_trace``: the RAG calls of a whole trace at once (the collector's case), by the processor's rules.

The last test runs a real OpenInference-instrumented LangChain chain and checks that the whole-trace join and
the processor's bottom-up joiner build the same record from the same spans.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from ragtrace import semconv
from ragtrace._foreign import SpanView, join_trace
from tests.ragtrace.foreign_rig import texts
from tests.ragtrace.test_foreign_langchain import QUESTION, instrumented, lcel_chain

KIND = semconv.OPENINFERENCE_SPAN_KIND


def _span(span_id: str, parent: str | None, start: int, failed: bool = False, **attributes: Any) -> SpanView:
    return SpanView(span_id, parent, start, start + 1, failed, attributes)


def _chain(
    span_id: str, parent: str | None, start: int, query: str | None = "q?", answer: str | None = "a."
) -> SpanView:
    attributes: dict[str, Any] = {KIND: semconv.SPAN_KIND_CHAIN}
    if query is not None:
        attributes[semconv.INPUT_VALUE] = query
    if answer is not None:
        attributes[semconv.OUTPUT_VALUE] = answer
    return _span(span_id, parent, start, **attributes)


def _retriever(span_id: str, parent: str, start: int, *contents: str, kind: str = "RETRIEVER") -> SpanView:
    attributes: dict[str, Any] = {KIND: kind}
    for i, content in enumerate(contents):
        attributes[semconv.retrieval_document(i, semconv.DOCUMENT_CONTENT)] = content
    return _span(span_id, parent, start, **attributes)


def test_the_topmost_chain_is_the_root_and_gathers_every_retrieval_in_start_order() -> None:
    spans = [
        _retriever("r2", "inner", 30, "second"),
        _chain("inner", "top", 20, query=None, answer=None),
        _retriever("r1", "top", 10, "first"),
        _chain("top", None, 0),
    ]
    (joined,) = join_trace(spans)
    assert joined.root.span_id == "top" and joined.reason is None and joined.record is not None
    assert (joined.record.query, texts(joined.record), joined.record.answer) == ("q?", ["first", "second"], "a.")


def test_an_outer_retrievers_documents_stand_for_those_nested_in_it() -> None:
    spans = [
        _chain("top", None, 0),
        _retriever("outer", "top", 10, "chosen"),
        _retriever("inner", "outer", 11, "candidate 1", "candidate 2"),
    ]
    (joined,) = join_trace(spans)
    assert joined.record is not None and texts(joined.record) == ["chosen"]


def test_a_rerank_replaces_the_documents_it_was_given() -> None:
    rerank = {
        KIND: semconv.SPAN_KIND_RERANKER,
        semconv.retrieval_document(0, semconv.DOCUMENT_CONTENT, semconv.RERANKER_INPUT_DOCUMENTS): "b",
        semconv.retrieval_document(1, semconv.DOCUMENT_CONTENT, semconv.RERANKER_INPUT_DOCUMENTS): "a",
        semconv.retrieval_document(0, semconv.DOCUMENT_CONTENT, semconv.RERANKER_OUTPUT_DOCUMENTS): "a",
    }
    spans = [_chain("top", None, 0), _retriever("r", "top", 10, "b", "a"), _span("rr", "top", 20, **rerank)]
    (joined,) = join_trace(spans)
    assert joined.record is not None and texts(joined.record) == ["a"]


def test_an_agents_two_chains_are_two_calls_and_the_last_generation_answers() -> None:
    llm = {KIND: semconv.SPAN_KIND_LLM, semconv.LLM_OUTPUT_MESSAGE_CONTENT: "generated"}
    spans = [
        _span("agent", None, 0, **{KIND: "AGENT"}),  # OpenInference's agent kind: transparent to joining
        _chain("c1", "agent", 10, answer=None),
        _retriever("r1", "c1", 11, "one"),
        _span("l0", "c1", 12, **{**llm, semconv.LLM_OUTPUT_MESSAGE_CONTENT: "draft"}),
        _span("l1", "c1", 13, **llm),
        _chain("c2", "agent", 50, query="q2?"),
        _retriever("r2", "c2", 51, "two"),
    ]
    first, second = join_trace(spans)
    assert first.record is not None and second.record is not None
    assert (first.root.span_id, first.record.answer) == ("c1", "generated")
    assert (second.root.span_id, second.record.query, texts(second.record)) == ("c2", "q2?", ["two"])


def test_decorators_win_and_a_chain_without_retrieval_is_no_call() -> None:
    own = {semconv.RAGTRACE_ROLE: semconv.ROLE_RAG, KIND: semconv.SPAN_KIND_CHAIN}
    assert join_trace([_span("rag", None, 0, **own), _chain("c", "rag", 1), _retriever("r", "c", 2, "x")]) == []
    assert join_trace([_chain("c", None, 0)]) == []


@pytest.mark.parametrize(
    ("spans", "reason"),
    [
        ([_chain("c", None, 0, query=semconv.OPENINFERENCE_REDACTED), _retriever("r", "c", 1, "x")], "no_content"),
        ([_chain("c", None, 0, answer=None), _retriever("r", "c", 1, "x")], "no_content"),
        ([_span("c", None, 0, True, **{KIND: semconv.SPAN_KIND_CHAIN}), _retriever("r", "c", 1, "x")], "app_error"),
    ],
)
def test_what_cannot_be_scored_says_why(spans: list[SpanView], reason: str) -> None:
    (joined,) = join_trace(spans)
    assert (joined.record, joined.reason) == (None, reason)


def test_parent_ids_that_loop_end() -> None:
    spans = [_chain("a", "b", 0), _chain("b", "a", 1), _retriever("r", "a", 2, "x")]
    assert join_trace(spans) == []  # no root-kind span is topmost in a loop, and nothing hangs


def _view(span: ReadableSpan) -> SpanView:
    assert span.context is not None
    # As a collector reads it back: attributes through JSON.
    attributes = json.loads(json.dumps(dict(span.attributes or {})))
    return SpanView(
        format(span.context.span_id, "016x"),
        format(span.parent.span_id, "016x") if span.parent is not None else None,
        span.start_time or 0,
        span.end_time or 0,
        span.status.status_code is StatusCode.ERROR,
        attributes,
    )


@pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated")
def test_the_whole_trace_join_agrees_with_the_processors_joiner_on_a_real_chain() -> None:
    with instrumented() as p:
        lcel_chain().invoke(QUESTION)
        spans = p.exported()
    (in_app,) = p.metric.records
    (joined,) = join_trace(
        [_view(s) for s in spans if semconv.EVAL_DECISION not in (s.attributes or {})]
        + [_view(s) for s in spans if semconv.EVAL_DECISION in (s.attributes or {})]
    )
    assert joined.record is not None
    assert (joined.record.query, texts(joined.record), joined.record.answer) == (
        in_app.query,
        texts(in_app),
        in_app.answer,
    )
    assert [dict(c.metadata) for c in joined.record.chunks] == [dict(c.metadata) for c in in_app.chunks]
