"""OTLP/gRPC receive: the real gRPC exporter against a real server on 127.0.0.1, and raw calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._grpc import SERVICE_NAME
from ragtrace_collector._server import Collector

from ragtrace import semconv
from tests.collector._spans import SpanFactory, count, otlp_bytes, start_collector


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    running = start_collector(tmp_path / "c.db")
    yield running
    running.stop()


def _raw_export(port: int, body: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> ExportTraceServiceResponse:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(
            f"/{SERVICE_NAME}/Export",
            request_serializer=lambda b: b,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        reply: ExportTraceServiceResponse = export(body, timeout=10, metadata=metadata)
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
    db = collector.config.db
    assert (count(db, "spans"), count(db, "rag_records"), count(db, "scores")) == (60, 30, 30)


def test_invalid_utf8_is_a_partial_success(collector: Collector) -> None:
    assert collector.grpc_port is not None
    factory = SpanFactory()
    factory.rag(query="ZZZZ")
    factory.rag(query="good")
    body = otlp_bytes(factory.all()).replace(b"ZZZZ", b"Z\xffZZ")
    reply = _raw_export(collector.grpc_port, body)
    assert reply.partial_success.rejected_spans == 1
    assert count(collector.config.db, "rag_records") == 1


def test_malformed_body_is_invalid_argument(collector: Collector) -> None:
    assert collector.grpc_port is not None
    with pytest.raises(grpc.RpcError) as caught:
        _raw_export(collector.grpc_port, b"\x0a\xff\xff\xff\xff\x0f")
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    # Still serving.
    factory = SpanFactory()
    factory.rag()
    assert not _raw_export(collector.grpc_port, otlp_bytes(factory.all())).HasField("partial_success")


def test_token_is_checked(tmp_path: Path) -> None:
    running = start_collector(tmp_path / "c.db", token="s3cret")
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
        assert count(running.config.db, "rag_records") == 1
    finally:
        running.stop()


def test_a_span_the_decoder_cannot_convert_is_a_partial_success(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrace_collector import _otlp

    assert collector.grpc_port is not None
    real = _otlp._rag_and_scores

    def failing(batch: _otlp.Batch, attrs: dict, *args: object) -> None:  # type: ignore[type-arg]
        real(batch, attrs, *args)  # type: ignore[arg-type]
        if attrs.get(semconv.INPUT_VALUE) == "doomed":
            raise RuntimeError("unforeseen")

    monkeypatch.setattr(_otlp, "_rag_and_scores", failing)
    factory = SpanFactory()
    factory.rag(query="doomed")
    factory.rag(query="good")
    reply = _raw_export(collector.grpc_port, otlp_bytes(factory.all()))
    assert reply.partial_success.rejected_spans == 1
    assert "RuntimeError: unforeseen" in reply.partial_success.error_message
    assert count(collector.config.db, "spans") == 3
    assert count(collector.config.db, "rag_records") == 1


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
    assert count(collector.config.db, "spans") == 2


def test_the_bearer_scheme_is_matched_in_any_case(tmp_path: Path) -> None:
    running = start_collector(tmp_path / "c.db", token="s3cret")
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
