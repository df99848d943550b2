"""The in-flight byte budget: refused past it with a retry delay (HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED
+ RetryInfo), given back however a request ends. Real requests to a real collector on 127.0.0.1."""

from __future__ import annotations

import asyncio
import gzip
import logging
import random
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import httpx
import pytest
from google.rpc import code_pb2, status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from ragtrace_collector._budget import RETRY_AFTER_SECONDS, ByteBudget, Hold, OverBudget
from ragtrace_collector._grpc import RETRY_INFO_KEY, SERVICE_NAME
from ragtrace_collector._http import create_app
from ragtrace_collector._http._body import _GZIP_INLINE_BYTES
from ragtrace_collector._http._gzip import _GZIP_OUT_BYTES
from ragtrace_collector._otlp import decoded_cost
from ragtrace_collector._pipeline import Pipeline
from ragtrace_collector._server import Collector, CollectorConfig
from ragtrace_collector._store import Store
from starlette.types import ASGIApp, Message

from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import SpanFactory, grpc_export, otlp_bytes, start_collector
from tests.collector._stores import count

PB = {"content-type": "application/x-protobuf"}


def _export(query: str, answer: str = "Brasilia.") -> bytes:
    factory = SpanFactory()
    factory.rag(query=query, answer=answer)
    return otlp_bytes(factory.all())


def _post(collector: Collector, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    return httpx.post(url, content=body, headers=headers or PB, timeout=30)


def _grpc_export(collector: Collector, body: bytes) -> None:
    grpc_export(collector.grpc_port, SERVICE_NAME, body, timeout=30)


def _read_head(sock: socket.socket) -> bytes:
    """Bytes up to the end of one response's head (status line and headers)."""
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)
        assert data, f"connection closed after {head!r}"
        head += data
    return head


class _Sender:
    """One OTLP/HTTP request driven into the app by hand: its body goes in chunk by chunk, when the test says.

    ``ready`` returns once the app asks for the next chunk (it has taken everything before) or has answered, so
    the test looks at the budget at a known point, with no sleep and no race.
    """

    def __init__(self, app: ASGIApp, declared: int | None) -> None:
        headers = [(b"content-type", PB["content-type"].encode())]
        if declared is not None:
            headers.append((b"content-length", str(declared).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/traces",
            "raw_path": b"/v1/traces",
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 4318),
        }
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._asking = asyncio.Event()
        self._replies: list[Message] = []
        self._task = asyncio.ensure_future(app(scope, self._receive, self._reply))

    async def _receive(self) -> Message:
        if self._inbox.empty():
            self._asking.set()
        return await self._inbox.get()

    async def _reply(self, message: Message) -> None:
        self._replies.append(message)

    async def ready(self) -> bool:
        """Wait until the app asks for more of the body (True) or has answered (False)."""
        asking = asyncio.ensure_future(self._asking.wait())
        await asyncio.wait({asking, self._task}, return_when=asyncio.FIRST_COMPLETED)
        asking.cancel()
        return not self._task.done()

    async def send(self, chunk: bytes, *, more: bool = True) -> bool:
        """Hand the app ``chunk`` (the last one unless ``more``), then ``ready``."""
        self._asking.clear()
        self._inbox.put_nowait({"type": "http.request", "body": chunk, "more_body": more})
        return await self.ready()

    async def status(self, *, disconnect: bool = False) -> int:
        """The status the app answered with, once it has (after the sender goes away, with ``disconnect``)."""
        if disconnect:
            self._inbox.put_nowait({"type": "http.disconnect"})
        await self._task
        return int(self._replies[0]["status"])


@asynccontextmanager
async def _app(path: Path, budget: ByteBudget, max_body_bytes: int) -> AsyncIterator[tuple[ASGIApp, httpx.AsyncClient]]:
    """The collector's HTTP app in this process (no server), and a client that posts whole bodies to it."""
    store = Store(path)
    pipeline = Pipeline(store)
    try:
        app = create_app(pipeline, max_body_bytes=max_body_bytes, budget=budget)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://collector") as client:
            yield app, client
    finally:
        pipeline.close()
        store.close()


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
    with budget.hold() as first, budget.hold() as announced:
        first.take(60)
        announced.check(40)  # a size only announced is checked against the budget, not taken
        assert budget.in_flight == 60
        with pytest.raises(OverBudget):
            announced.check(41)


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


async def test_a_request_holds_the_bytes_it_has_received_and_the_next_gets_429_with_retry_after_past_them(
    tmp_path: Path,
) -> None:
    first, second = _export("first", answer="x" * 5000), _export("second")
    # The second is held at what it decodes to (_decoded), the first's bytes as they arrive: the second fits
    # beside half of the first, not beside all of it.
    second_cost = decoded_cost(second, export="traces", as_json=False)
    limit = len(first) // 2 + len(first) // 4 + second_cost
    budget = ByteBudget(limit)
    async with _app(tmp_path / "c.db", budget, max_body_bytes=limit) as (app, client):
        streaming = _Sender(app, declared=len(first))
        assert await streaming.ready()
        assert budget.in_flight == 0  # its declared length is not taken: nothing has arrived
        half = len(first) // 2
        assert await streaming.send(first[:half])
        assert budget.in_flight == half  # exactly the bytes received

        assert (await client.post("/v1/traces", content=second, headers=PB)).status_code == 200
        assert budget.in_flight == half

        assert await streaming.send(first[half:-1])
        assert budget.in_flight == len(first) - 1
        refused = await client.post("/v1/traces", content=second, headers=PB)
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
        status = status_pb2.Status.FromString(refused.content)
        assert status.code == code_pb2.RESOURCE_EXHAUSTED and "budget" in status.message
        assert budget.in_flight == len(first) - 1

        assert not await streaming.send(first[-1:], more=False)
        assert await streaming.status() == 200
        assert budget.in_flight == 0  # given back before the reply was sent
        assert (await client.post("/v1/traces", content=second, headers=PB)).status_code == 200
    assert count(tmp_path / "c.db", "rag_records") == 2


async def test_senders_that_declare_the_largest_body_and_send_nothing_hold_none_of_the_budget(tmp_path: Path) -> None:
    # Four idle connections declaring 64 MiB each used to hold the default 256 MiB budget for as long as they
    # stayed open (uvicorn has no body-read timeout): every other sender got 429, indefinitely.
    max_body = 64 * 1024
    budget = ByteBudget(4 * max_body)
    async with _app(tmp_path / "c.db", budget, max_body_bytes=max_body) as (app, client):
        idle = [_Sender(app, declared=max_body) for _ in range(4)]
        for sender in idle:
            assert await sender.ready()
        assert budget.in_flight == 0
        assert (await client.post("/v1/traces", content=_export("sent"), headers=PB)).status_code == 200
        for sender in idle:
            assert await sender.status(disconnect=True) == 400  # gone before its body arrived: nothing stored
        assert budget.in_flight == 0
    assert count(tmp_path / "c.db", "rag_records") == 1


def test_a_declared_length_that_cannot_fit_is_refused_before_its_body_is_sent(store_target: str) -> None:
    running = start_collector(store_target)
    body = _export("waits for 100 Continue")
    try:
        with running.budget.hold() as held:
            held.take(running.budget.limit - len(body) + 1)
            with socket.create_connection(("127.0.0.1", running.http_port), timeout=30) as sender:
                sender.sendall(
                    b"POST /v1/traces HTTP/1.1\r\nHost: collector\r\nContent-Type: application/x-protobuf\r\n"
                    + f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode()
                )
                # Checked, not taken: refused at once, so the sender never sends the body it waits to send.
                head = _read_head(sender)
                assert head.startswith(b"HTTP/1.1 429 "), head
                assert f"retry-after: {RETRY_AFTER_SECONDS}".encode() in head.lower()
            assert running.budget.in_flight == held.held
        assert running.budget.in_flight == 0
        assert _post(running, body).status_code == 200
    finally:
        running.stop()


def test_while_the_budget_is_held_both_receivers_refuse_with_a_retry_delay_and_take_again_after(
    store_target: str,
) -> None:
    running = start_collector(store_target)
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
            assert count(running, "spans") == 0
        assert running.budget.in_flight == 0
        assert _post(running, body).status_code == 200
        _grpc_export(running, body)
        assert count(running, "rag_records") == 1
    finally:
        running.stop()


def test_every_ending_gives_the_bytes_back(store_target: str) -> None:
    running = start_collector(store_target, max_body_bytes=64 * 1024, max_inflight_bytes=64 * 1024)
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
        assert count(running, "rag_records") == 1
    finally:
        running.stop()


class _RecordingBudget(ByteBudget):
    """A budget that records the size of every ``take`` of its holds, admitted or refused."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.takes: list[int] = []

    def hold(self) -> Hold:
        takes = self.takes

        class Recording(Hold):
            def take(self, size: int) -> None:
                takes.append(size)
                super().take(size)

        return Recording(self)


@pytest.mark.parametrize("compressed", ["inline", "in a worker thread"])
async def test_a_gzip_body_takes_its_inflated_bytes_chunk_by_chunk_and_stops_inflating_when_refused(
    tmp_path: Path, compressed: str
) -> None:
    # A gzip body used to be inflated whole (up to --max-body-bytes) before its size was taken from the budget:
    # every request inflating at once could allocate that much past it.
    noise = random.Random(0).randbytes(_GZIP_INLINE_BYTES + 1) if compressed != "inline" else b""
    body = gzip.compress(noise + b"\0" * (2 * 1024 * 1024))
    assert (len(body) > _GZIP_INLINE_BYTES) == (compressed != "inline")
    limit = 4 * 1024 * 1024
    budget = _RecordingBudget(limit)
    async with _app(tmp_path / "c.db", budget, max_body_bytes=limit) as (_, client):
        with budget.hold() as other:
            other.take(3 * 1024 * 1024)  # another request's bytes: 1 MiB left, less than the body inflates to
            budget.takes.clear()
            refused = await client.post("/v1/traces", content=body, headers={**PB, "content-encoding": "gzip"})
            assert refused.status_code == 429, refused.content
            assert refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
            assert budget.in_flight == other.held
        received, *inflated = [size for size in budget.takes if size]  # an empty last chunk takes nothing
        assert received == len(body)
        # Taken as inflated, a chunk at a time; the refused chunk was the last one inflated.
        assert inflated and max(inflated) <= _GZIP_OUT_BYTES
        assert sum(inflated[:-1]) <= limit - 3 * 1024 * 1024 - len(body) < sum(inflated)


def test_the_budget_must_hold_at_least_one_request(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="--max-inflight-bytes 1024 is below --max-body-bytes 2048"):
        CollectorConfig(db=tmp_path / "c.db", max_body_bytes=2048, max_inflight_bytes=1024).validate()
    CollectorConfig(db=tmp_path / "c.db", max_body_bytes=2048, max_inflight_bytes=2048).validate()
