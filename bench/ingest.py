"""Ingest benchmark: spans per second *stored*, ragtrace-collector side by side with Arize Phoenix.

Workload (the same for both, in the same run): OTLP/HTTP protobuf batches of 512 RAG spans, each with 5
chunks of 1 KB, a query, an answer and scores (flat attributes and ``gen_ai.evaluation.result`` events),
sent by 4 concurrent senders. Every batch has fresh trace and span ids.

* ragtrace-collector runs as its own process (``ragtrace-collector serve --no-score``); it replies only
  after the commit, so the clock stops at the last reply, and the stored row count is checked.
* Phoenix runs as its own process (``phoenix serve``, installed by this script into ``bench/.venv-phoenix``
  when missing); it replies before it writes, so the clock stops when its database holds every span.

Prints both figures and the ratio. If Phoenix does not install or start, says why and prints ragtrace's
figure alone.

``--estimates off,shipped,walk`` measures what the decoded-size estimate (issue 26) costs instead, each
ragtrace run in the same invocation, rounds interleaved, ratios against ``off``: ``off`` holds no estimate (the
collector before the bound), ``walk`` always walks the protobuf exactly (the first version of the bound),
``shipped`` is the collector as it is (the quick bound, the walk only when that does not fit).

    .venv/bin/python bench/ingest.py [--batches 48] [--senders 4] [--skip-phoenix] [--estimates off,shipped]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from tests.collector._spans import SpanFactory, otlp_bytes  # noqa: E402

SPANS_PER_BATCH = 512
CHUNKS = 5
CHUNK_BYTES = 1024
PHOENIX_VENV = ROOT / "bench" / ".venv-phoenix"
_LISTENING = re.compile(r"OTLP/HTTP on 127\.0\.0\.1:(\d+)")


# --------------------------------------------------------------------------------------------------
# Workload
# --------------------------------------------------------------------------------------------------


def _template() -> ExportTraceServiceRequest:
    factory = SpanFactory(service="bench")
    for i in range(SPANS_PER_BATCH):
        factory.rag(
            query=f"What does clause {i} of the contract say about renewals?",
            chunks=[
                (f"chunk {j} of record {i}: " + "lorem ipsum dolor sit amet " * 60)[:CHUNK_BYTES] for j in range(CHUNKS)
            ],
            answer=f"Clause {i} renews automatically every year unless cancelled in writing.",
            scores={"faithfulness": 0.9, "hallucination": 0.1, "context_relevance": 0.7, "answer_relevancy": 0.8},
            decision="evaluated",
            route="/ask",
        )
    spans = [s for s in factory.all() if s.name == "answer"]  # the RAG spans only: 512 per batch
    return ExportTraceServiceRequest.FromString(otlp_bytes(spans))


def otlp_bodies(count: int) -> list[bytes]:
    """``count`` bodies with fresh ids (same content): no batch overwrites another's rows."""
    template = _template()
    bodies = []
    for _ in range(count):
        request = ExportTraceServiceRequest()
        request.CopyFrom(template)
        for span in request.resource_spans[0].scope_spans[0].spans:
            span.trace_id = os.urandom(16)
            span.span_id = os.urandom(8)
        bodies.append(request.SerializeToString())
    return bodies


def _send_all(url: str, bodies: list[bytes], senders: int) -> tuple[float, int, float]:
    """Send from ``senders`` threads; return (start time, spans acknowledged with 2xx, time of the last reply)."""
    queue = list(reversed(bodies))
    lock = threading.Lock()
    acked = [0]
    failures: list[str] = []

    def sender() -> None:
        with httpx.Client(timeout=120) as client:
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                reply = client.post(url, content=body, headers={"content-type": "application/x-protobuf"})
                with lock:
                    if reply.status_code < 300:
                        acked[0] += SPANS_PER_BATCH
                    else:
                        failures.append(f"{reply.status_code} {reply.text[:200]}")

    threads = [threading.Thread(target=sender) for _ in range(senders)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ended = time.perf_counter()
    if failures:
        print(f"  {len(failures)} batch(es) failed, first: {failures[0]}")
    return started, acked[0], ended


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(url: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited with status {process.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"not answering on {url} after {timeout:.0f} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --------------------------------------------------------------------------------------------------
# ragtrace-collector
# --------------------------------------------------------------------------------------------------


# How each --estimates mode starts the collector: the module, with the estimate replaced before it serves.
_ESTIMATES = {
    "shipped": "",
    "walk": (
        "import ragtrace_collector._decoded as d; exact = d.decoded_cost; "
        "d.decoded_cost = lambda body, **kw: exact(body, **{**kw, 'quick': False})"
    ),
    "off": (
        "import ragtrace_collector._http._app as a\nasync def none(hold, body, **kw): return 0\na.hold_decoded = none"
    ),
}


def run_ragtrace(
    workdir: Path, warmup: list[bytes], bodies: list[bytes], senders: int, estimate: str = "shipped"
) -> float:
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "ragtrace.db"
    launch = f"{_ESTIMATES[estimate]}\nimport runpy; runpy.run_module('ragtrace_collector', run_name='__main__')"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            launch,
            "serve",
            "--db",
            str(db),
            "--port",
            "0",
            "--grpc-port",
            "-1",
            "--no-score",
        ],
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    port = None
    for raw in process.stderr:
        found = _LISTENING.search(raw.decode(errors="replace"))
        if found:
            port = int(found.group(1))
            break
    if port is None:
        raise RuntimeError(f"ragtrace-collector did not start (status {process.wait()})")
    threading.Thread(target=process.stderr.read, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{port}/v1/traces"
        _send_all(url, warmup, 1)
        started, acked, ended = _send_all(url, bodies, senders)
    finally:
        _stop(process)
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT count(*) FROM rag_records").fetchone()[0] - len(warmup) * SPANS_PER_BATCH
    expected = len(bodies) * SPANS_PER_BATCH
    if stored != expected or acked != expected:
        print(f"  ragtrace: acknowledged {acked}, stored {stored}, expected {expected}")
    return stored / (ended - started)


# --------------------------------------------------------------------------------------------------
# Phoenix
# --------------------------------------------------------------------------------------------------


def _phoenix_python() -> Path:
    # A Phoenix venv prepared beside the checkout (same layout) is reused rather than installed again.
    for venv in (PHOENIX_VENV, ROOT / ".venv-phoenix"):
        if (venv / ".installed-stamp").exists() and (venv / "bin" / "phoenix").exists():
            return venv / "bin" / "python"
    python = PHOENIX_VENV / "bin" / "python"
    stamp = PHOENIX_VENV / ".installed-stamp"
    if not stamp.exists():
        print("  installing arize-phoenix into bench/.venv-phoenix (once; takes a few minutes)")
        subprocess.run([sys.executable, "-m", "venv", str(PHOENIX_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "arize-phoenix"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        stamp.touch()
    return python


def _phoenix_count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM spans").fetchone()[0])
    except sqlite3.Error:
        return -1


def run_phoenix(workdir: Path, warmup: list[bytes], bodies: list[bytes], senders: int) -> float:
    python = _phoenix_python()
    port, grpc_port = _free_port(), _free_port()
    home = workdir / "phoenix"
    home.mkdir()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen(
        [str(python), "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_http(f"http://127.0.0.1:{port}/healthz", process, timeout=180)
        db = home / "phoenix.db"
        url = f"http://127.0.0.1:{port}/v1/traces"
        expected_warm = len(warmup) * SPANS_PER_BATCH
        _send_all(url, warmup, 1)
        _wait_until(lambda: _phoenix_count(db) >= expected_warm, 120)
        expected = expected_warm + len(bodies) * SPANS_PER_BATCH
        started, _acked, _ = _send_all(url, bodies, senders)
        if not _wait_until(lambda: _phoenix_count(db) >= expected, 900):
            print(f"  phoenix stored {_phoenix_count(db)} of {expected} spans before the timeout")
        ended = time.perf_counter()
        stored = _phoenix_count(db) - expected_warm
    finally:
        _stop(process)
        log.close()
    return stored / (ended - started)


def _wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _estimate_cpu(body: bytes, repeat: int = 10) -> None:
    """CPU time (process time: less sensitive to a shared machine's load than throughput) of the exact walk,
    the quick bound and decoding itself, on one batch, in this process."""
    from ragtrace_collector._otlp import decode_protobuf
    from ragtrace_collector._otlp._cost import protobuf_bound, protobuf_cost

    def cpu(work: Callable[[], object]) -> float:
        started = time.process_time()
        for _ in range(repeat):
            work()
        return (time.process_time() - started) / repeat * 1000

    walk, bound = cpu(lambda: protobuf_cost(body)), cpu(lambda: protobuf_bound(body))
    decode = cpu(lambda: decode_protobuf(body, 0))
    print(
        f"  CPU per batch: decode {decode:.1f} ms, exact walk {walk:.1f} ms ({walk / decode:.0%} of decode), "
        f"quick bound {bound:.1f} ms ({bound / decode:.0%}); estimates {protobuf_cost(body) / len(body):.2f} and "
        f"{protobuf_bound(body) / len(body):.2f} bytes per wire byte"
    )


def _compare_estimates(
    workdir: Path, modes: list[str], warmup: list[bytes], bodies: list[bytes], senders: int, rounds: int
) -> int:
    """Each mode ``rounds`` times, interleaved (the load of a shared machine drifts); the mean of each and its ratio
    to the first mode."""
    _estimate_cpu(bodies[0])
    figures: dict[str, list[float]] = {mode: [] for mode in modes}
    for number in range(rounds):
        for mode in modes:
            rate = run_ragtrace(workdir / f"{mode}-{number}", warmup, bodies, senders, estimate=mode)
            figures[mode].append(rate)
            print(f"  round {number + 1} {mode:8} {rate:,.0f} spans/s stored")
    base = sum(figures[modes[0]]) / rounds
    for mode in modes:
        mean = sum(figures[mode]) / rounds
        print(f"estimate {mode:8} mean {mean:,.0f} spans/s, {mean / base:.2f}x of {modes[0]}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=48, help="batches of 512 spans per server (default 48)")
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--skip-phoenix", action="store_true")
    parser.add_argument("--estimates", help="compare decoded-size estimates, e.g. off,shipped,walk (no Phoenix)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of --estimates (default 2)")
    args = parser.parse_args()

    print(
        f"ingest: {args.batches} batches x {SPANS_PER_BATCH} RAG spans ({CHUNKS} chunks of {CHUNK_BYTES} B, "
        f"scores), OTLP/HTTP protobuf, {args.senders} senders, {os.cpu_count()} cores"
    )
    warmup = otlp_bodies(2)
    bodies = otlp_bodies(args.batches)
    print(f"  batch size {len(bodies[0]) / 1e6:.2f} MB")
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-ingest-"))
    if args.estimates:
        try:
            return _compare_estimates(workdir, args.estimates.split(","), warmup, bodies, args.senders, args.rounds)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        first = run_ragtrace(workdir / "1", warmup, bodies, args.senders)
        print(f"ragtrace-collector: {first:,.0f} spans/s stored")
        if args.skip_phoenix:
            return 0
        try:
            theirs = run_phoenix(workdir, otlp_bodies(2), otlp_bodies(args.batches), args.senders)
        except Exception as exc:
            print(f"phoenix: not measured ({type(exc).__name__}: {exc})")
            log = workdir / "phoenix.log"
            if log.exists():
                print("  last lines of its log:")
                for line in log.read_text(errors="replace").splitlines()[-15:]:
                    print(f"    {line}")
            return 0
        print(f"phoenix:            {theirs:,.0f} spans/s stored")
        # ragtrace again after Phoenix: on a shared machine the load drifts; the ratio uses the mean of both.
        second = run_ragtrace(workdir / "2", otlp_bodies(2), otlp_bodies(args.batches), args.senders)
        ours = (first + second) / 2
        print(f"ragtrace-collector: {second:,.0f} spans/s stored (second run; mean {ours:,.0f})")
        print(f"ratio ragtrace/phoenix: {ours / theirs:.1f}x")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
