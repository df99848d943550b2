"""Server-side scoring: unscored RAG spans are sampled and scored by the collector with ragtrace's suite and
the offline judge; the scores land in the store and, with forwarding on, reach a downstream collector."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._otlp import decode_protobuf
from ragtrace_collector._scoring import ServerScorer, record_of
from ragtrace_collector._server import Collector
from ragtrace_collector._store import open_store

from ragtrace import RagRecord, Sampler, semconv
from ragtrace.judges.offline import OfflineJudge
from ragtrace.metrics import build_suite
from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes, start_collector
from tests.collector._stores import rows

SUITE = build_suite()


@pytest.fixture(autouse=True)
def _offline_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("RAGTRACE_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("RAGTRACE_METRICS", raising=False)


def _export(collector: Collector, factory: SpanFactory) -> None:
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
    try:
        assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _rows(db: Path | str, sql: str) -> list[tuple[object, ...]]:
    return rows(db, sql)


@pytest.mark.parametrize("decode_processes", [0, 1])
def test_unscored_spans_are_scored_by_the_collector(
    store_target: str, monkeypatch: pytest.MonkeyPatch, decode_processes: int
) -> None:
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    factory = SpanFactory(service="shop")
    unscored = [
        factory.rag(
            query="What is the capital of Brazil?",
            answer="The capital of Brazil is Brasilia." if i % 2 == 0 else "The capital of Brazil is Florida.",
            route="/ask",
        )
        for i in range(4)
    ]
    app_scored = factory.rag(scores={"faithfulness": 0.3}, decision=semconv.DECISION_EVALUATED)
    running = start_collector(store_target, score=True, decode_processes=decode_processes)
    try:
        _export(running, factory)
        assert running.scorer is not None and running.scorer.wait_idle(120)
    finally:
        running.stop()
    db = store_target
    decisions = dict(_rows(db, "SELECT span_id, decision FROM rag_records"))
    assert {decisions[hex_span_id(s)] for s in unscored} == {semconv.DECISION_EVALUATED}
    by_source = _rows(db, "SELECT source, count(*) FROM scores GROUP BY source ORDER BY source")
    assert by_source == [("app", 1), ("collector", 4 * len(SUITE.names))]
    # The app's own score was not touched.
    assert _rows(db, f"SELECT value, source FROM scores WHERE span_id = '{hex_span_id(app_scored)}'") == [(0.3, "app")]
    # The collector's scores are exactly what ragtrace's suite and judge give for the same record.
    stored = {
        (span_id, metric): value
        for span_id, metric, value in _rows(db, "SELECT span_id, metric, value FROM scores WHERE source = 'collector'")
    }
    judge_ = OfflineJudge()
    for span in unscored:
        attrs = span.attributes or {}
        record = RagRecord.of(
            str(attrs[semconv.INPUT_VALUE]),
            ["Brazil is a country in South America.", "Its capital is Brasilia."],
            str(attrs[semconv.OUTPUT_VALUE]),
        )
        expected = asyncio.run(SUITE.score(record, judge_))
        for metric in SUITE.names:
            value = stored[(hex_span_id(span), metric)]
            assert value == pytest.approx(expected.value(metric)), metric
    judge, calls, route = _rows(
        db, f"SELECT judge, calls, route FROM rag_records WHERE span_id = '{hex_span_id(unscored[0])}'"
    )[0]
    assert judge and isinstance(calls, int) and calls > 0 and route == "/ask"


def test_sampling_is_the_apps_deterministic_draw(store_target: str) -> None:
    factory = SpanFactory()
    for _ in range(40):
        factory.rag()
    store = open_store(store_target)
    scorer = ServerScorer(store, suite=SUITE, sample_rate=0.5)
    try:
        batch = decode_protobuf(otlp_bytes(factory.all()), 0)
        store.write(batch)
        scorer.start()
        scorer.submit(batch)
        assert scorer.wait_idle(120)
    finally:
        scorer.stop()
        store.close()
    decisions = dict(_rows(store_target, "SELECT trace_id, decision FROM rag_records"))
    expected = {
        trace: semconv.DECISION_EVALUATED if Sampler.draw(int(trace, 16)) < 0.5 else semconv.DECISION_NOT_SAMPLED
        for trace in decisions
    }
    assert decisions == expected
    assert 0 < sum(d == semconv.DECISION_EVALUATED for d in decisions.values()) < 40


def test_scores_are_forwarded_downstream_on_a_carrier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    downstream = start_collector(tmp_path / "down.db")
    try:
        upstream = start_collector(
            tmp_path / "up.db", score=True, forward=f"http://127.0.0.1:{downstream.http_port}", decode_processes=1
        )
        factory = SpanFactory()
        rag = factory.rag(route="/ask")
        try:
            _export(upstream, factory)
            assert upstream.scorer is not None and upstream.scorer.wait_idle(120)
        finally:
            upstream.stop()  # drains the forward queue
        assert upstream.forwarder is not None and upstream.forwarder.dropped == 0
    finally:
        downstream.stop()
    rows = _rows(tmp_path / "down.db", "SELECT span_id, metric, source, route FROM scores ORDER BY metric")
    assert {r[1] for r in rows} == set(SUITE.names)
    assert {(r[0], r[2], r[3]) for r in rows} == {(hex_span_id(rag), "carrier", "/ask")}
    assert len(_rows(tmp_path / "down.db", "SELECT span_id FROM spans")) == 3  # rag, retriever, carrier


def test_record_of_a_row_without_content_is_none() -> None:
    assert record_of({"query": None, "chunks": "[]", "answer": None}) is None
    record = record_of({"query": "q", "chunks": '[{"id": "a", "content": "c", "score": 0.5}]', "answer": "a"})
    assert record is not None and record.texts == ["c"] and record.chunks[0].id == "a"


def test_a_full_scoring_queue_records_overflow(store_target: str) -> None:
    import threading

    from ragtrace.testing import FakeJudge

    gate = threading.Event()

    async def slow_rating(query: str, chunks: list[str]) -> list[float]:
        await asyncio.to_thread(gate.wait, 30)
        return [0.5 for _ in chunks]

    factory = SpanFactory()
    for _ in range(5):
        factory.rag()
    store = open_store(store_target)
    suite = build_suite(["context_relevance"])
    scorer = ServerScorer(
        store, suite=suite, judge=FakeJudge(rate_chunks=slow_rating), sample_rate=1.0, queue_size=2, max_concurrency=1
    )
    try:
        batch = decode_protobuf(otlp_bytes(factory.all()), 0)
        store.write(batch)
        scorer.start()
        scorer.submit(batch)
        gate.set()
        assert scorer.wait_idle(60)
    finally:
        scorer.stop()
        store.close()
    decisions = sorted(d for (d,) in _rows(store_target, "SELECT decision FROM rag_records"))
    assert decisions == ["evaluated"] * 2 + ["overflow"] * 3
    assert _rows(store_target, "SELECT DISTINCT value FROM scores") == [(0.5,)]


def test_a_wrong_judge_setting_stops_serve(store_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace.environment_variables import ConfigurationError

    for variable in ("RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE", "openai")  # asked for, with no key to use
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        start_collector(store_target, score=True)


def test_a_retried_unscored_span_is_scored_once(store_target: str) -> None:
    """An exporter retry sends the same unscored span again: after its scoring, during it, or twice in a batch."""
    import threading

    from ragtrace_collector._otlp import Batch

    from ragtrace.testing import FakeJudge

    gate = threading.Event()

    async def rating(query: str, chunks: list[str]) -> list[float]:
        await asyncio.to_thread(gate.wait, 30)
        return [0.5 for _ in chunks]

    judge = FakeJudge(rate_chunks=rating)
    factory = SpanFactory()
    factory.rag(query="first")
    factory.rag(query="second")
    store = open_store(store_target)
    scorer = ServerScorer(store, suite=build_suite(["context_relevance"]), judge=judge, sample_rate=1.0)
    try:
        batch = decode_protobuf(otlp_bytes(factory.all()), 0)
        first, second = batch.rag_records
        store.write(batch)
        scorer.start()
        scorer.submit(Batch(rag_records=[first]))
        scorer.submit(Batch(rag_records=[first, second, second]))  # retried while the first is being scored
        gate.set()
        assert scorer.wait_idle(60)
        scorer.submit(batch)  # retried after both were scored and their decisions stored
        assert scorer.wait_idle(60)
    finally:
        scorer.stop()
        store.close()
    assert scorer.scored == 2
    assert judge.count("rate_chunks") == 2
