"""Hostile input against a real collector: bodies that decode to far more than their wire bytes.

The collector runs as its own process (``ragtrace-collector serve``) so that its memory can be read from /proc:
the assertions are bounds on its peak resident size (``VmHWM``) over what it held before the attack, never
timings. Each attack is sent over real HTTP and gRPC, and a well-behaved export sent after it must be stored.
"""

from __future__ import annotations

import gzip
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import pytest
from ragtrace_collector._grpc import LOGS_SERVICE_NAME, SERVICE_NAME

from tests.collector._ports import free_port
from tests.collector._spans import SpanFactory, grpc_export, otlp_bytes
from tests.collector._stores import count

MAX_BODY = 8 * 1024 * 1024
"""The body limit the collector is started with: every attack is at most this many bytes (after gzip)."""

GROWTH_BOUND = 4 * MAX_BODY
"""Issue 26's goal: the collector's peak resident memory grows by at most four body limits over every attack
below, one after the other and eight at once, whatever the bodies decode to (measured: 27-28 MiB, about 3.4,
on an 8 MiB limit; any one request 16 MiB over HTTP, 25 MiB over gRPC)."""

PB = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    size, varint = len(payload), b""
    while size >= 0x80:
        varint += bytes([size & 0x7F | 0x80])
        size >>= 7
    return bytes([number << 3 | 2]) + varint + bytes([size]) + payload


def _in_one_scope(items: bytes) -> bytes:
    """``items`` (serialised fields of a ScopeSpans or ScopeLogs) inside one resource: a whole export."""
    return _field(1, _field(2, items))


def empty_spans(size: int) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``size`` bytes, nearly all of it empty spans (``\\x12\\x00``)."""
    return _in_one_scope(b"\x12\x00" * ((size - 16) // 2))


def empty_attributes(size: int) -> bytes:
    """One span whose ``size`` bytes are nearly all empty attributes (``\\x4a\\x00``)."""
    span = _field(1, b"\x01" * 16) + _field(2, b"\x02" * 8) + b"\x4a\x00" * ((size - 64) // 2)
    return _in_one_scope(_field(2, span))


def empty_log_records(size: int) -> bytes:
    """An ``ExportLogsServiceRequest`` of ``size`` bytes, nearly all of it empty log records."""
    return _in_one_scope(b"\x12\x00" * ((size - 16) // 2))


def empty_json_spans(size: int) -> bytes:
    """OTLP/JSON whose spans array is ``[{},{},...]``: three bytes a span."""
    head, tail = b'{"resourceSpans":[{"scopeSpans":[{"spans":[', b"{}]}]}]}"
    return head + b"{}," * ((size - len(head) - len(tail)) // 3) + tail


@dataclass
class Served:
    """A collector process and where it listens."""

    process: subprocess.Popen[bytes]
    http: str
    grpc_port: int
    db: Path

    def memory(self) -> tuple[int, int]:
        """(resident bytes now, peak resident bytes so far) of the collector and its decode processes together."""
        now = peak = 0
        for pid in [self.process.pid, *_children(self.process.pid)]:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except FileNotFoundError:
                continue  # a process that ended meanwhile
            now += _kib(status, "VmRSS") * 1024
            peak += _kib(status, "VmHWM") * 1024
        return now, peak


def _kib(status: str, key: str) -> int:
    match = re.search(rf"^{key}:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1))


def _children(pid: int) -> list[int]:
    """The collector's child processes (decode processes, multiprocessing's resource tracker)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = task / "children"
        if children.exists():
            found += [int(child) for child in children.read_text().split()]
    return found


def _decode_processes(pid: int) -> list[int]:
    """The collector's decode processes (spawned pool workers, not the resource tracker)."""
    found = []
    for child in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except FileNotFoundError:
            continue
    return found


@contextmanager
def serve(tmp_path: Path, *options: str) -> Iterator[Served]:
    """``ragtrace-collector serve`` on 127.0.0.1 with the ``MAX_BODY`` limit and the default ratio of in-flight
    budget to body limit (three); stopped (SIGTERM) on leaving."""
    db = tmp_path / "c.db"
    grpc_port = free_port()
    argv = [sys.executable, "-m", "ragtrace_collector", "serve", "--db", str(db), "--port", "0",
            "--grpc-port", str(grpc_port), "--no-score", "--max-body-bytes", str(MAX_BODY),
            "--max-inflight-bytes", str(3 * MAX_BODY), "--log-level", "WARNING", *options]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr, subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().decode()  # printed once both receivers listen
            match = re.fullmatch(r"ragtrace collector: page at (http://127\.0\.0\.1:\d+)/\n", line)
            assert match, (line, log.read_text())
            yield Served(process, match.group(1), grpc_port, db)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
    assert "Traceback" not in log.read_text()


def _good_export(query: str) -> bytes:
    factory = SpanFactory()
    factory.rag(query=query, answer="Brasilia.")
    return otlp_bytes(factory.all())


def _post(served: Served, path: str, body: bytes, headers: dict[str, str]) -> int:
    return httpx.post(f"{served.http}{path}", content=body, headers=headers, timeout=120).status_code


@pytest.mark.slow
@pytest.mark.parametrize("decode_processes", ["0", "1"])
def test_bodies_that_decode_to_far_more_than_their_bytes_are_refused_before_they_take_memory(
    tmp_path: Path, decode_processes: str
) -> None:
    with serve(tmp_path, "--decode-processes", decode_processes) as served:
        assert _post(served, "/v1/traces", _good_export("before"), PB) == 200
        before, _ = served.memory()

        attacks = [
            ("/v1/traces", empty_spans(MAX_BODY), PB),
            ("/v1/traces", empty_attributes(MAX_BODY), PB),
            ("/v1/traces", empty_json_spans(MAX_BODY), JSON),
            ("/v1/logs", empty_log_records(MAX_BODY), PB),
            ("/v1/metrics", empty_spans(MAX_BODY), PB),  # read as metrics: empty Metric messages
            ("/v1/traces", gzip.compress(empty_spans(MAX_BODY)), {**PB, "content-encoding": "gzip"}),
        ]
        for path, body, headers in attacks:
            assert _post(served, path, body, headers) == 413, (path, headers)
            assert served.memory()[1] - before <= GROWTH_BOUND, (path, headers)
        with pytest.raises(grpc.RpcError) as refused:
            grpc_export(served.grpc_port, SERVICE_NAME, empty_spans(MAX_BODY), timeout=120)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.RpcError) as refused:
            grpc_export(served.grpc_port, LOGS_SERVICE_NAME, empty_log_records(MAX_BODY), timeout=120)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED

        # Eight at once, over HTTP: each refused alone, all together within the same bound.
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: _post(served, "/v1/traces", empty_spans(MAX_BODY), PB), range(8)))
        assert set(statuses) <= {413, 429}, statuses

        assert _post(served, "/v1/traces", _good_export("after"), PB) == 200
        _, peak = served.memory()
        growth = peak - before
        print(f"decode processes {decode_processes}: peak RSS growth {growth / 2**20:.0f} MiB "
              f"for a {MAX_BODY / 2**20:.0f} MiB body limit")  # fmt: skip
        assert growth <= GROWTH_BOUND, f"RSS grew by {growth / 2**20:.0f} MiB, over {GROWTH_BOUND / 2**20:.0f} MiB"
    assert count(served.db, "rag_records") == 2


def test_a_large_real_export_within_the_bound_is_stored(tmp_path: Path) -> None:
    """The bound refuses what decodes to too much, not large exports: a real one of 1 MiB is stored."""
    factory = SpanFactory()
    for number in range(600):
        factory.rag(query=f"question {number} " * 20, answer="an answer " * 100)
    body = otlp_bytes(factory.all())
    assert len(body) > 1024 * 1024
    with serve(tmp_path, "--decode-processes", "0") as served:
        assert _post(served, "/v1/traces", body, PB) == 200
    assert count(served.db, "rag_records") == 600


@pytest.mark.slow
def test_a_dead_decode_process_is_started_again_and_decoding_stays_out_of_the_collector(tmp_path: Path) -> None:
    with serve(tmp_path, "--decode-processes", "1") as served:
        assert _post(served, "/v1/traces", _good_export("first"), PB) == 200
        workers = _decode_processes(served.process.pid)
        assert workers
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        assert _post(served, "/v1/traces", _good_export("second"), PB) == 200
        assert _post(served, "/v1/traces", _good_export("third"), PB) == 200
        replaced = _decode_processes(served.process.pid)
        assert replaced and not set(replaced) & set(workers)
    assert count(served.db, "rag_records") == 3


def test_the_decoded_size_walk_never_fails_on_broken_bytes_and_counts_every_span() -> None:
    """The walk runs on every body before it is decoded: whatever the bytes, it returns an estimate (at least
    what the bytes themselves cost) and raises nothing; a body of empty spans is counted span by span."""
    import random

    from ragtrace_collector._otlp._cost import BYTE_COST, SPAN_COST, protobuf_cost

    real = _good_export("walked")
    rng = random.Random(26)
    for _ in range(500):
        broken = bytearray(real)
        for _ in range(rng.randrange(1, 20)):
            broken[rng.randrange(len(broken))] = rng.randrange(256)
        cut = bytes(broken[: rng.randrange(1, len(broken) + 1)])
        for export in ("traces", "logs", "metrics"):
            assert protobuf_cost(cut, export=export) >= BYTE_COST * len(cut)
    spans = 1000
    assert protobuf_cost(_in_one_scope(b"\x12\x00" * spans)) >= spans * SPAN_COST
    # A tag written too long (protobuf accepts it) is a span all the same.
    assert protobuf_cost(_in_one_scope(b"\x92\x00\x00" * spans)) >= spans * SPAN_COST


def test_the_quick_bound_is_never_below_the_walk_and_stays_close_on_real_exports() -> None:
    """Receivers hold the quick bound instead of walking when it fits: it must bound the walk's estimate from
    above for any bytes (broken, cut, hostile shapes, overlong tags), or the memory bound would no longer hold;
    on a real export (here newline-heavy text, the worst case of real text) it stays within 2.5 times the walk's
    (measured 1.9; 1.4 on bench/ingest.py's batches)."""
    import random

    from ragtrace_collector._otlp._cost import protobuf_bound, protobuf_cost

    factory = SpanFactory()
    for number in range(50):
        factory.rag(query=f"question {number}: what is 2+2?\n" * 5, answer="an answer\n" * 20)
    real = otlp_bytes(factory.all())
    hostile = [
        empty_spans(64 * 1024),
        empty_attributes(64 * 1024),
        empty_log_records(64 * 1024),
        _in_one_scope(b"\x92\x00\x00" * 1000),
        _in_one_scope(_field(2, b"\xca\x00\x00" * 1000)),  # overlong attribute tags in one span
        _field(1, _field(2, _field(2, _field(9, _field(2, _field(5, _field(1, b"" * 50))))))),
    ]
    rng = random.Random(25)
    for _ in range(300):
        broken = bytearray(real)
        for _ in range(rng.randrange(1, 20)):
            broken[rng.randrange(len(broken))] = rng.randrange(256)
        hostile.append(bytes(broken[: rng.randrange(1, len(broken) + 1)]))
    hostile.append(bytes(rng.randrange(256) for _ in range(100_000)))
    for body in [real, *hostile]:
        for export in ("traces", "logs", "metrics"):
            assert protobuf_bound(body, export=export) >= protobuf_cost(body, export=export), (export, body[:40])
    assert protobuf_bound(real) <= 2.5 * protobuf_cost(real)
