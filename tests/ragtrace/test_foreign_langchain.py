"""RAG calls traced by OpenInference's LangChain instrumentation are scored, with nothing changed in the app.

Real ``langchain-core`` and ``openinference-instrumentation-langchain``: a fake chat model and an in-memory
retriever, no network. Each test checks the record scoring saw (query, chunks in order, answer), which
span carries the decision, and that every span was exported exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor

import ragtrace
from ragtrace import _capture, semconv
from tests.ragtrace.foreign_rig import Pipeline, decision, pipeline, texts

# OpenInference reads a chat message's text through the method LangChain 1.x deprecated; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated")

QUESTION = "How fast are refunds paid?"
ANSWER = "Refunds are paid within 14 days."
DOCUMENTS = [
    Document("Shipping takes 3 days.", metadata={"source": "hb-3"}),
    Document("Refunds are paid within 14 days.", metadata={"source": "hb-12"}),
    Document("Refunds need a receipt.", metadata={"source": "hb-13"}),
]
RANKED = ["Refunds are paid within 14 days.", "Refunds need a receipt."]
"""What the retriever returns for QUESTION, in its order (not the order the documents were added in)."""


class KeywordRetriever(BaseRetriever):
    """An in-memory retriever: the ``k`` documents sharing most words with the query, best first."""

    documents: list[Document]
    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = set(re.findall(r"\w+", query.lower()))
        overlap = [len(words & set(re.findall(r"\w+", d.page_content.lower()))) for d in self.documents]
        ranked = sorted(range(len(self.documents)), key=lambda i: -overlap[i])
        return [self.documents[i] for i in ranked[: self.k] if overlap[i]]


def _format(documents: list[Document]) -> str:
    return "\n".join(d.page_content for d in documents)


def lcel_chain(answers: list[str] | None = None) -> Runnable[Any, Any]:
    """The usual LCEL RAG chain: a string in, a string out."""
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    llm = FakeListChatModel(responses=answers or [ANSWER])
    retriever = KeywordRetriever(documents=DOCUMENTS)
    return {"context": retriever | _format, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()


@contextmanager
def instrumented(**kwargs: Any) -> Iterator[Pipeline]:
    p = pipeline(**kwargs)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=p.provider)
    try:
        yield p
    finally:
        instrumentor.uninstrument()
        p.provider.shutdown()


def test_an_lcel_chain_is_scored_on_its_top_run_with_its_query_chunks_and_answer() -> None:
    with instrumented() as p:
        assert lcel_chain().invoke(QUESTION) == ANSWER
        spans = p.exported()
        (root,) = p.roots()
    assert root.parent is None and root.name == "RunnableSequence"
    assert decision(root) == (semconv.DECISION_EVALUATED, None)
    assert (root.attributes or {})[semconv.eval_score("seen")] == 1.0
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == (QUESTION, RANKED, ANSWER)
    assert dict(record.chunks[0].metadata) == {"source": "hb-12"}
    # Every span of the run was exported once, the nested chains above the retriever untouched.
    assert len(spans) == 9
    assert [s.name for s in spans if s is not root and semconv.EVAL_DECISION in (s.attributes or {})] == []


def test_a_chain_with_dict_input_and_output_is_read_by_its_keys() -> None:
    # The shape of create_retrieval_chain: {"input": ...} in, {"input", "context", "answer"} out.
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {input}")
    retriever = KeywordRetriever(documents=DOCUMENTS)
    chain = RunnablePassthrough.assign(context=itemgetter("input") | retriever | _format).assign(
        answer=prompt | FakeListChatModel(responses=[ANSWER]) | StrOutputParser()
    )
    with instrumented() as p:
        result = chain.invoke({"input": QUESTION})
        (root,) = p.roots()
    assert result["answer"] == ANSWER
    assert (root.attributes or {})[semconv.OUTPUT_MIME_TYPE] == semconv.MIME_TYPE_JSON
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == (QUESTION, RANKED, ANSWER)


def test_several_rag_calls_in_one_trace_are_each_scored() -> None:
    chain = lcel_chain(["Refunds are paid within 14 days.", "It takes 3 days."])
    with instrumented() as p:
        with p.provider.get_tracer("app").start_as_current_span("POST /ask") as request:
            chain.invoke(QUESTION)
            chain.invoke("How long does shipping take?")
        roots = p.roots()
        spans = p.exported()
    trace_id = request.get_span_context().trace_id
    assert [r.name for r in roots] == ["RunnableSequence", "RunnableSequence"]
    assert {r.context.trace_id for r in roots} == {trace_id}
    assert len(spans) == 2 * 9 + 1
    by_query = {r.query: r for r in p.metric.records}
    assert texts(by_query[QUESTION]) == RANKED and by_query[QUESTION].answer == ANSWER
    assert texts(by_query["How long does shipping take?"]) == ["Shipping takes 3 days."]
    assert by_query["How long does shipping take?"].answer == "It takes 3 days."


def test_an_agent_that_runs_a_rag_chain_twice_has_each_call_scored() -> None:
    rag = lcel_chain(["Refunds are paid within 14 days.", "It takes 3 days."])
    agent = RunnableLambda(lambda q: [rag.invoke(q), rag.invoke("How long does shipping take?")]).with_config(
        run_name="support_agent"
    )
    with instrumented() as p:
        agent.invoke(QUESTION)
        roots = p.roots()
        (top,) = [s for s in p.exported() if s.parent is None]
    # OpenInference makes a run named like an agent an AGENT span: no root kind, so each chain under it is one.
    assert (top.attributes or {})[semconv.OPENINFERENCE_SPAN_KIND] == "AGENT"
    assert [r.name for r in roots] == ["RunnableSequence", "RunnableSequence"]
    assert sorted((r.query, r.answer) for r in p.metric.records) == [
        ("How fast are refunds paid?", "Refunds are paid within 14 days."),
        ("How long does shipping take?", "It takes 3 days."),
    ]


def test_a_chain_without_retrieval_is_no_rag_call() -> None:
    chain = ChatPromptTemplate.from_template("Say {word}") | FakeListChatModel(responses=["hi"]) | StrOutputParser()
    with instrumented() as p:
        chain.invoke({"word": "hi"})
        assert p.roots() == []
        assert p.processor.join_stats is not None and p.processor.join_stats.traces == 0
    assert p.metric.records == []


def test_hidden_inputs_are_not_scored_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUTS", "true")
    with instrumented() as p:
        lcel_chain().invoke(QUESTION)
        (root,) = p.roots()
    assert (root.attributes or {})[semconv.INPUT_VALUE] == semconv.OPENINFERENCE_REDACTED
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert semconv.eval_score("seen") not in (root.attributes or {})
    assert p.metric.records == []


def test_hidden_outputs_are_not_scored_and_say_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_OUTPUTS", "true")
    with instrumented() as p:
        lcel_chain().invoke(QUESTION)
        (root,) = p.roots()
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert p.metric.records == []


def test_a_chain_that_raises_is_not_scored_as_an_app_error() -> None:
    def explode(_: str) -> str:
        raise RuntimeError("model down")

    retriever = KeywordRetriever(documents=DOCUMENTS)
    chain = {"context": retriever | _format, "question": RunnablePassthrough()} | RunnableLambda(
        lambda x: explode(x["question"])
    )
    with instrumented() as p:
        with pytest.raises(RuntimeError, match="model down"):
            chain.invoke(QUESTION)
        (root,) = p.roots()
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_APP_ERROR)
    assert p.metric.records == []


def test_ragtrace_decorators_win_over_the_chain_they_wrap() -> None:
    chain = lcel_chain()

    @ragtrace.rag
    def answer(question: str) -> str:
        return str(chain.invoke(question))

    with instrumented() as p:
        _capture.set_tracer_provider(p.provider)
        try:
            answer(QUESTION)
        finally:
            _capture.set_tracer_provider(None)
        (root,) = p.roots()
        spans = p.exported()
    assert (root.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG
    assert len(spans) == 9 + 1
    (record,) = p.metric.records
    assert record.query == QUESTION and record.answer == ANSWER  # ragtrace's own record: no chunks given


def test_recognition_can_be_switched_off() -> None:
    with instrumented(recognize=False) as p:
        lcel_chain().invoke(QUESTION)
        assert p.roots() == []
        assert len(p.exported()) == 9
    assert p.processor.join_stats is None


def test_a_rule_names_the_rag_root() -> None:
    # The app's own span around the chain, named by a rule: it is the root; the chain under it is not.
    with instrumented(rag_roots=[ragtrace.Rule.name_matches("answer_*")]) as p:
        with p.provider.get_tracer("app").start_as_current_span("answer_question"):
            lcel_chain().invoke(QUESTION)
        (root,) = p.roots()
        spans = p.exported()
    assert root.name == "answer_question" and len(spans) == 9 + 1
    (record,) = p.metric.records
    # No query or answer of its own: the retriever's query and the chat model's answer stand in.
    assert (record.query, texts(record), record.answer) == (QUESTION, RANKED, ANSWER)
