"""Forwarding downstream: retried on 503, dropped (and counted) on a refusal, oldest dropped when the queue is
full. The downstream is a real ragtrace collector on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ragtrace_collector._forward import Forwarder, traces_url
from ragtrace_collector._otlp import Batch
from ragtrace_collector._server import Collector
from ragtrace_collector._store import StoreError

from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import SpanFactory, otlp_bytes, start_collector
from tests.collector._stores import count, rows


@pytest.fixture
def downstream(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target)
    yield running
    running.stop()


def _payload(query: str) -> bytes:
    factory = SpanFactory()
    factory.rag(query=query)
    return otlp_bytes(factory.all())


async def test_retries_on_503_then_delivers(downstream: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    assert downstream.store is not None
    real_write = downstream.store.write
    failures = [1]

    def flaky(batch: Batch) -> None:
        if failures[0]:
            failures[0] -= 1
            raise StoreError("disk full, once")
        real_write(batch)

    monkeypatch.setattr(downstream.store, "write", flaky)
    forwarder = Forwarder(f"http://127.0.0.1:{downstream.http_port}")
    forwarder.start()
    forwarder.submit(_payload("retried"))
    await forwarder.stop(timeout=30)
    assert (forwarder.sent, forwarder.dropped, failures[0]) == (1, 0, 0)
    assert count(downstream, "rag_records") == 1


async def test_a_refusal_is_dropped_and_counted(downstream: Collector) -> None:
    forwarder = Forwarder(f"http://127.0.0.1:{downstream.http_port}/v1/traces")
    forwarder.start()
    forwarder.submit(b"\x0a\xff\xff\xff\xff\x0f")  # malformed: 400, not retryable
    forwarder.submit(_payload("fine"))
    await forwarder.stop(timeout=30)
    assert (forwarder.sent, forwarder.dropped) == (1, 1)
    assert count(downstream, "rag_records") == 1


async def test_a_full_queue_drops_the_oldest(downstream: Collector) -> None:
    forwarder = Forwarder(f"http://127.0.0.1:{downstream.http_port}", queue_size=2)
    for query in ("first", "second", "third"):
        forwarder.submit(_payload(query))
    assert forwarder.dropped == 1
    forwarder.start()
    await forwarder.stop(timeout=30)
    assert forwarder.sent == 2
    queries = {query for (query,) in rows(downstream, "SELECT query FROM rag_records")}
    assert queries == {"second", "third"}


def test_traces_url() -> None:
    assert traces_url("http://phoenix:6006") == "http://phoenix:6006/v1/traces"
    assert traces_url("https://x/otlp/") == "https://x/otlp/v1/traces"
    assert traces_url("https://x/v1/traces") == "https://x/v1/traces"
    with pytest.raises(ConfigurationError, match="--forward"):
        traces_url("phoenix:6006")


class _Payloads:
    def __init__(self) -> None:
        self.payloads: list[bytes] = []

    def submit(self, payload: bytes) -> None:
        self.payloads.append(payload)


async def test_only_the_accepted_spans_are_forwarded(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from ragtrace_collector._pipeline import Pipeline
    from ragtrace_collector._store import Store

    factory = SpanFactory()
    factory.rag()
    request = encode_spans(factory.all())
    spans = request.resource_spans[0].scope_spans[0].spans
    bad = spans.add()
    bad.CopyFrom(spans[0])
    bad.trace_id = b"\0" * 16  # the body parses; this span is rejected
    sink = _Payloads()
    store = Store(tmp_path / "c.db", checkpoints=False)
    pipeline = Pipeline(store, forwarder=sink)
    try:
        batch = await pipeline.accept_protobuf(request.SerializeToString())
    finally:
        pipeline.close()
        store.close()
    assert batch.rejected == 1
    (payload,) = sink.payloads
    forwarded = ExportTraceServiceRequest.FromString(payload).resource_spans[0].scope_spans[0].spans
    assert list(forwarded) == list(spans[:2])
