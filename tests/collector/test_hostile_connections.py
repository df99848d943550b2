"""Hostile connections against a real collector on 127.0.0.1: idle sockets, a slowloris, one client opening many.

Real sockets, a real served collector; the head deadline is shortened so that the test waits seconds, not ten.
Nothing here asserts a duration: the attackers' sockets are waited on (with a generous deadline) until the
collector closes them, and a well-behaved client must get its 200s and have its spans stored meanwhile.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ragtrace_collector import _grpc
from ragtrace_collector._grpc import SERVICE_NAME
from ragtrace_collector._http import _body, _connections
from ragtrace_collector._server import Collector

from tests.collector._spans import SpanFactory, grpc_export, otlp_bytes, start_collector
from tests.collector._stores import count

PB = {"content-type": "application/x-protobuf"}
IDLE = 257
"""One more than the connections uvicorn's ``limit_concurrency=256`` allowed before it answered 503 to all."""

_CLOSE_DEADLINE = 60.0
"""How long an attacker's socket is waited on to be closed: a safety bound for a loaded machine, not a timing."""


def _export(query: str) -> bytes:
    factory = SpanFactory()
    factory.rag(query=query, answer="Brasilia.")
    return otlp_bytes(factory.all())


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the collector closes ``sock`` within ``_CLOSE_DEADLINE`` (it reads EOF or a reset)."""
    sock.settimeout(_CLOSE_DEADLINE)
    try:
        while sock.recv(4096):
            pass  # a reply (e.g. a 408) before the close is fine
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def _well_behaved(collector: Collector, number: int) -> None:
    """A client that sends whole requests: /healthz and an export, each on a connection of its own."""
    base = f"http://127.0.0.1:{collector.http_port}"
    assert httpx.get(f"{base}/healthz", timeout=30).status_code == 200
    reply = httpx.post(f"{base}/v1/traces", content=_export(f"good {number}"), headers=PB, timeout=30)
    assert reply.status_code == 200


class _Slowloris(threading.Thread):
    """Sends a request head one byte at a time, a byte every 0.2 s, until the collector closes the connection."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.closed = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 100_000
        try:
            for byte in head:
                self.sock.sendall(bytes([byte]))
                if self.stop.wait(0.2):  # the attack's own pace; the test never waits on it to pass
                    return
        except OSError:
            self.closed.set()


@pytest.fixture
def collector(store_target: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    monkeypatch.setattr(_connections, "HEAD_TIMEOUT_SECONDS", 2.0)
    running = start_collector(store_target)
    try:
        yield running
    finally:
        running.stop()


def _open(port: int, number: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(number)]


def test_idle_connections_and_a_slowloris_do_not_keep_a_well_behaved_client_out(
    collector: Collector, store_target: str
) -> None:
    assert collector.http_port is not None
    idle = _open(collector.http_port, IDLE)
    partial = _open(collector.http_port, 20)
    for sock in partial:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: applic")
    slowloris = _Slowloris(collector.http_port)
    slowloris.start()
    try:
        for number in range(3):
            _well_behaved(collector, number)
        assert all(_closed_by_peer(sock) for sock in idle + partial)
        _well_behaved(collector, 3)
        # The slowloris's head is never complete: its connection is closed too, while it still sends.
        deadline = time.monotonic() + _CLOSE_DEADLINE
        while not slowloris.closed.is_set() and time.monotonic() < deadline:
            slowloris.closed.wait(0.5)
        assert slowloris.closed.is_set()
    finally:
        slowloris.stop.set()
        for sock in [*idle, *partial, slowloris.sock]:
            sock.close()
    assert count(store_target, "rag_records") == 4


@pytest.mark.slow
def test_a_body_sent_a_byte_at_a_time_is_cut_off_with_a_408(store_target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_body, "BODY_GRACE_SECONDS", 2.0)
    running = start_collector(store_target)
    assert running.http_port is not None
    dripping = [socket.create_connection(("127.0.0.1", running.http_port)) for _ in range(20)]
    try:
        head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        for sock in dripping:
            sock.sendall(head + b"Content-Length: 100000\r\n\r\n" + b"\x0a")  # a head, then one byte
        _well_behaved(running, 0)
        for sock in dripping:
            sock.settimeout(_CLOSE_DEADLINE)
            reply = b""
            while chunk := sock.recv(4096):  # the reply, then the close
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 408 "), reply[:100]
        _well_behaved(running, 1)
    finally:
        for sock in dripping:
            sock.close()
        running.stop()
    assert count(store_target, "rag_records") == 2


def test_one_client_opening_too_many_connections_loses_its_idle_ones_not_its_new_one(
    collector: Collector, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    collector.stop()
    monkeypatch.setattr(_connections, "HEAD_TIMEOUT_SECONDS", 600.0)  # only the limit closes them here
    monkeypatch.setattr(_connections, "PER_CLIENT_CONNECTIONS", 20)
    limited = start_collector(tmp_path / "limited.db")
    try:
        assert limited.http_port is not None
        idle = _open(limited.http_port, 30)
        try:
            _well_behaved(limited, 0)
            # The ten past the limit each closed one of the oldest, and the well-behaved client's first
            # connection one more (its second found room: the first had closed).
            assert all(_closed_by_peer(sock) for sock in idle[:11])
        finally:
            for sock in idle:
                sock.close()
    finally:
        limited.stop()
    assert count(tmp_path / "limited.db", "rag_records") == 1


def test_idle_connections_do_not_keep_a_client_off_the_grpc_port(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shortened = tuple(
        (name, 1000 if name == "grpc.server_handshake_timeout_ms" else value)
        for name, value in _grpc.CONNECTION_OPTIONS
    )
    monkeypatch.setattr(_grpc, "CONNECTION_OPTIONS", shortened)
    running = start_collector(store_target)
    try:
        assert running.grpc_port is not None
        attackers = _open(running.grpc_port, IDLE + 20)
        try:
            for sock in attackers[IDLE:]:
                sock.sendall(b"PRI * HTTP/2.0\r\n")  # the start of the HTTP/2 preface, never finished
            grpc_export(running.grpc_port, SERVICE_NAME, _export("over grpc"), timeout=30)
            # Connections that never finish the HTTP/2 handshake are closed.
            assert all(_closed_by_peer(sock) for sock in attackers)
            grpc_export(running.grpc_port, SERVICE_NAME, _export("over grpc, after"), timeout=30)
        finally:
            for sock in attackers:
                sock.close()
    finally:
        running.stop()
    assert count(store_target, "rag_records") == 2
