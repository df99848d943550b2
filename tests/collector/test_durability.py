"""kill -9 mid-load loses nothing that was acknowledged, on either engine: the collector replies 200 only after
the commit."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading

import httpx
import pytest
from ragtrace_collector._store import is_postgres

from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes
from tests.collector._stores import rows, store_args

_LISTENING = re.compile(r"OTLP/HTTP on 127\.0\.0\.1:(\d+)")


def _start(target: str) -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragtrace_collector",
            "serve",
            *store_args(target),
            "--port",
            "0",
            "--grpc-port",
            "-1",
            "--no-score",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = _LISTENING.search(line)
        if found:
            # Keep draining stderr so a chatty collector never blocks on a full pipe.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, int(found.group(1))
    raise AssertionError(f"the collector did not start (exit {process.wait()})")


@pytest.mark.slow
def test_kill_9_mid_load_loses_nothing_acknowledged(store_target: str) -> None:
    process, port = _start(store_target)
    url = f"http://127.0.0.1:{port}/v1/traces"
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def sender(seed: int) -> None:
        with httpx.Client(timeout=10) as client:
            for round_ in range(1000):
                factory = SpanFactory(service=f"svc{seed}")
                spans = [factory.rag(query=f"{seed}-{round_}-{i}", chunks=["x" * 1000] * 5) for i in range(50)]
                body = otlp_bytes(factory.all())
                try:
                    reply = client.post(url, content=body, headers={"content-type": "application/x-protobuf"})
                except httpx.HTTPError:
                    return  # the collector is gone
                if reply.status_code == 200:
                    with lock:
                        acknowledged.extend(hex_span_id(s) for s in spans)
                        if len(acknowledged) >= 1000:
                            enough.set()

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    try:
        assert enough.wait(120), "the load never got going"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert process.stderr is not None
        process.stderr.close()
        for thread in threads:
            thread.join(60)
    assert process.returncode == -signal.SIGKILL

    with lock:
        expected = set(acknowledged)
    if not is_postgres(store_target):
        with sqlite3.connect(store_target) as conn:  # opening recovers from the WAL
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = {span_id for (span_id,) in rows(store_target, "SELECT span_id FROM rag_records")}
    assert expected, "nothing was acknowledged"
    missing = expected - stored
    assert not missing, f"{len(missing)} acknowledged span(s) lost"
