"""Senders choose the trace ids, and so the draw: the collector's judge spend is capped by the SDK's throttle and
budget all the same, and the judge sees a record's texts cut as the app cuts them. Real OTLP into a real store
(and a real collector for the throttle read from the environment)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx
import pytest
from ragtrace_collector._otlp import decode_protobuf
from ragtrace_collector._scoring import ServerScorer
from ragtrace_collector._store import open_store

from ragtrace import semconv
from ragtrace.judges import JudgeError
from ragtrace.metrics import build_suite
from ragtrace.testing import FakeJudge
from tests.collector._spans import SpanFactory, otlp_bytes, start_collector
from tests.collector._stores import rows


def _decisions(db: Path | str) -> Counter[str]:
    return Counter(str(decision) for (decision,) in rows(db, "SELECT decision FROM rag_records"))


def _records(number: int, **text: object) -> bytes:
    factory = SpanFactory()
    for _ in range(number):
        factory.rag(**text)
    return otlp_bytes(factory.all())


def test_the_collectors_scoring_keeps_to_the_throttle_it_is_given(
    store_target: str, monkeypatch: pytest.MonkeyPatch, offline_judge: None
) -> None:
    monkeypatch.setenv("RAGTRACE_THROTTLE_PER_MINUTE", "5")
    collector = start_collector(store_target, score=True)
    try:
        reply = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces",
            content=_records(12),
            headers={"content-type": "application/x-protobuf"},
            timeout=30,
        )
        assert reply.status_code == 200
        assert collector.scorer.wait_idle(120)
    finally:
        collector.stop()
    decisions = _decisions(store_target)
    assert sum(decisions.values()) == 12
    # Five a minute: ten at most should the scoring straddle a minute's turn.
    assert 5 <= decisions[semconv.DECISION_EVALUATED] <= 10
    assert decisions[semconv.DECISION_THROTTLED] == 12 - decisions[semconv.DECISION_EVALUATED]


def _judge() -> FakeJudge:
    """A judge that rates every chunk 0.5, at FakeJudge's cost: one chat call of 120 tokens."""
    return FakeJudge(rate_chunks=lambda query, chunks: [0.5 for _ in chunks])


def _score(store_target: str, body: bytes, judge: FakeJudge) -> Counter[str]:
    store = open_store(store_target)
    scorer = ServerScorer(store, suite=build_suite(["context_relevance"]), judge=judge, sample_rate=1.0)
    try:
        batch = decode_protobuf(body, 0)
        store.write(batch)
        scorer.start()
        scorer.submit(batch)
        assert scorer.wait_idle(120)
    finally:
        scorer.stop()
        store.close()
    return _decisions(store_target)


def test_the_collectors_scoring_stops_at_the_daily_budget(store_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_BUDGET_TOKENS_PER_DAY", "200")  # FakeJudge: 120 tokens a chat call
    decisions = _score(store_target, _records(12), _judge())
    assert sum(decisions.values()) == 12
    assert 1 <= decisions[semconv.DECISION_EVALUATED] <= 2
    assert decisions[semconv.DECISION_OVER_BUDGET] == 12 - decisions[semconv.DECISION_EVALUATED]


def test_the_judge_sees_a_records_texts_cut_as_the_app_cuts_them(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRACE_MAX_RECORD_CHUNK_LENGTH", "100")
    monkeypatch.setenv("RAGTRACE_MAX_RECORD_CHUNKS", "3")
    judge = _judge()
    body = _records(1, query="q" * 50_000, chunks=[f"{n}" * 50_000 for n in range(10)], answer="a" * 50_000)
    assert _score(store_target, body, judge)[semconv.DECISION_EVALUATED] == 1
    (call,) = judge.calls
    query, chunks = call.args
    assert query == "q" * 100
    assert chunks == ("0" * 100, "1" * 100, "2" * 100)


def test_a_judge_that_refuses_record_after_record_rests_and_every_record_is_still_decided(
    store_target: str,
) -> None:
    asked: list[int] = []

    def refuse(query: str, chunks: object) -> list[float]:
        asked.append(1)
        raise JudgeError("HTTP 401 (AuthenticationError)", error_type="authentication")

    decisions = _score(store_target, _records(40), FakeJudge(rate_chunks=refuse))
    assert decisions == {semconv.DECISION_ERROR: 40}
    # Five records in a row failed, then the judge rested: without the rest it would be asked for all 40.
    assert len(asked) < 20
    assert Counter(t for (t,) in rows(store_target, "SELECT error_type FROM scores")) == {"authentication": 40}
