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
from tests.collector._spans import SpanFactory, count, otlp_bytes, start_collector


@pytest.fixture
def downstream(tmp_path: Path) -> Iterator[Collector]:
    running = start_collector(tmp_path / "down.db")
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
    assert count(downstream.config.db, "rag_records") == 1


async def test_a_refusal_is_dropped_and_counted(downstream: Collector) -> None:
    forwarder = Forwarder(f"http://127.0.0.1:{downstream.http_port}/v1/traces")
    forwarder.start()
    forwarder.submit(b"\x0a\xff\xff\xff\xff\x0f")  # malformed: 400, not retryable
    forwarder.submit(_payload("fine"))
    await forwarder.stop(timeout=30)
    assert (forwarder.sent, forwarder.dropped) == (1, 1)
    assert count(downstream.config.db, "rag_records") == 1


async def test_a_full_queue_drops_the_oldest(downstream: Collector) -> None:
    forwarder = Forwarder(f"http://127.0.0.1:{downstream.http_port}", queue_size=2)
    for query in ("first", "second", "third"):
        forwarder.submit(_payload(query))
    assert forwarder.dropped == 1
    forwarder.start()
    await forwarder.stop(timeout=30)
    assert forwarder.sent == 2
    assert downstream.store is not None
    queries = {row[0] for row in downstream.store.reader().execute("SELECT query FROM rag_records")}
    assert queries == {"second", "third"}


def test_traces_url() -> None:
    assert traces_url("http://phoenix:6006") == "http://phoenix:6006/v1/traces"
    assert traces_url("https://x/otlp/") == "https://x/otlp/v1/traces"
    assert traces_url("https://x/v1/traces") == "https://x/v1/traces"
    with pytest.raises(ConfigurationError, match="--forward"):
        traces_url("phoenix:6006")
