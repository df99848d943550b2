"""Evaluations as OpenTelemetry log records (and span events), each switched by its RAGTRACE_* variable."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, LogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan

import ragtrace
from ragtrace import semconv
from ragtrace.environment_variables import RAGTRACE_EVALUATION_LOGS, RAGTRACE_EVALUATION_SPAN_EVENTS
from ragtrace.scoring import evaluation_logs as _eval_logs
from ragtrace.scoring.evaluation_logs import EvaluationOutput
from ragtrace.testing import FakeJudge, capture

ANSWER = "Paris is the capital of France."


def _judge() -> FakeJudge:
    return FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])


def _scored_span(metrics: list[str]) -> ReadableSpan:
    with capture(_judge(), metrics=metrics) as captured:

        @ragtrace.rag
        def ask(question: str) -> str:
            ragtrace.record(chunks=[ANSWER])
            return ANSWER

        ask("What is the capital of France?")
        [span] = captured.rag_spans()
    return span


@pytest.fixture
def provider_to(request: pytest.FixtureRequest) -> Iterator[LoggerProvider]:
    exporter: LogRecordExporter = request.param
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    _eval_logs.set_logger_provider(provider)
    yield provider
    _eval_logs.set_logger_provider(None)
    provider.shutdown()


in_memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("provider_to", [in_memory], indirect=True)
def test_each_evaluation_is_a_log_record_in_the_scored_spans_context(
    provider_to: LoggerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RAGTRACE_EVALUATION_LOGS, "true")
    in_memory.clear()
    span = _scored_span(["faithfulness", "context_recall"])
    records = [r.log_record for r in in_memory.get_finished_logs()]
    assert [r.event_name for r in records] == [semconv.GEN_AI_EVALUATION_RESULT] * 2
    assert span.context is not None
    assert {(r.trace_id, r.span_id) for r in records} == {(span.context.trace_id, span.context.span_id)}
    by_name = {(r.attributes or {})[semconv.GEN_AI_EVALUATION_NAME]: r.attributes or {} for r in records}
    attributes = span.attributes or {}
    assert (
        by_name["faithfulness"][semconv.GEN_AI_EVALUATION_SCORE_VALUE] == attributes[semconv.eval_score("faithfulness")]
    )
    # An absent score is a record too, with no value and the reason as its explanation.
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in by_name["context_recall"]
    assert by_name["context_recall"][semconv.GEN_AI_EVALUATION_EXPLANATION]
    # The span events stay, unless switched off.
    assert [e.name for e in span.events] == [semconv.GEN_AI_EVALUATION_RESULT] * 2


@pytest.mark.parametrize("provider_to", [in_memory], indirect=True)
def test_log_records_are_off_by_default(provider_to: LoggerProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RAGTRACE_EVALUATION_LOGS, raising=False)
    in_memory.clear()
    _scored_span(["faithfulness"])
    assert in_memory.get_finished_logs() == ()


def test_span_events_switched_off_leave_the_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RAGTRACE_EVALUATION_SPAN_EVENTS, "false")
    span = _scored_span(["faithfulness"])
    attributes = span.attributes or {}
    assert [e for e in span.events if e.name == semconv.GEN_AI_EVALUATION_RESULT] == []
    assert attributes[semconv.eval_score("faithfulness")] == 1.0
    assert attributes[semconv.evaluation(0, semconv.EVALUATION_NAME)] == "faithfulness"
    assert attributes[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED


@pytest.mark.parametrize("variable", [RAGTRACE_EVALUATION_LOGS, RAGTRACE_EVALUATION_SPAN_EVENTS])
def test_a_bad_value_warns_and_keeps_the_default(
    variable: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(variable, f"perhaps-{variable}")
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        assert EvaluationOutput.from_env() == EvaluationOutput()
    assert variable in caplog.text and "is invalid" in caplog.text


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Receiver.bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def otlp_endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Receiver.bodies.clear()
    yield f"http://127.0.0.1:{server.server_port}/v1/logs"
    server.shutdown()
    server.server_close()
    thread.join()


def test_log_records_go_out_over_otlp_with_the_span_ids(otlp_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RAGTRACE_EVALUATION_LOGS, "true")
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=otlp_endpoint)))
    _eval_logs.set_logger_provider(provider)
    try:
        span = _scored_span(["faithfulness"])
    finally:
        _eval_logs.set_logger_provider(None)
        provider.shutdown()
    [(path, body)] = _Receiver.bodies
    assert path == "/v1/logs"
    request = ExportLogsServiceRequest.FromString(body)
    [record] = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    assert span.context is not None
    assert record.trace_id == span.context.trace_id.to_bytes(16, "big")
    assert record.span_id == span.context.span_id.to_bytes(8, "big")
    assert record.event_name == semconv.GEN_AI_EVALUATION_RESULT
    attributes = {kv.key: kv.value for kv in record.attributes}
    assert attributes[semconv.GEN_AI_EVALUATION_NAME].string_value == "faithfulness"
    assert attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE].double_value == 1.0
