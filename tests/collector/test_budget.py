"""The in-flight byte budget: refused past it with a retry delay (HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED
+ RetryInfo), given back however a request ends. Real requests to a real collector on 127.0.0.1."""

from __future__ import annotations

import gzip
import logging
import socket
from pathlib import Path

import grpc
import httpx
import pytest
from google.rpc import code_pb2, status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from ragtrace_collector._budget import RETRY_AFTER_SECONDS, ByteBudget, OverBudget
from ragtrace_collector._grpc import RETRY_INFO_KEY, SERVICE_NAME
from ragtrace_collector._server import Collector, CollectorConfig

from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import SpanFactory, count, otlp_bytes, start_collector

PB = {"content-type": "application/x-protobuf"}


def _export(query: str, answer: str = "Brasilia.") -> bytes:
    factory = SpanFactory()
    factory.rag(query=query, answer=answer)
    return otlp_bytes(factory.all())


def _post(collector: Collector, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    return httpx.post(url, content=body, headers=headers or PB, timeout=30)


def _grpc_export(collector: Collector, body: bytes) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        export = channel.unary_unary(f"/{SERVICE_NAME}/Export", request_serializer=lambda b: b)
        export(body, timeout=30)


def _read_head(sock: socket.socket) -> bytes:
    """Bytes up to the end of one response's head (status line and headers)."""
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)
        assert data, f"connection closed after {head!r}"
        head += data
    return head


def test_a_budget_holds_bytes_until_given_back_and_never_refuses_a_request_alone() -> None:
    budget = ByteBudget(100)
    with budget.hold() as first:
        first.take(60)
        first.take(60)  # alone: admitted past the limit, refusing it would free nothing
        assert budget.in_flight == 120
        with budget.hold() as second, pytest.raises(OverBudget, match="100-byte budget"):
            second.take(1)
        assert budget.in_flight == 120
    assert budget.in_flight == 0
    with budget.hold() as first, budget.hold() as second:
        first.take(40)
        second.take(60)
        with pytest.raises(OverBudget):
            first.take(1)
        second.release()
        first.take(60)
        assert budget.in_flight == 100
    with pytest.raises(RuntimeError), budget.hold() as failing:
        failing.take(10)
        raise RuntimeError("a request that fails gives its bytes back too")
    assert budget.in_flight == 0


def test_refusals_are_logged_once_when_they_start_and_once_when_they_stop(caplog: pytest.LogCaptureFixture) -> None:
    budget = ByteBudget(10)
    caplog.set_level(logging.INFO, logger="ragtrace_collector")
    with budget.hold() as holding:
        holding.take(10)
        for _ in range(3):
            with budget.hold() as refused, pytest.raises(OverBudget):
                refused.take(5)
    with budget.hold() as admitted:
        admitted.take(5)
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2, messages
    assert "in-flight budget full" in messages[0] and "--max-inflight-bytes" in messages[0]
    assert messages[1] == "in-flight budget: admitting requests again (3 refused meanwhile)"


def test_a_request_streaming_its_body_holds_the_budget_and_the_next_gets_429_with_retry_after(
    tmp_path: Path,
) -> None:
    first, second = _export("first", answer="x" * 5000), _export("second")
    limit = len(first) + len(second) - 1  # either alone fits, both together do not
    running = start_collector(tmp_path / "c.db", max_body_bytes=limit, max_inflight_bytes=limit)
    try:
        with socket.create_connection(("127.0.0.1", running.http_port), timeout=30) as streaming:
            streaming.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: collector\r\nContent-Type: application/x-protobuf\r\n"
                + f"Content-Length: {len(first)}\r\nExpect: 100-continue\r\n\r\n".encode()
            )
            # The server asks for the body only once its handler runs, which has taken the declared length:
            # from here on the first request holds the budget, deterministically.
            assert _read_head(streaming).startswith(b"HTTP/1.1 100 ")
            streaming.sendall(first[: len(first) // 2])

            refused = _post(running, second)
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
            status = status_pb2.Status.FromString(refused.content)
            assert status.code == code_pb2.RESOURCE_EXHAUSTED and "budget" in status.message
            with pytest.raises(grpc.RpcError) as refused_grpc:
                _grpc_export(running, second)  # the gRPC receiver shares the budget
            assert refused_grpc.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

            streaming.sendall(first[len(first) // 2 :])
            assert _read_head(streaming).startswith(b"HTTP/1.1 200 ")
        assert running.budget.in_flight == 0  # given back before the reply was sent
        assert _post(running, second).status_code == 200
        assert count(running.config.db, "rag_records") == 2
    finally:
        running.stop()


def test_while_the_budget_is_held_both_receivers_refuse_with_a_retry_delay_and_take_again_after(
    tmp_path: Path,
) -> None:
    running = start_collector(tmp_path / "c.db")
    body = _export("held out")
    try:
        with running.budget.hold() as held:
            held.take(running.budget.limit)
            reply = _post(running, body)
            assert reply.status_code == 429
            assert reply.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
            with pytest.raises(grpc.RpcError) as refused:
                _grpc_export(running, body)
            error = refused.value
            assert isinstance(error, grpc.Call)
            assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            # The OTLP gRPC exporters retry RESOURCE_EXHAUSTED only with a RetryInfo, and wait as long as it says.
            retry_info = RetryInfo.FromString(dict(error.trailing_metadata() or ())[RETRY_INFO_KEY])
            assert retry_info.retry_delay.seconds == RETRY_AFTER_SECONDS
            assert count(running.config.db, "spans") == 0
        assert running.budget.in_flight == 0
        assert _post(running, body).status_code == 200
        _grpc_export(running, body)
        assert count(running.config.db, "rag_records") == 1
    finally:
        running.stop()


def test_every_ending_gives_the_bytes_back(tmp_path: Path) -> None:
    running = start_collector(tmp_path / "c.db", max_body_bytes=64 * 1024, max_inflight_bytes=64 * 1024)
    try:
        good = _export("kept", answer="y" * 40000)
        zipped = gzip.compress(good, compresslevel=0)
        endings = [
            (b"\x0a\xff\xff", PB, 400),  # malformed protobuf
            (b"x" * (65 * 1024), PB, 413),  # over --max-body-bytes
            (b"{}", {"content-type": "text/plain"}, 415),
            # Alone, a gzip body is admitted though it holds more than the budget (as received and inflated).
            (zipped, {**PB, "content-encoding": "gzip"}, 200),
        ]
        for body, headers, status in endings:
            assert _post(running, body, headers).status_code == status
            assert running.budget.in_flight == 0, status
        assert len(zipped) + len(good) > running.budget.limit
        assert count(running.config.db, "rag_records") == 1
    finally:
        running.stop()


def test_the_budget_must_hold_at_least_one_request(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="--max-inflight-bytes 1024 is below --max-body-bytes 2048"):
        CollectorConfig(db=tmp_path / "c.db", max_body_bytes=2048, max_inflight_bytes=1024).validate()
    CollectorConfig(db=tmp_path / "c.db", max_body_bytes=2048, max_inflight_bytes=2048).validate()
