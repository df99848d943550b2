"""OTLP logs receive (``POST /v1/logs``, gRPC ``LogsService/Export``): the real log exporters against a real
collector on 127.0.0.1, the evaluations their records carry stored as scores in a real SQLite file, other
records counted and ignored.

The evaluation records are emitted by ragtrace's own ``EvaluationLogs`` (what an app with
``RAGTRACE_EVALUATION_LOGS`` runs) from the events of real SDK spans. The helpers here are shared by the other
``test_logs_*`` modules.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, LogRecordExportResult, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from prometheus_client.parser import text_string_to_metric_families
from ragtrace_collector._server import Collector
from ragtrace_collector._store.schema import SCORE_COLUMNS

from ragtrace import semconv
from ragtrace.scoring.evaluation_logs import EvaluationLogs
from tests.collector._spans import SpanFactory, hex_span_id, start_collector
from tests.collector._stores import count, dict_rows

PB = {"content-type": "application/x-protobuf"}
SCORES = {"faithfulness": 0.75, "hallucination": 0.25}


class Evaluations:
    """A LoggerProvider whose records are kept in memory: a span's evaluations as the app emits them, and other
    records as any app logs them."""

    def __init__(self, service: str = "shop") -> None:
        self.memory = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
        self.provider = LoggerProvider(resource=Resource.create({semconv.SERVICE_NAME: service}))
        self.provider.add_log_record_processor(SimpleLogRecordProcessor(self.memory))

    def of(self, span: ReadableSpan) -> int:
        """One record per ``gen_ai.evaluation.result`` event of ``span``, in its context; how many."""
        return EvaluationLogs(self.provider).emit(span, span.events)

    def of_events(self, span: ReadableSpan, events: Sequence[Event]) -> int:
        """One record per evaluation event of ``events`` (another span's), in ``span``'s context."""
        return EvaluationLogs(self.provider).emit(span, events)

    def other(self, body: str) -> None:
        """An ordinary log record (no event name)."""
        self.provider.get_logger("app").emit(body=body, severity_number=SeverityNumber.WARN)

    def records(self) -> list[ReadableLogRecord]:
        """Every record emitted so far."""
        return list(self.memory.get_finished_logs())


def logs_bytes(records: Sequence[ReadableLogRecord]) -> bytes:
    """The records as the OTLP/HTTP protobuf log exporter sends them."""
    return bytes(encode_logs(records).SerializeToString())


def logs_json(records: Sequence[ReadableLogRecord]) -> dict[str, Any]:
    """The records as OTLP/JSON: proto3 JSON of the real encoder's message, with hex ids as the spec writes them."""
    document = json_format.MessageToDict(encode_logs(records))
    for resource_logs in document["resourceLogs"]:
        for scope_logs in resource_logs["scopeLogs"]:
            for record in scope_logs["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64decode(record[key]).hex()
    return document


def post_logs(collector: Collector, body: bytes | str, headers: dict[str, str] | None = None) -> httpx.Response:
    """One raw ``POST /v1/logs``."""
    url = f"http://127.0.0.1:{collector.http_port}/v1/logs"
    return httpx.post(url, content=body, headers=headers or PB, timeout=30)


def stored_scores(db: Path | str) -> dict[tuple[str, str], dict[str, Any]]:
    """The ``scores`` rows by ``(span_id, metric)``, every column of the table but the key (PostgreSQL's
    ``rowid``, the order of arrival SQLite keeps hidden, is not one of them)."""
    columns = ", ".join(SCORE_COLUMNS)
    return {(row.pop("span_id"), row.pop("metric")): row for row in dict_rows(db, f"SELECT {columns} FROM scores")}


def expected_row(span: ReadableSpan, metric: str, *, source: str, route: str | None = None) -> dict[str, Any]:
    """The row a ``SpanFactory`` RAG span's evaluation of ``metric`` is stored as, at its event's time."""
    [event] = [e for e in span.events if e.attributes and e.attributes[semconv.GEN_AI_EVALUATION_NAME] == metric]
    assert event.attributes is not None and span.context is not None
    return {
        "value": event.attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE],
        "label": f"{metric}-label",
        "explanation": f"why {metric}",
        "reason": None,
        "error_type": None,
        "trace_id": format(span.context.trace_id, "032x"),
        "service": "shop",
        "route": route,
        "time_ns": event.timestamp,
        "source": source,
        "claims": None,  # the factory's evaluations carry no claims
    }


def log_rows(rags: Sequence[ReadableSpan]) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows every evaluation of ``rags`` is stored as when it came as a log record, by ``(span_id, metric)``."""
    return {(hex_span_id(rag), m): expected_row(rag, m, source="log") for rag in rags for m in SCORES}


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, max_body_bytes=1024 * 1024)
    yield running
    running.stop()


def _evaluated(count_: int) -> tuple[list[ReadableSpan], Evaluations]:
    spans = SpanFactory()
    logs = Evaluations()
    rags = [spans.rag(query=f"q{i}", scores={m: v + i / 100 for m, v in SCORES.items()}) for i in range(count_)]
    for rag in rags:
        assert logs.of(rag) == len(SCORES)
    return rags, logs


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_http_log_exporter_lands_each_evaluation_as_a_score(collector: Collector, compression: Compression) -> None:
    rags, logs = _evaluated(5)
    logs.other("an ordinary log line, ignored")
    exporter = OTLPLogExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/logs", compression=compression)
    try:
        assert exporter.export(logs.records()) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert stored_scores(collector.config.target) == log_rows(rags)
    # The evaluated spans were never sent: the scores wait for them, nothing else is stored.
    assert count(collector.config.target, "spans") == 0
    snapshot = collector.stats.snapshot()
    assert (snapshot.logs_stored, snapshot.logs_ignored, snapshot.logs_rejected) == (10, 1, 0)


@pytest.mark.parametrize("compression", [grpc.Compression.NoCompression, grpc.Compression.Gzip])
def test_the_grpc_log_exporter_lands_each_evaluation_as_a_score(
    collector: Collector, compression: grpc.Compression
) -> None:
    rags, logs = _evaluated(4)
    exporter = GrpcLogExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, compression=compression)
    try:
        assert exporter.export(logs.records()) is LogRecordExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert stored_scores(collector.config.target) == log_rows(rags)


def test_an_otlp_json_body_is_stored_and_answered_in_json(collector: Collector) -> None:
    rags, logs = _evaluated(2)
    reply = post_logs(collector, json.dumps(logs_json(logs.records())), {"content-type": "application/json"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json() == {}  # full success: no partial_success
    assert stored_scores(collector.config.target) == log_rows(rags)


def test_records_that_are_not_evaluations_are_ignored_not_rejected(collector: Collector) -> None:
    rags, logs = _evaluated(1)
    for line in ("started", "GET /health 200", "cache miss"):
        logs.other(line)
    reply = post_logs(collector, logs_bytes(logs.records()))
    assert reply.status_code == 200
    assert not ExportLogsServiceResponse.FromString(reply.content).HasField("partial_success")
    assert set(stored_scores(collector.config.target)) == {(hex_span_id(rags[0]), m) for m in SCORES}
    # An export of nothing but ordinary records is a full success that stores nothing.
    only_others = Evaluations()
    only_others.other("nothing to see")
    reply = post_logs(collector, logs_bytes(only_others.records()))
    assert reply.status_code == 200 and reply.content == b""
    assert collector.stats.snapshot().logs_ignored == 4


def test_the_metrics_endpoint_counts_log_records_like_spans(store_target: str) -> None:
    running = start_collector(store_target)
    try:
        _, logs = _evaluated(2)
        logs.other("ignored")
        body = logs_bytes(logs.records())
        assert post_logs(running, body).status_code == 200
        request = encode_logs(logs.records())
        request.resource_logs[0].scope_logs[0].log_records[0].span_id = b""  # an evaluation of no span: rejected
        assert post_logs(running, request.SerializeToString()).status_code == 200
        assert post_logs(running, b"\x0a\xff\xff\xff\xff\x0f").status_code == 400
        text = httpx.get(f"http://127.0.0.1:{running.http_port}/metrics", timeout=30).text
    finally:
        running.stop()
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert samples[("ragtrace_collector_log_records_received_total", ())] == 10
    assert samples[("ragtrace_collector_log_records_stored_total", ())] == 4 + 3
    assert samples[("ragtrace_collector_log_records_ignored_total", ())] == 2
    assert samples[("ragtrace_collector_log_records_rejected_total", ())] == 1
    assert samples[("ragtrace_collector_spans_received_total", ())] == 0
    malformed = (("reason", "malformed"), ("receiver", "http"))
    assert samples[("ragtrace_collector_requests_refused_total", malformed)] == 1


def test_an_event_name_written_as_an_attribute_is_read_too(collector: Collector) -> None:
    # SDKs and bridges older than the LogRecord.event_name field put the name in an ``event.name`` attribute.
    rags, logs = _evaluated(1)
    document = logs_json(logs.records())
    for resource_logs in document["resourceLogs"]:
        for scope_logs in resource_logs["scopeLogs"]:
            for record in scope_logs["logRecords"]:
                name = record.pop("eventName")
                record.setdefault("attributes", []).append({"key": "event.name", "value": {"stringValue": name}})
    reply = post_logs(collector, json.dumps(document), {"content-type": "application/json"})
    assert reply.status_code == 200 and reply.json() == {}
    assert stored_scores(collector.config.target) == log_rows(rags)
