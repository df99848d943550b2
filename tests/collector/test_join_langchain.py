"""The collector joins and scores RAG calls an app traced with OpenInference's LangChain instrumentation and sent
with nothing but an OTLP exporter (issue 14, in the collector).

Real parts: ``langchain-core`` and ``openinference-instrumentation-langchain`` make the spans, the real OTLP/HTTP
exporter sends them to a real collector in several exports and shuffled order, into a real SQLite file; the
collector scores with ragtrace's suite and the offline judge. The settle window is an hour, so the collector's
own thread never joins during a test: each test drives the settler with ``settle_once`` at chosen times.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from ragtrace import semconv
from ragtrace.metrics import build_suite
from tests.collector._join import HOUR, LIMITS, NS, settle
from tests.collector._spans import start_collector
from tests.collector._stores import rows
from tests.collector._traced_app import langchain_app, send, shuffled_parts, span_id
from tests.ragtrace.test_foreign_langchain import (
    ANSWER,
    DOCUMENTS,
    QUESTION,
    RANKED,
    KeywordRetriever,
    instrumented,
    lcel_chain,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated"),
    pytest.mark.usefixtures("offline_judge"),
]

SUITE = build_suite()


def test_a_chain_sent_in_shuffled_exports_is_joined_once_it_settles_and_scored_once(store_target: str) -> None:
    db = store_target
    with langchain_app() as app:
        assert lcel_chain().invoke(QUESTION) == ANSWER
        spans = app.spans()
    (root,) = [s for s in spans if s.parent is None]
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        parts = shuffled_parts([s for s in spans if s is not root], 3, seed=14)
        for part in parts:
            send(collector, part)
        start = time.time_ns()
        # The root has not arrived: however long it is quiet, the trace waits (and nothing is made up).
        assert settle(collector, start + 2 * HOUR - NS) == []
        send(collector, [root])
        # Within the window after the last span: still waiting.
        assert settle(collector, start + HOUR // 2) == []
        assert rows(db, "SELECT count(*) FROM rag_records") == [(0,)]
        assert settle(collector, start + 4 * HOUR) == [span_id(root)]
        # A retried export of the whole trace reopens it; its root is not written or scored again.
        send(collector, spans)
        assert settle(collector, start + 6 * HOUR) == []
        assert collector.settler is not None and collector.settler.waiting() == 0
    finally:
        collector.stop()
    ((query, answer, chunks, decision, judge, route, service),) = rows(
        db, "SELECT query, answer, chunks, decision, judge, route, service FROM rag_records"
    )
    assert (query, answer, decision, route, service) == (
        QUESTION,
        ANSWER,
        semconv.DECISION_EVALUATED,
        "RunnableSequence",
        "lc-app",
    )
    assert judge
    assert [c["content"] for c in _json(chunks)] == RANKED
    assert _json(chunks)[0]["metadata"] == {"source": "hb-12"}
    scores = rows(db, "SELECT span_id, metric, source FROM scores")
    assert sorted(m for _, m, _ in scores) == sorted(SUITE.names)
    assert {(s, src) for s, _, src in scores} == {(span_id(root), "collector")}


def test_hidden_inputs_are_stored_not_scored_with_no_content(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUTS", "true")
    db = store_target
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        for part in shuffled_parts(spans, 2, seed=3):
            send(collector, part)
        (root,) = settle(collector, time.time_ns() + 2 * HOUR)
    finally:
        collector.stop()
    assert rows(db, "SELECT span_id, query, answer, decision, reason FROM rag_records") == [
        (root, None, None, semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    ]
    assert rows(db, "SELECT count(*) FROM scores") == [(0,)]


def test_two_chains_under_one_request_span_are_each_scored(store_target: str) -> None:
    db = store_target
    chain = lcel_chain(["Refunds are paid within 14 days.", "It takes 3 days."])
    with langchain_app() as app:
        # A web framework's span above both chains, traced by the app's own tracer on the same provider.
        with app.provider.get_tracer("app").start_as_current_span("POST /ask"):
            chain.invoke(QUESTION)
            chain.invoke("How long does shipping take?")
        spans = app.spans()
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        (request,) = [s for s in spans if s.parent is None]
        assert request.name == "POST /ask"
        for part in shuffled_parts(spans, 4, seed=7):
            send(collector, part)
        assert len(settle(collector, time.time_ns() + 2 * HOUR)) == 2
    finally:
        collector.stop()
    records = rows(db, "SELECT query, answer, decision FROM rag_records ORDER BY time_ns")
    assert records == [
        (QUESTION, "Refunds are paid within 14 days.", semconv.DECISION_EVALUATED),
        ("How long does shipping take?", "It takes 3 days.", semconv.DECISION_EVALUATED),
    ]


def test_a_chain_that_raised_is_not_scored(store_target: str) -> None:
    def explode(_: object) -> str:
        raise RuntimeError("model down")

    retriever = KeywordRetriever(documents=DOCUMENTS)
    chain = {"context": retriever, "question": RunnablePassthrough()} | RunnableLambda(explode)
    db = store_target
    with langchain_app() as app:
        with pytest.raises(RuntimeError):
            chain.invoke(QUESTION)
        spans = app.spans()
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        send(collector, spans)
        assert len(settle(collector, time.time_ns() + 2 * HOUR)) == 1
    finally:
        collector.stop()
    assert rows(db, "SELECT decision, reason FROM rag_records") == [
        (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_APP_ERROR)
    ]
    assert rows(db, "SELECT count(*) FROM scores") == [(0,)]


def test_a_root_the_apps_processor_scored_keeps_the_apps_decision_and_is_not_scored_again(store_target: str) -> None:
    db = store_target
    with instrumented() as p:  # ragtrace's processor in the app, recognising the chain itself
        lcel_chain().invoke(QUESTION)
        spans = p.exported()
        (scored,) = p.roots()
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        for part in shuffled_parts(spans, 2, seed=11):
            send(collector, part)
        assert settle(collector, time.time_ns() + 2 * HOUR) == [span_id(scored)]
        assert collector.scorer is not None and collector.scorer.scored == 0
    finally:
        collector.stop()
    assert rows(db, "SELECT query, decision FROM rag_records") == [(QUESTION, semconv.DECISION_EVALUATED)]
    assert rows(db, "SELECT metric, value, source FROM scores") == [("seen", 1.0, "app")]


def _json(text: str) -> list[dict[str, Any]]:
    import json

    value = json.loads(text)
    assert isinstance(value, list)
    return value
