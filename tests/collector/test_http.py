"""OTLP/HTTP receive: the real exporter against a real server on 127.0.0.1, and bad input by hand."""

from __future__ import annotations

import gzip
import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._server import Collector, CollectorConfig
from ragtrace_collector._store import StoreError

from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import (
    SpanFactory,
    deep_protobuf_export,
    nested_value_json,
    otlp_bytes,
    otlp_json,
    start_collector,
)
from tests.collector._stores import count, rows, store_args

PB = {"content-type": "application/x-protobuf"}


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, max_body_bytes=1024 * 1024)
    yield running
    running.stop()


def _url(collector: Collector) -> str:
    return f"http://127.0.0.1:{collector.http_port}/v1/traces"


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_real_exporter_lands_spans_records_and_scores(collector: Collector, compression: Compression) -> None:
    factory = SpanFactory()
    for i in range(20):
        factory.rag(query=f"q{i}", scores={"faithfulness": i / 20}, decision="evaluated")
    exporter = OTLPSpanExporter(endpoint=_url(collector), compression=compression)
    try:
        assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    db = collector.config.target
    assert (count(db, "spans"), count(db, "rag_records"), count(db, "scores")) == (40, 20, 20)


def test_json_body_gets_a_json_reply(collector: Collector) -> None:
    factory = SpanFactory()
    factory.rag()
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = json_format.MessageToDict(encode_spans(factory.all()))
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                import base64

                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    reply = httpx.post(_url(collector), content=json.dumps(doc), headers={"content-type": "application/json"})
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/json")
    assert reply.json() == {}
    assert count(collector.config.target, "rag_records") == 1


def test_partial_success_keeps_the_good_spans(collector: Collector) -> None:
    factory = SpanFactory()
    factory.rag(answer="BADBADBAD")
    factory.rag(answer="fine")
    body = otlp_bytes(factory.all()).replace(b"BADBADBAD", b"BAD\xc3\x28BAD\xff")
    reply = httpx.post(_url(collector), content=body, headers=PB)
    assert reply.status_code == 200
    parsed = ExportTraceServiceResponse.FromString(reply.content)
    assert parsed.partial_success.rejected_spans == 1
    assert "UTF-8" in parsed.partial_success.error_message
    assert count(collector.config.target, "spans") == 3


@pytest.mark.parametrize(
    ("body", "headers", "status"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", PB, 400),  # length prefix past the end
        (b"{", {"content-type": "application/json"}, 400),
        (b"hello", {"content-type": "text/plain"}, 415),
        (b"\x0a\xff\xff\xff\xff\x0f", {"content-type": "application/protobuf"}, 400),  # accepted name, bad body
        (b"hello", {}, 415),
        (b"not gzip", {**PB, "content-encoding": "gzip"}, 400),
        (b"x", {**PB, "content-encoding": "br"}, 415),
    ],
)
def test_bad_requests_get_spec_status_and_a_status_body(
    collector: Collector, body: bytes, headers: dict[str, str], status: int
) -> None:
    reply = httpx.post(_url(collector), content=body, headers=headers)
    assert reply.status_code == status
    if headers.get("content-type") == PB["content-type"]:
        assert status_pb2.Status.FromString(reply.content).message
    # The server is still up and still stores.
    factory = SpanFactory()
    factory.rag()
    assert httpx.post(_url(collector), content=otlp_bytes(factory.all()), headers=PB).status_code == 200


def test_oversized_bodies_get_413(collector: Collector) -> None:
    big = b"\x00" * (100 * 1024 * 1024)  # 100 MB, declared by Content-Length
    assert httpx.post(_url(collector), content=big, headers=PB).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        for _ in range(8):
            yield b"\x00" * (256 * 1024)

    assert httpx.post(_url(collector), content=chunks(), headers=PB).status_code == 413
    bomb = gzip.compress(b"\x00" * (20 * 1024 * 1024))  # 20 KB that inflates past the limit
    assert len(bomb) < 1024 * 1024
    reply = httpx.post(_url(collector), content=bomb, headers={**PB, "content-encoding": "gzip"})
    assert reply.status_code == 413


def test_store_failure_is_503_and_not_acknowledged(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(batch: object) -> None:
        raise StoreError("disk full")

    assert collector.store is not None
    monkeypatch.setattr(collector.store, "write", broken)
    factory = SpanFactory()
    factory.rag()
    reply = httpx.post(_url(collector), content=otlp_bytes(factory.all()), headers=PB)
    assert reply.status_code == 503
    assert reply.headers["retry-after"]


def test_bearer_token_is_required_when_set(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret")
    try:
        factory = SpanFactory()
        factory.rag()
        url = f"http://127.0.0.1:{running.http_port}/v1/traces"
        body = otlp_bytes(factory.all())
        assert httpx.post(url, content=body, headers=PB).status_code == 401
        wrong = {**PB, "authorization": "Bearer nope"}
        assert httpx.post(url, content=body, headers=wrong).status_code == 401
        exporter = OTLPSpanExporter(endpoint=url, headers={"authorization": "Bearer s3cret"})
        try:
            assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert count(running.config.target, "rag_records") == 1
    finally:
        running.stop()


def test_non_loopback_without_token_needs_insecure(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="--insecure"):
        CollectorConfig(db=tmp_path / "c.db", host="0.0.0.0").validate()
    CollectorConfig(db=tmp_path / "c.db", host="0.0.0.0", insecure=True).validate()
    CollectorConfig(db=tmp_path / "c.db", host="0.0.0.0", token="t").validate()
    CollectorConfig(db=tmp_path / "c.db", host="::1").validate()
    with pytest.raises(ConfigurationError, match="--forward"):
        CollectorConfig(db=tmp_path / "c.db", forward="ftp://x").validate()


def test_cli_refuses_an_open_bind_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrace_collector.__main__ import main

    assert main(["serve", "--db", str(tmp_path / "c.db"), "--host", "0.0.0.0"]) == 2
    assert "--token" in capsys.readouterr().err


def test_serve_wires_the_page_and_the_watcher(store_target: str) -> None:
    running = start_collector(store_target, page=True, watch=True)
    try:
        factory = SpanFactory()
        factory.rag(scores={"faithfulness": 0.9}, decision="evaluated")
        url = f"http://127.0.0.1:{running.http_port}"
        assert httpx.post(f"{url}/v1/traces", content=otlp_bytes(factory.all()), headers=PB).status_code == 200
        page = httpx.get(f"{url}/", timeout=60)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
    finally:
        running.stop()


def test_report_command_writes_the_file(tmp_path: Path, store_target: str) -> None:
    from ragtrace_collector.__main__ import main

    running = start_collector(store_target)
    try:
        factory = SpanFactory()
        factory.rag(scores={"faithfulness": 0.4}, decision="evaluated")
        reply = httpx.post(_url(running), content=otlp_bytes(factory.all()), headers=PB)
        assert reply.status_code == 200
    finally:
        running.stop()
    out = tmp_path / "report.md"
    assert main(["report", *store_args(store_target), "--out", str(out), "--format", "markdown"]) == 0
    assert "faithfulness" in out.read_text()
    assert main(["report", "--db", str(tmp_path / "missing.db"), "--out", str(out)]) == 2


@pytest.mark.slow
def test_decode_processes_and_the_fallback_when_one_dies(store_target: str) -> None:
    import multiprocessing
    import os
    import signal

    running = start_collector(store_target, decode_processes=1)
    try:
        factory = SpanFactory()
        factory.rag(query="decoded in a process")
        assert httpx.post(_url(running), content=otlp_bytes(factory.all()), headers=PB).status_code == 200
        (worker,) = [p for p in multiprocessing.active_children() if p.pid is not None and "Process" in p.name]
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        factory.rag(query="decoded after the process died")
        assert httpx.post(_url(running), content=otlp_bytes(factory.all()), headers=PB).status_code == 200
        assert count(running.config.target, "rag_records") == 2
    finally:
        running.stop()


def test_with_a_token_the_page_needs_it_too(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret", page=True)
    try:
        base = f"http://127.0.0.1:{running.http_port}"
        # A page without it sends a person to the sign-in form; the API answers 401.
        for path in ("/", "/?token=nope"):
            away = httpx.get(base + path, timeout=60)
            assert away.status_code == 303 and away.headers["location"].startswith("/signin?next=")
        assert httpx.get(f"{base}/api/records?token=nope", timeout=60).status_code == 401
        signed_in = httpx.get(f"{base}/?token=s3cret", timeout=60)
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        assert httpx.get(f"{base}/", headers={"authorization": "Bearer s3cret"}, timeout=60).status_code == 200
        assert httpx.get(f"{base}/healthz").status_code == 200
    finally:
        running.stop()


def test_invalid_utf8_in_json_is_replaced_not_refused(collector: Collector) -> None:
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "NAME", "attributes": []}
    doc = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    body = doc.replace(b"NAME", b"N\xffME")
    reply = httpx.post(_url(collector), content=body, headers={"content-type": "application/json"})
    assert reply.status_code == 200
    assert rows(collector, "SELECT name FROM spans") == [("N\ufffdME",)]


def test_a_bad_rules_file_stops_serve_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrace_collector.__main__ import main

    rules = tmp_path / "rules.toml"
    rules.write_text("this is [not toml")
    argv = ["serve", "--db", str(tmp_path / "c.db"), "--port", "0", "--grpc-port", "-1", "--rules", str(rules)]
    assert main(argv) == 2
    assert "rules" in capsys.readouterr().err.lower()


def test_a_port_in_use_fails_the_start_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragtrace_collector.__main__ import main

    first = start_collector(tmp_path / "a.db")
    try:
        for flag, port in (("--grpc-port", first.grpc_port), ("--port", first.http_port)):
            other = "--port" if flag == "--grpc-port" else "--grpc-port"
            argv = ["serve", "--db", str(tmp_path / "b.db"), flag, str(port), other, "0", "--decode-processes", "0"]
            assert main(argv) == 1
            assert "could not" in capsys.readouterr().err
        # The first collector is unharmed.
        factory = SpanFactory()
        factory.rag()
        assert httpx.post(_url(first), content=otlp_bytes(factory.all()), headers=PB).status_code == 200
    finally:
        first.stop()


def test_metrics_exports_are_answered_as_not_stored(collector: Collector) -> None:
    # configure() sends the score histogram to the span endpoint by default: the exporter must get a
    # clear, non-retryable answer, not a 404 every minute, and nothing is claimed to be stored.
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceResponse
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult

    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    histogram = provider.get_meter("t").create_histogram("gen_ai.evaluation.score")
    for value in (0.2, 0.9):
        histogram.record(value, {"gen_ai.evaluation.name": "faithfulness"})
        histogram.record(value, {"gen_ai.evaluation.name": "hallucination"})
    data = reader.get_metrics_data()
    assert data is not None
    url = f"http://127.0.0.1:{collector.http_port}/v1/metrics"
    exporter = OTLPMetricExporter(endpoint=url)
    try:
        assert exporter.export(data) is MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()
        provider.shutdown()
    reply = httpx.post(
        url, content=encode_metrics(data).SerializeToString(), headers={"Content-Type": "application/x-protobuf"}
    )
    assert reply.status_code == 200
    partial = ExportMetricsServiceResponse.FromString(reply.content).partial_success
    assert partial.rejected_data_points == 2  # one histogram point per attribute set
    assert "stores spans, not metrics" in partial.error_message
    assert httpx.post(url, content=b"\xff\xff", headers={"Content-Type": "application/x-protobuf"}).status_code == 400
    assert count(collector.config.target, "spans") == 0


def test_a_non_ascii_digit_in_a_document_key_is_stored_not_a_500(collector: Collector) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    factory = SpanFactory()
    factory.rag()
    request = encode_spans(factory.all())
    odd = request.resource_spans[0].scope_spans[0].spans[0]
    odd.attributes.add(key="retrieval.documents.\u00b2.document.content").value.string_value = "x"
    reply = httpx.post(_url(collector), content=request.SerializeToString(), headers=PB)
    assert reply.status_code == 200
    assert not ExportTraceServiceResponse.FromString(reply.content).HasField("partial_success")
    assert count(collector.config.target, "spans") == 2


def test_a_span_the_decoder_cannot_convert_is_a_partial_success(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrace_collector._otlp import _rows

    def failing(batch: object, attrs: dict, *args: object) -> None:  # type: ignore[type-arg]
        raise RuntimeError("unforeseen")

    monkeypatch.setattr(_rows, "_rag_and_scores", failing)
    factory = SpanFactory()
    factory.rag()
    reply = httpx.post(_url(collector), content=otlp_bytes(factory.all()), headers=PB)
    assert reply.status_code == 200
    parsed = ExportTraceServiceResponse.FromString(reply.content)
    assert parsed.partial_success.rejected_spans == 2
    assert "RuntimeError: unforeseen" in parsed.partial_success.error_message


def test_a_gzip_body_of_several_members_is_read_whole(collector: Collector) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    first, second = SpanFactory(), SpanFactory()
    first.rag(query="first")
    second.rag(query="second")
    # Concatenated protobuf messages merge: two members, one export of both factories' spans.
    body = gzip.compress(encode_spans(first.all()).SerializeToString()) + gzip.compress(
        encode_spans(second.all()).SerializeToString()
    )
    reply = httpx.post(_url(collector), content=body, headers={**PB, "content-encoding": "gzip"})
    assert reply.status_code == 200
    assert count(collector.config.target, "rag_records") == 2


def _one_export_gzipped() -> bytes:
    factory = SpanFactory()
    factory.rag()
    return gzip.compress(otlp_bytes(factory.all()))


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (_one_export_gzipped() + b"GARBAGE", 400, "trailing data"),
        (_one_export_gzipped() + gzip.compress(b"more")[:-3], 400, "truncated"),
        (gzip.compress(b"\x00" * (600 * 1024)) * 2, 413, "over the"),  # each member small, together over 1 MiB
    ],
)
def test_gzip_trailing_garbage_truncation_and_size_count_over_all_members(
    collector: Collector, body: bytes, status: int, message: str
) -> None:
    reply = httpx.post(_url(collector), content=body, headers={**PB, "content-encoding": "gzip"})
    assert reply.status_code == status
    assert message in status_pb2.Status.FromString(reply.content).message
    assert count(collector.config.target, "spans") == 0


def test_nul_padding_after_the_last_gzip_member_is_tolerated(collector: Collector) -> None:
    factory = SpanFactory()
    factory.rag()
    body = gzip.compress(otlp_bytes(factory.all())) + b"\x00" * 16
    reply = httpx.post(_url(collector), content=body, headers={**PB, "content-encoding": "gzip"})
    assert reply.status_code == 200
    assert count(collector.config.target, "spans") == 2


def test_a_body_of_many_gzip_members_is_handed_to_zlib_in_pieces_not_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """At each member's end zlib copies the input it was handed and did not use.

    Handed the whole rest of the body, a body of many tiny members cost time quadratic in its size (4 MB of empty
    members held the event loop 11 s; 64 MiB, most of an hour). Each call must get a bounded piece.
    """
    import zlib

    from ragtrace_collector._http._gzip import gunzip

    handed: list[int] = []
    real = zlib.decompressobj

    class Recording:
        def __init__(self, wbits: int) -> None:
            self._inner = real(wbits)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            handed.append(len(data))
            return self._inner.decompress(data, max_length)

        def __getattr__(self, name: str) -> object:  # eof, unused_data, unconsumed_tail
            return getattr(self._inner, name)

    monkeypatch.setattr(zlib, "decompressobj", Recording)
    body = gzip.compress(b"x") * 20_000  # 420 KB

    assert gunzip(body, 1024 * 1024, lambda size: None) == b"x" * 20_000
    assert max(handed) <= 64 * 1024


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (gzip.compress(b"\0" * (3 * 1024 * 1024)) * 3, b"\0" * (9 * 1024 * 1024)),  # ~1000:1, output-bound calls
        (
            gzip.compress(b"a" * (1024 * 1024)) + gzip.compress(b"b" * 1000, compresslevel=0) + b"\0" * 8,
            b"a" * (1024 * 1024) + b"b" * 1000,
        ),
    ],
)
def test_a_gzip_body_is_inflated_whole_in_chunks_each_taken_before_the_next(body: bytes, expected: bytes) -> None:
    from ragtrace_collector._http._gzip import _GZIP_OUT_BYTES, gunzip

    taken: list[int] = []
    assert gunzip(body, 64 * 1024 * 1024, taken.append) == expected
    assert sum(taken) == len(expected) and max(taken) <= _GZIP_OUT_BYTES


def test_with_a_token_both_receivers_answer_in_otlp_terms_and_take_any_case_of_bearer(store_target: str) -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    running = start_collector(store_target, token="s3cret")
    try:
        base = f"http://127.0.0.1:{running.http_port}"
        metrics = ExportMetricsServiceRequest().SerializeToString()
        for path, body in (("/v1/traces", b""), ("/v1/metrics", metrics)):
            reply = httpx.post(base + path, content=body, headers=PB)
            assert reply.status_code == 401, path
            assert reply.headers["content-type"] == PB["content-type"], path
            assert status_pb2.Status.FromString(reply.content).message == "missing or wrong bearer token"
            for scheme in ("bearer", "BEARER", "Bearer"):
                ok = httpx.post(base + path, content=body, headers={**PB, "authorization": f"{scheme} s3cret"})
                assert ok.status_code == 200, (path, scheme)
            wrong = httpx.post(base + path, content=body, headers={**PB, "authorization": "Basic s3cret"})
            assert wrong.status_code == 401
        page = httpx.get(base + "/", headers={"authorization": "bearer s3cret"})
        assert page.status_code != 401
    finally:
        running.stop()


def test_a_large_gzip_body_is_inflated_off_the_event_loop(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from ragtrace_collector._http import _body, _gzip

    threads: list[str] = []
    real = _gzip.gunzip

    def recording(body: bytes, limit: int, take: Callable[[int], None]) -> bytes:
        threads.append(threading.current_thread().name)
        return real(body, limit, take)

    monkeypatch.setattr(_gzip, "gunzip", recording)
    small = _one_export_gzipped()
    factory = SpanFactory()
    for i in range(300):
        factory.rag(query=f"question {i} " + "x" * 400)
    large = gzip.compress(otlp_bytes(factory.all()), compresslevel=0)  # stored: as large as the export
    assert len(small) <= _body._GZIP_INLINE_BYTES < len(large)
    for body in (small, large):
        reply = httpx.post(_url(collector), content=body, headers={**PB, "content-encoding": "gzip"})
        assert reply.status_code == 200
    assert count(collector.config.target, "rag_records") == 301
    inline, off_loop = threads
    assert inline != off_loop  # the small body on the loop's thread, the large one in a worker thread


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_a_span_nested_250_levels_deep_costs_that_span_not_the_request(collector: Collector, encoding: str) -> None:
    factory = SpanFactory()
    factory.rag(query="kept beside the deep span")
    with factory.tracer.start_as_current_span("deep", attributes={"deep": "PLACEHOLDER"}):
        pass
    if encoding == "json":
        deep = nested_value_json("kvlistValue", 250)
        body = otlp_json(factory.all()).replace('{"stringValue": "PLACEHOLDER"}', deep).encode()
        headers = {"content-type": "application/json"}
    else:
        body, headers = deep_protobuf_export(factory.all(), levels=250), PB
    reply = httpx.post(_url(collector), content=body, headers=headers)
    assert reply.status_code == 200, reply.text
    parsed = ExportTraceServiceResponse()
    if encoding == "json":
        json_format.Parse(reply.content, parsed)
    else:
        parsed.ParseFromString(reply.content)
    assert parsed.partial_success.rejected_spans == 1
    assert sorted(name for (name,) in rows(collector, "SELECT name FROM spans")) == ["answer", "retrieve"]
    assert count(collector.config.target, "rag_records") == 1


def test_a_sender_gone_mid_body_is_one_log_line_not_a_traceback(
    store_target: str, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    running = start_collector(store_target)
    factory = SpanFactory()
    factory.rag()
    body = otlp_bytes(factory.all())
    try:
        with socket.create_connection(("127.0.0.1", running.http_port), timeout=30) as sender:
            sender.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: collector\r\nContent-Type: application/x-protobuf\r\n"
                + f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
            )
            # "100 Continue" comes once the handler reads the body: the request is being served from here on.
            head = b""
            while b"\r\n\r\n" not in head:
                data = sender.recv(1)
                assert data, head
                head += data
            assert head.startswith(b"HTTP/1.1 100 ")
            sender.sendall(body[: len(body) // 2])
    finally:
        running.stop()  # waits for the request in flight: whatever it logs is logged by then
    gone = [record for record in caplog.records if "closed the connection" in record.getMessage()]
    assert len(gone) == 1, [record.getMessage() for record in caplog.records]
    assert gone[0].levelno == logging.WARNING
    assert f"after {len(body) // 2} of {len(body)} bytes of its /v1/traces body" in gone[0].getMessage()
    assert [record for record in caplog.records if record.exc_info] == []
    assert "Traceback" not in capfd.readouterr().err
    assert running.budget.in_flight == 0
    assert count(running.config.target, "spans") == 0
