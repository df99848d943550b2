"""RAG calls traced with the OpenTelemetry GenAI conventions are scored: spans written here with the OTel API
as a GenAI instrumentation writes them (``invoke_workflow``, ``retrieval``, ``chat``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.trace import Tracer

from ragtrace import semconv
from tests.ragtrace.foreign_rig import Pipeline, decision, pipeline, shut, texts

QUESTION = "Where is the Eiffel Tower?"
ANSWER = "It is in Paris."
DOCUMENTS = [
    {"id": "d-2", "score": 0.9, "content": "The Eiffel Tower is in Paris."},
    {"id": "d-7", "score": 0.4, "content": "Paris is the capital of France.", "metadata": {"page": 3}},
]


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


@pytest.fixture
def p() -> Iterator[Pipeline]:
    yield from shut(pipeline())


def rag_call(tracer: Tracer, documents: object = DOCUMENTS, *, workflow_messages: bool = True) -> None:
    """A GenAI-instrumented RAG call: a workflow, a retrieval, a chat."""
    workflow = {semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_INVOKE_WORKFLOW}
    if workflow_messages:
        workflow[semconv.GEN_AI_INPUT_MESSAGES] = messages("user", QUESTION)
    with tracer.start_as_current_span("invoke_workflow support", attributes=workflow) as span:
        retrieval = {
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
            semconv.GEN_AI_RETRIEVAL_QUERY_TEXT: QUESTION,
            semconv.GEN_AI_DATA_SOURCE_ID: "kb",
        }
        if documents is not None:
            retrieval[semconv.GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(documents)
        with tracer.start_as_current_span("retrieval kb", attributes=retrieval):
            pass
        chat = {semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_CHAT}
        with tracer.start_as_current_span("chat gpt-4o", attributes=chat) as generation:
            generation.set_attribute(semconv.GEN_AI_OUTPUT_MESSAGES, messages("assistant", ANSWER))
        if workflow_messages:
            span.set_attribute(semconv.GEN_AI_OUTPUT_MESSAGES, messages("assistant", ANSWER))


def test_a_genai_workflow_is_scored(p: Pipeline) -> None:
    rag_call(p.provider.get_tracer("genai"))
    (root,) = p.roots()
    assert root.name == "invoke_workflow support"
    assert decision(root) == (semconv.DECISION_EVALUATED, None)
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == (QUESTION, [d["content"] for d in DOCUMENTS], ANSWER)
    assert [(c.id, c.score) for c in record.chunks] == [("d-2", 0.9), ("d-7", 0.4)]
    assert dict(record.chunks[1].metadata) == {"page": 3}


def test_a_workflow_without_messages_takes_the_retrieval_query_and_the_chat_answer(p: Pipeline) -> None:
    rag_call(p.provider.get_tracer("genai"), workflow_messages=False)
    assert len(p.roots()) == 1
    (record,) = p.metric.records
    assert (record.query, record.answer) == (QUESTION, ANSWER)


@pytest.mark.parametrize(
    "documents",
    [None, [{"id": "d-2", "score": 0.9}]],
    ids=["no-documents-attribute", "ids-and-scores-only"],
)
def test_documents_without_their_text_are_not_scored(p: Pipeline, documents: object) -> None:
    rag_call(p.provider.get_tracer("genai"), documents)
    (root,) = p.roots()
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert p.metric.records == []
