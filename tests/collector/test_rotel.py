"""Scale-out shape: a real OpenTelemetry collector (rotel, a Rust collector from PyPI) in front of
ragtrace-collector on loopback. Apps send to rotel; rotel batches and forwards over OTLP; every span arrives."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._server import Collector

from tests.collector._ports import free_port
from tests.collector._spans import SpanFactory, hex_span_id, start_collector
from tests.collector._stores import rows

rotel = pytest.importorskip("rotel", reason="rotel (the collector test extra) is not installed")
AGENT = Path(rotel.__file__).parent / "rotel-agent"


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"rotel-agent exited with {process.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"rotel-agent is not listening on {port}")


def _stored(db: Path | str) -> set[str]:
    return {span_id for (span_id,) in rows(db, "SELECT span_id FROM spans")}


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target)
    yield running
    running.stop()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_every_span_arrives_through_rotel(tmp_path: Path, collector: Collector, protocol: str) -> None:
    grpc_in, http_in = free_port(), free_port()
    target = collector.grpc_port if protocol == "grpc" else collector.http_port
    process = subprocess.Popen(
        [
            str(AGENT),
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc_in}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{http_in}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            f"http://127.0.0.1:{target}",
            "--otlp-exporter-protocol",
            protocol,
            "--traces-batch-timeout",
            "100ms",
            "--pid-file",
            str(tmp_path / "rotel.pid"),
            "--log-file",
            str(tmp_path / "rotel.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(grpc_in, process, 30)
        _wait_listening(http_in, process, 30)
        sent: set[str] = set()
        for app in range(3):  # three "apps", two protocols into rotel
            factory = SpanFactory(service=f"app{app}")
            for i in range(40):
                factory.rag(query=f"app{app} q{i}", scores={"faithfulness": 0.5}, decision="evaluated")
            spans = factory.all()
            sent.update(hex_span_id(s) for s in spans)
            exporter = (
                GrpcExporter(endpoint=f"127.0.0.1:{grpc_in}", insecure=True)
                if app % 2 == 0
                else HttpExporter(endpoint=f"http://127.0.0.1:{http_in}/v1/traces")
            )
            try:
                assert exporter.export(spans) is SpanExportResult.SUCCESS
            finally:
                exporter.shutdown()
        # rotel forwards asynchronously: wait (bounded) for the last batch to be flushed downstream.
        deadline = time.monotonic() + 30
        while not sent <= _stored(collector.config.target) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:  # a stuck agent must not outlive the test
            process.kill()
            process.wait()
    missing = sent - _stored(collector.config.target)
    assert not missing, f"{len(missing)} of {len(sent)} spans did not arrive"
    assert rows(collector, "SELECT count(DISTINCT service) FROM rag_records") == [(3,)]
    assert rows(collector, "SELECT count(*) FROM scores") == [(120,)]
