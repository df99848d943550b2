"""configure() with RAGTRACE_EVALUATION_LOGS=true sends the evaluation log records over OTLP, beside the spans.

OpenTelemetry takes a global LoggerProvider once per process, so the app runs in a child process, against a
real OTLP/HTTP receiver in this one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragtrace import semconv
from ragtrace.environment_variables import RAGTRACE_EVALUATION_LOGS

APP = """
import ragtrace
from ragtrace.testing import FakeJudge

judge = FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])
handle = ragtrace.configure(
    endpoint=ENDPOINT, judge=judge, metrics=["faithfulness"], sample_rate=1.0, export_metrics=False
)

@ragtrace.rag
def ask(question):
    ragtrace.record(chunks=["Paris is the capital of France."])
    return "Paris is the capital of France."

ask("What is the capital of France?")
handle.shutdown()
"""


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
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Receiver.bodies.clear()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


def _run(endpoint: str, logs: str) -> list[tuple[str, bytes]]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGTRACE_"))}
    environment[RAGTRACE_EVALUATION_LOGS] = logs
    code = f"ENDPOINT = {endpoint!r}\n{APP}"
    subprocess.run([sys.executable, "-c", code], env=environment, check=True, timeout=120)
    return list(_Receiver.bodies)


def test_configure_exports_the_evaluation_log_records_over_otlp(endpoint: str) -> None:
    bodies = _run(endpoint, "true")
    spans = [
        span
        for path, body in bodies
        if path == "/v1/traces"
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    records = [
        record
        for path, body in bodies
        if path == "/v1/logs"
        for rl in ExportLogsServiceRequest.FromString(body).resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
    ]
    [rag] = [s for s in spans if any(kv.key == semconv.RAGTRACE_ROLE for kv in s.attributes)]
    [record] = records
    assert record.event_name == semconv.GEN_AI_EVALUATION_RESULT
    assert (record.trace_id, record.span_id) == (rag.trace_id, rag.span_id)
    attributes = {kv.key: kv.value for kv in record.attributes}
    assert attributes[semconv.GEN_AI_EVALUATION_NAME].string_value == "faithfulness"


def test_without_the_switch_configure_sends_no_logs(endpoint: str) -> None:
    bodies = _run(endpoint, "false")
    assert {path for path, _ in bodies} == {"/v1/traces"}
