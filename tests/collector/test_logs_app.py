"""End to end: a ragtrace app with ``RAGTRACE_EVALUATION_LOGS=true`` and ``RAGTRACE_EVALUATION_SPAN_EVENTS=false``
exports to a real collector (OTLP/HTTP and OTLP/gRPC); its evaluations are in the store, the explanation that only
the log records carried included.

OpenTelemetry takes a global LoggerProvider once per process, and ``configure()`` builds the OTLP one only as the
global, so the app runs in a child process; the collector runs in this one on 127.0.0.1 with a real SQLite file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragtrace import semconv
from ragtrace.environment_variables import RAGTRACE_EVALUATION_LOGS, RAGTRACE_EVALUATION_SPAN_EVENTS
from tests.collector._spans import start_collector
from tests.collector._stores import rows
from tests.collector.test_logs_receiver import stored_scores

APP = """
import ragtrace
from ragtrace.testing import FakeJudge

judge = FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])
handle = ragtrace.configure(
    service_name="shop", endpoint=ENDPOINT, protocol=PROTOCOL, judge=judge,
    metrics=["faithfulness", "hallucination"], sample_rate=1.0, export_metrics=False,
)

@ragtrace.rag
def ask(question):
    ragtrace.record(chunks=["Paris is the capital of France."])
    return "Paris is the capital of France."

ask("What is the capital of France?")
handle.shutdown()  # flushes the spans and the log records: each export is acknowledged once stored
"""


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_an_app_sending_evaluations_as_log_records_only_lands_them_in_the_store(
    store_target: str, protocol: str
) -> None:
    running = start_collector(store_target)
    try:
        port = running.http_port if protocol == "http/protobuf" else running.grpc_port
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGTRACE_"))}
        environment[RAGTRACE_EVALUATION_LOGS] = "true"
        environment[RAGTRACE_EVALUATION_SPAN_EVENTS] = "false"
        code = f"ENDPOINT = 'http://127.0.0.1:{port}'\nPROTOCOL = {protocol!r}\n{APP}"
        subprocess.run([sys.executable, "-c", code], env=environment, check=True, timeout=120)
        logs_stored = running.stats.snapshot().logs_stored
    finally:
        running.stop()
    db = store_target
    [(span_id, decision, route)] = rows(db, "SELECT span_id, decision, route FROM rag_records")
    [(events,)] = rows(db, "SELECT events FROM spans WHERE span_id = ?", (span_id,))
    assert decision == semconv.DECISION_EVALUATED
    # The span carried no evaluation event: what the store holds beyond the flat attributes came as log records.
    assert all(event["name"] != semconv.GEN_AI_EVALUATION_RESULT for event in json.loads(events))
    assert logs_stored == 2
    scores = stored_scores(db)
    assert set(scores) == {(span_id, "faithfulness"), (span_id, "hallucination")}
    faithfulness = scores[(span_id, "faithfulness")]
    assert (faithfulness["value"], faithfulness["label"]) == (1.0, "faithful")
    assert faithfulness["explanation"] == "1 of 1 claims supported by the chunks"  # from the log record only
    for row in scores.values():
        assert (row["service"], row["route"], row["source"]) == ("shop", route, "app")
        assert row["explanation"]
