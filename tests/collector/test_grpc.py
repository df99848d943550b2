"""OTLP/gRPC receive: the real gRPC exporter against a real server on 127.0.0.1, and raw calls."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult, MetricsData
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._grpc import METRICS_SERVICE_NAME, SERVICE_NAME
from ragtrace_collector._http import METRICS_NOT_STORED
from ragtrace_collector._server import Collector

from ragtrace import semconv
from tests.collector._spans import SpanFactory, grpc_export, otlp_bytes, start_collector
from tests.collector._stores import count


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target)
    yield running
    running.stop()


def _raw_export(port: int, body: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> ExportTraceServiceResponse:
    reply: ExportTraceServiceResponse = grpc_export(
        port, SERVICE_NAME, body, ExportTraceServiceResponse.FromString, metadata
    )
    return reply


@pytest.mark.parametrize("compression", [grpc.Compression.NoCompression, grpc.Compression.Gzip])
def test_real_grpc_exporter_lands_every_span(collector: Collector, compression: grpc.Compression) -> None:
    factory = SpanFactory()
    for i in range(30):
        factory.rag(query=f"q{i}", scores={"hallucination": 0.0}, decision="evaluated")
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True, compression=compression)
    try:
        assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    db = collector.config.target
    assert (count(db, "spans"), count(db, "rag_records"), count(db, "scores")) == (60, 30, 30)


def test_invalid_utf8_is_a_partial_success(collector: Collector) -> None:
    assert collector.grpc_port is not None
    factory = SpanFactory()
    factory.rag(query="ZZZZ")
    factory.rag(query="good")
    body = otlp_bytes(factory.all()).replace(b"ZZZZ", b"Z\xffZZ")
    reply = _raw_export(collector.grpc_port, body)
    assert reply.partial_success.rejected_spans == 1
    assert count(collector.config.target, "rag_records") == 1


def test_malformed_body_is_invalid_argument(collector: Collector) -> None:
    assert collector.grpc_port is not None
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(collector.grpc_port, b"\x0a\xff\xff\xff\xff\x0f")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    # Still serving.
    factory = SpanFactory()
    factory.rag()
    assert not _raw_export(collector.grpc_port, otlp_bytes(factory.all())).HasField("partial_success")


def test_token_is_checked(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret")
    try:
        assert running.grpc_port is not None
        factory = SpanFactory()
        factory.rag()
        body = otlp_bytes(factory.all())
        with pytest.raises(grpc.RpcError) as caught:
            _raw_export(running.grpc_port, body)
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        exporter = OTLPSpanExporter(
            endpoint=f"127.0.0.1:{running.grpc_port}", insecure=True, headers={"authorization": "Bearer s3cret"}
        )
        try:
            assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert count(running.config.target, "rag_records") == 1
    finally:
        running.stop()


def test_a_span_the_decoder_cannot_convert_is_a_partial_success(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrace_collector import _otlp
    from ragtrace_collector._otlp import _rows

    assert collector.grpc_port is not None
    real = _rows._rag_and_scores

    def failing(batch: _otlp.Batch, attrs: dict, *args: object) -> None:  # type: ignore[type-arg]
        real(batch, attrs, *args)  # type: ignore[arg-type]
        if attrs.get(semconv.INPUT_VALUE) == "doomed":
            raise RuntimeError("unforeseen")

    monkeypatch.setattr(_rows, "_rag_and_scores", failing)
    factory = SpanFactory()
    factory.rag(query="doomed")
    factory.rag(query="good")
    reply = _raw_export(collector.grpc_port, otlp_bytes(factory.all()))
    assert reply.partial_success.rejected_spans == 1
    assert "RuntimeError: unforeseen" in reply.partial_success.error_message
    assert count(collector.config.target, "spans") == 3
    assert count(collector.config.target, "rag_records") == 1


def test_a_non_ascii_digit_in_a_document_key_is_not_an_error(collector: Collector) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    assert collector.grpc_port is not None
    factory = SpanFactory()
    factory.rag()
    request = encode_spans(factory.all())
    odd = request.resource_spans[0].scope_spans[0].spans[1]
    odd.attributes.add(key="retrieval.documents.\u00b9.document.id").value.string_value = "x"
    reply = _raw_export(collector.grpc_port, request.SerializeToString())
    assert not reply.HasField("partial_success")
    assert count(collector.config.target, "spans") == 2


def test_the_bearer_scheme_is_matched_in_any_case(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret")
    try:
        assert running.grpc_port is not None
        factory = SpanFactory()
        factory.rag()
        body = otlp_bytes(factory.all())
        for scheme in ("bearer", "BEARER"):
            assert not _raw_export(running.grpc_port, body, (("authorization", f"{scheme} s3cret"),)).HasField(
                "partial_success"
            )
        with pytest.raises(grpc.RpcError) as caught:
            _raw_export(running.grpc_port, body, (("authorization", "Basic s3cret"),))
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    finally:
        running.stop()


def _score_metrics() -> MetricsData:
    """Two histogram data points of the score metric, as ragtrace.configure() records them."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    try:
        histogram = provider.get_meter("t").create_histogram("gen_ai.evaluation.score")
        for value in (0.2, 0.9):
            histogram.record(value, {"gen_ai.evaluation.name": "faithfulness"})
            histogram.record(value, {"gen_ai.evaluation.name": "hallucination"})
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    assert data is not None
    return data


def _raw_metrics_export(
    port: int, body: bytes, metadata: tuple[tuple[str, str], ...] = ()
) -> ExportMetricsServiceResponse:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(
            f"/{METRICS_SERVICE_NAME}/Export",
            request_serializer=lambda b: b,
            response_deserializer=ExportMetricsServiceResponse.FromString,
        )
        reply: ExportMetricsServiceResponse = export(body, timeout=10, metadata=metadata)
        return reply


def test_metrics_exports_are_answered_as_not_stored(collector: Collector, caplog: pytest.LogCaptureFixture) -> None:
    # configure(protocol="grpc") sends the score histogram to the span endpoint by default: the real exporter
    # must succeed (no "UNIMPLEMENTED" error every minute), and the reply says nothing was stored, as over HTTP.
    assert collector.grpc_port is not None
    data = _score_metrics()
    exporter = OTLPMetricExporter(endpoint=f"127.0.0.1:{collector.grpc_port}", insecure=True)
    try:
        with caplog.at_level(logging.WARNING):
            assert exporter.export(data) is MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    partial = _raw_metrics_export(collector.grpc_port, encode_metrics(data).SerializeToString()).partial_success
    assert partial.rejected_data_points == 2  # one histogram point per attribute set
    assert partial.error_message == METRICS_NOT_STORED
    assert not _raw_metrics_export(collector.grpc_port, b"").HasField("partial_success")  # no points, nothing to say
    with pytest.raises(grpc.RpcError) as caught:
        _raw_metrics_export(collector.grpc_port, b"\xff\xff")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert count(collector.config.target, "spans") == 0


def test_metrics_exports_need_the_token(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret")
    try:
        assert running.grpc_port is not None
        data = _score_metrics()
        body = encode_metrics(data).SerializeToString()
        for metadata in ((), (("authorization", "Bearer wrong"),)):
            with pytest.raises(grpc.RpcError) as caught:
                _raw_metrics_export(running.grpc_port, body, metadata)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        exporter = OTLPMetricExporter(
            endpoint=f"127.0.0.1:{running.grpc_port}", insecure=True, headers={"authorization": "Bearer s3cret"}
        )
        try:
            assert exporter.export(data) is MetricExportResult.SUCCESS
        finally:
            exporter.shutdown()
    finally:
        running.stop()
