"""The processor end to end: decorated app -> configure() -> real metrics and judges -> exported span.

FakeJudge drives the metrics deterministically; the real OpenAIJudge talks HTTP to the local stub
server, which also plays a judge that is down, too slow, or answers garbage. In every case each
started span is exported exactly once.
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.testing import FakeJudge
from ragtrace.testing._stub_openai import StubOpenAIServer

CHUNK = "Brasilia has been the capital of Brazil since 1960."


@ragtrace.retrieve
def search(query: str) -> list[str]:
    return [CHUNK, "Brazil is the largest country in South America."]


@ragtrace.rag
def answer(query: str) -> str:
    search(query)
    return "The capital of Brazil is Brasilia."


def fake_judge(**kwargs: Any) -> FakeJudge:
    kwargs.setdefault("name", "fake:scripted")
    return FakeJudge(
        extract_claims=lambda text, question=None: ["The capital of Brazil is Brasilia"],
        verify=lambda claims, chunks: [["supported" if "Brasilia" in c else "neither" for c in chunks] for _ in claims],
        rate_chunks=lambda query, chunks: [0.9 if "Brasilia" in c else 0.2 for c in chunks],
        **kwargs,
    )


def exported(exporter: InMemorySpanExporter) -> dict[int, ReadableSpan]:
    spans = [s for s in exporter.get_finished_spans() if s.name != semconv.CARRIER_SPAN_NAME]
    ids = Counter(s.context.span_id for s in spans)
    assert all(n == 1 for n in ids.values()), "a span was exported twice"
    return {s.context.span_id: s for s in spans}


def rag_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [
        s for s in exported(exporter).values() if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG
    ]


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as server:
        yield server


def test_configure_exports_scored_rag_spans_with_fake_judge() -> None:
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    handle = ragtrace.configure(
        service_name="support-bot",
        exporter=exporter,
        judge=fake_judge(),
        metrics=["faithfulness", "hallucination", "context_relevance"],
        sample_rate=1.0,
        metric_readers=[reader],
        set_global=False,
    )
    try:
        assert answer("What is the capital of Brazil?") == "The capital of Brazil is Brasilia."
        assert handle.force_flush(10_000)
        spans = exported(exporter)
        assert len(spans) == 2  # the RAG span and its retriever
        (rag,) = rag_spans(exporter)
        attrs = rag.attributes or {}
        assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
        assert attrs[semconv.eval_score("faithfulness")] == 1.0
        assert attrs[semconv.eval_score("hallucination")] == 0.0
        assert attrs[semconv.eval_score("context_relevance")] == pytest.approx(0.55)
        assert attrs[semconv.EVAL_JUDGE] == "fake:scripted"
        assert attrs[semconv.EVAL_JUDGE_CALLS] == 3  # claims once, verify once, rate once: shared
        assert attrs[semconv.EVAL_JUDGE_PROMPT_TOKENS] == 300
        assert attrs[semconv.EVAL_JUDGE_COMPLETION_TOKENS] == 60
        names = sorted(
            e.attributes[semconv.GEN_AI_EVALUATION_NAME]
            for e in rag.events
            if e.name == semconv.GEN_AI_EVALUATION_RESULT and e.attributes
        )
        assert names == ["context_relevance", "faithfulness", "hallucination"]
        retriever = next(s for s in spans.values() if s is not rag)
        assert not any(k.startswith(semconv.EVAL_PREFIX) for k in retriever.attributes or {})
        assert rag.resource.attributes[semconv.SERVICE_NAME] == "support-bot"
    finally:
        handle.shutdown()
    # Metrics: one histogram point per metric, decisions and tokens counted, with the service name.
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    score_names = {p.attributes[semconv.GEN_AI_EVALUATION_NAME] for p in points[semconv.METRIC_EVALUATION_SCORE]}
    assert score_names == {"faithfulness", "hallucination", "context_relevance"}
    assert all(p.attributes[semconv.SERVICE_NAME] == "support-bot" for p in points[semconv.METRIC_EVALUATION_SCORE])
    decisions = {p.attributes[semconv.EVAL_DECISION]: p.value for p in points[semconv.METRIC_EVAL_DECISIONS]}
    assert decisions == {semconv.DECISION_EVALUATED: 1}
    assert sum(p.value for p in points[semconv.METRIC_JUDGE_CALLS]) == 3
    tokens = {p.attributes[semconv.GEN_AI_TOKEN_TYPE]: p.value for p in points[semconv.METRIC_JUDGE_TOKENS]}
    assert tokens == {"input": 300, "output": 60}


def test_per_metric_rates_score_only_the_selected_metrics() -> None:
    exporter = InMemorySpanExporter()
    handle = ragtrace.configure(
        exporter=exporter,
        judge=fake_judge(),
        metrics=["faithfulness", "context_relevance"],
        sample_rate=1.0,
        metric_rates={"context_relevance": 0.0},
        export_metrics=False,
        set_global=False,
    )
    try:
        answer("What is the capital of Brazil?")
        handle.force_flush(10_000)
        (rag,) = rag_spans(exporter)
        attrs = rag.attributes or {}
        assert semconv.eval_score("faithfulness") in attrs
        assert semconv.eval_score("context_relevance") not in attrs
    finally:
        handle.shutdown()


def test_real_openai_judge_against_the_stub_server(stub: StubOpenAIServer) -> None:
    exporter = InMemorySpanExporter()
    # Retries as in production: the stub's listen backlog is small, so a burst can see a refused connect.
    judge = OpenAIJudge("gpt-4o-mini", base_url=stub.base_url, api_key="test-key", max_retries=3)
    handle = ragtrace.configure(exporter=exporter, judge=judge, sample_rate=1.0, export_metrics=False, set_global=False)
    try:
        for i in range(5):
            answer(f"What is the capital of Brazil? ({i})")
        assert handle.force_flush(20_000)
        rags = rag_spans(exporter)
        assert len(rags) == 5
        assert len(exported(exporter)) == 10
        for span in rags:
            attrs = span.attributes or {}
            assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
            for metric in ("faithfulness", "hallucination", "answer_relevancy_embedding", "context_relevance"):
                assert semconv.eval_score(metric) in attrs, metric
            assert attrs[semconv.EVAL_JUDGE] == judge.name
            assert attrs[semconv.EVAL_JUDGE_CALLS] >= 2
            assert attrs[semconv.EVAL_JUDGE_PROMPT_TOKENS] > 0
        assert len(stub.requests) >= 10
    finally:
        handle.shutdown()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("failure", ["down", "slow", "malformed"])
def test_judge_failures_are_recorded_and_nothing_is_lost(stub: StubOpenAIServer, failure: str) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/v1" if failure == "down" else stub.base_url
    if failure == "slow":
        stub.latency = 2.0
    if failure == "malformed":
        stub.reply_style = "malformed"
    judge = OpenAIJudge("gpt-4o-mini", base_url=base_url, api_key="k", max_retries=0, timeout=0.3)
    exporter = InMemorySpanExporter()
    handle = ragtrace.configure(
        exporter=exporter,
        judge=judge,
        metrics=["faithfulness", "context_relevance"],
        sample_rate=1.0,
        export_metrics=False,
        set_global=False,
    )
    try:
        for i in range(3):
            answer(f"q{i}")
        handle.force_flush(20_000)
        rags = rag_spans(exporter)
        assert len(rags) == 3
        assert len(exported(exporter)) == 6
        for span in rags:
            attrs = span.attributes or {}
            assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_ERROR, dict(attrs)
            assert attrs[semconv.EVAL_ERROR_TYPE]
            assert semconv.eval_score("faithfulness") not in attrs
            errors = [e.attributes.get(semconv.ERROR_TYPE) for e in span.events if e.attributes]
            assert errors and all(errors)
    finally:
        stub.latency = 0.0
        handle.shutdown(timeout_millis=5_000)


def test_capture_helper_for_users_tests() -> None:
    from ragtrace.testing import capture

    with capture(fake_judge(), metrics=["faithfulness"]) as cap:
        answer("What is the capital of Brazil?")
        assert cap.scores() == [{"faithfulness": 1.0}]
        assert len(cap.spans()) == 2


def test_an_app_error_is_not_scored_and_counted_apart_from_judge_errors() -> None:
    from ragtrace.testing import capture

    @ragtrace.rag
    def failing(query: str) -> str:
        search(query)
        raise RuntimeError("the vector store is down")

    with capture(fake_judge(), metrics=["faithfulness"]) as cap:
        answer("What is the capital of Brazil?")
        with pytest.raises(RuntimeError):
            failing("What is the capital of Brazil?")
        spans = cap.rag_spans()
        data = cap.metric_reader.get_metrics_data()
    by_decision = {(s.attributes or {})[semconv.EVAL_DECISION]: s for s in spans}
    assert set(by_decision) == {semconv.DECISION_EVALUATED, semconv.DECISION_NOT_SCORED}
    failed = by_decision[semconv.DECISION_NOT_SCORED].attributes or {}
    assert failed[semconv.EVAL_NOT_SCORED_REASON] == semconv.NOT_SCORED_APP_ERROR
    assert semconv.EVAL_ERROR_TYPE not in failed
    assert data is not None
    counted = {
        p.attributes[semconv.EVAL_DECISION]: p.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == semconv.METRIC_EVAL_DECISIONS
        for p in m.data.data_points
    }
    assert counted == {semconv.DECISION_EVALUATED: 1, semconv.DECISION_NOT_SCORED: 1}


def test_a_dead_judge_endpoint_is_logged_once_by_url_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    judge = OpenAIJudge("gpt-4o-mini", base_url=base_url, api_key="k", max_retries=0)
    reader = InMemoryMetricReader()
    handle = ragtrace.configure(
        exporter=InMemorySpanExporter(),
        judge=judge,
        metrics=["faithfulness", "context_relevance"],
        sample_rate=1.0,
        metric_readers=[reader],
        set_global=False,
    )
    try:
        with caplog.at_level("WARNING", logger="ragtrace"):
            for i in range(3):
                answer(f"q{i}")
            assert handle.force_flush(20_000)
        data = reader.get_metrics_data()
    finally:
        handle.shutdown(timeout_millis=5_000)
    lines = [r.getMessage() for r in caplog.records if "judge" in r.getMessage() and "failed" in r.getMessage()]
    # Three records, two metrics each: six failures, one line (the rest within the minute are counted).
    assert len(lines) == 1, lines
    assert "(connection)" in lines[0] and base_url in lines[0]
    assert data is not None
    errors = [
        p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == semconv.METRIC_JUDGE_ERRORS
        for p in m.data.data_points
    ]
    assert {p.attributes[semconv.ERROR_TYPE]: p.value for p in errors} == {"connection": 6}
