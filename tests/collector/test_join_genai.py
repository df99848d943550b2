"""The collector joins and scores a RAG call written with the OpenTelemetry GenAI conventions (``invoke_workflow``,
``retrieval``, ``chat``: the spans of ``tests/ragtrace/test_foreign_genai.py``), sent over OTLP/gRPC by the real
gRPC exporter, one span per export, the root first. Documents recorded without their text are stored
``not_scored``. The settler is driven with ``settle_once`` at a chosen time.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._join import JoinLimits

from ragtrace import semconv
from tests.collector._spans import SpanFactory, start_collector
from tests.ragtrace.test_foreign_genai import ANSWER, DOCUMENTS, QUESTION, rag_call

HOUR = 3600 * 1_000_000_000


@pytest.fixture(autouse=True)
def _offline_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    for name in ("OPENAI_API_KEY", "RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_METRICS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("documents", [DOCUMENTS, [{"id": d["id"], "score": d["score"]} for d in DOCUMENTS]])
def test_a_genai_workflow_sent_over_grpc_is_joined(tmp_path: Path, documents: object) -> None:
    factory = SpanFactory(service="genai-app")
    rag_call(factory.tracer, documents)
    spans = factory.all()
    db = tmp_path / "c.db"
    collector = start_collector(db, score=True, join_limits=JoinLimits(settle_seconds=3600, max_seconds=7200))
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
        try:
            for span in reversed(spans):  # the root first: the order of ending, turned round
                assert exporter.export([span]) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert collector.settler is not None and collector.scorer is not None
        assert len(collector.settler.settle_once(time.time_ns() + 2 * HOUR)) == 1
        assert collector.scorer.wait_idle(120)
    finally:
        collector.stop()
    with sqlite3.connect(db) as conn:
        ((decision, query, answer, chunks, reason),) = conn.execute(
            "SELECT decision, query, answer, chunks, reason FROM rag_records"
        )
        scores = int(conn.execute("SELECT count(*) FROM scores").fetchone()[0])
    if documents is DOCUMENTS:
        assert (decision, query, answer) == (semconv.DECISION_EVALUATED, QUESTION, ANSWER)
        assert [(c["id"], c["content"]) for c in json.loads(chunks)] == [(d["id"], d["content"]) for d in DOCUMENTS]
        assert scores > 0
    else:  # ids and scores only: the text was not captured
        assert (decision, reason, query, answer, scores) == (
            semconv.DECISION_NOT_SCORED,
            semconv.NOT_SCORED_NO_CONTENT,
            None,
            None,
            0,
        )
