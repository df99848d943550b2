"""The collector joins and scores a RAG call written with the OpenTelemetry GenAI conventions (``invoke_workflow``,
``retrieval``, ``chat``: the spans of ``tests/ragtrace/test_foreign_genai.py``), sent over OTLP/gRPC by the real
gRPC exporter, one span per export, the root first. Documents recorded without their text are stored
``not_scored``. The settler is driven with ``settle_once`` at a chosen time.
"""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from ragtrace import semconv
from tests.collector._join import HOUR, LIMITS, settle
from tests.collector._spans import SpanFactory, start_collector
from tests.collector._stores import rows
from tests.ragtrace.test_foreign_genai import ANSWER, DOCUMENTS, QUESTION, rag_call

pytestmark = pytest.mark.usefixtures("offline_judge")


@pytest.mark.parametrize("documents", [DOCUMENTS, [{"id": d["id"], "score": d["score"]} for d in DOCUMENTS]])
def test_a_genai_workflow_sent_over_grpc_is_joined(store_target: str, documents: object) -> None:
    factory = SpanFactory(service="genai-app")
    rag_call(factory.tracer, documents)
    spans = factory.all()
    db = store_target
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
        try:
            for span in reversed(spans):  # the root first: the order of ending, turned round
                assert exporter.export([span]) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert len(settle(collector, time.time_ns() + 2 * HOUR)) == 1
    finally:
        collector.stop()
    ((decision, query, answer, chunks, reason),) = rows(
        db, "SELECT decision, query, answer, chunks, reason FROM rag_records"
    )
    ((scores,),) = rows(db, "SELECT count(*) FROM scores")
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
