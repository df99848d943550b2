"""What the scorer adds to the request path: p50/p99 of a decorated RAG call, with and without it.

Both set-ups, measured in one run in alternating blocks so drift hits both alike:

* baseline: TracerProvider -> BatchSpanProcessor -> a discarding exporter (no scoring);
* scoring:  TracerProvider -> ScoringSpanProcessor(rate 1.0, judge taking 1 s a call) -> the same.

The queue is sized so that every call is really enqueued (the hand-off path, not overflow). The
scoring set-up's worker keeps scoring in the background while the calls are timed. Goal: added p99
<= 100 microseconds.

``--hostile KIND[,KIND...]`` runs the measurement once per kind with the scoring set-up's judge an
``OpenAIJudge`` pointed at a hostile endpoint (tests/ragtrace/judges/hostile_server.py, in its own
process so that its work is not the app's): ``fast`` (not hostile: a short reply at once, for
comparison: any judge that answers fast keeps the worker busy), ``echo-key`` (a 401 quoting the key), ``brace-bomb``
(60,000 unbalanced braces, the JSON search's worst case), ``brace-bomb-200k``, ``giant`` (150 MB,
chunked), ``deep`` (a body nested past the JSON parser), ``drip`` (a byte every 0.05 s); each against
its own baseline measured in the same run.

    python bench/request_path.py [--calls 20000] [--block 500] [--hostile brace-bomb,giant]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import ragtrace
from ragtrace import _capture
from ragtrace.judges import Judge
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.testing import FakeJudge

ROOT = Path(__file__).resolve().parents[1]
IDLE_SECONDS = 3.0

CHUNKS = [f"chunk {i}: " + "lorem ipsum dolor sit amet " * 37 for i in range(5)]  # ~1 KB each


class Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@ragtrace.rag
def answer(query: str) -> str:
    ragtrace.record(chunks=CHUNKS)
    return "The answer, grounded in the chunks."


async def slow_claims(text: str, question: str | None = None) -> list[str]:
    await asyncio.sleep(1.0)  # a judge that takes 1 s a call
    return [text]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextmanager
def hostile_endpoint(kind: str) -> Iterator[str]:
    """The base URL of a hostile endpoint of ``kind`` served by a child process, stopped on exit."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.ragtrace.judges.hostile_server", kind],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        assert child.stdin is not None
        child.stdin.close()  # the child stops when its stdin closes
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def timed(provider: TracerProvider, calls: int, bucket: list[float]) -> None:
    _capture.set_tracer_provider(provider)
    clock = time.perf_counter_ns
    for _ in range(calls):
        start = clock()
        answer("What is the capital of Brazil?")
        bucket.append((clock() - start) / 1000.0)


def measure(judge: Judge, args: argparse.Namespace, label: str) -> None:
    """Time ``args.calls`` calls per set-up in alternating blocks, the scoring set-up judged by ``judge``.

    The alternating baseline shares the process with the scorer's worker, busy the whole run: what
    the worker's own work costs the request path (the GIL it holds) shows in both. So a clean baseline
    is timed first, before any scorer exists, for the request path's cost in absolute terms.
    """
    baseline = TracerProvider()
    baseline.add_span_processor(BatchSpanProcessor(Discard()))
    _capture.set_settings(_capture.CaptureSettings.from_env())
    clean: list[float] = []
    timed(baseline, 500, [])  # warm-up
    timed(baseline, args.calls, clean)
    scoring = TracerProvider()
    processor = ragtrace.ScoringSpanProcessor(
        BatchSpanProcessor(Discard()),
        judge=judge,
        metrics=["faithfulness"],
        sample_rate=1.0,
        queue_size=args.queue_size,
        max_concurrency=8,
        hold_timeout=600,
    )
    scoring.add_span_processor(processor)
    _capture.set_settings(_capture.CaptureSettings.from_env())

    times: dict[str, list[float]] = {"baseline": [], "scoring": []}
    providers = {"baseline": baseline, "scoring": scoring}
    for provider in providers.values():  # warm-up
        _capture.set_tracer_provider(provider)
        for _ in range(500):
            answer("warm-up question")
    clock = time.perf_counter_ns
    done = 0
    while done < args.calls:
        for name, provider in providers.items():
            _capture.set_tracer_provider(provider)
            bucket = times[name]
            for _ in range(args.block):
                start = clock()
                answer("What is the capital of Brazil?")
                bucket.append((clock() - start) / 1000.0)
        done += args.block
    enqueued = processor.pending
    # What the scorer's worker spends on its own, the app idle: the CPU a judge makes the app pay.
    used = time.process_time()
    time.sleep(IDLE_SECONDS)
    idle_share = (time.process_time() - used) / IDLE_SECONDS
    _capture.set_tracer_provider(None)
    processor.shutdown(timeout_millis=100)  # the rest leaves unscored (decision timeout)
    baseline.shutdown()
    scoring.shutdown()

    b50, b99 = percentile(times["baseline"], 0.5), percentile(times["baseline"], 0.99)
    s50, s99 = percentile(times["scoring"], 0.5), percentile(times["scoring"], 0.99)
    print(f"[{label}] calls per set-up: {len(times['baseline'])}; still queued for scoring at the end: {enqueued}")
    c50, c99 = percentile(clean, 0.5), percentile(clean, 0.99)
    print(f"clean baseline (no scorer in the process): p50 {c50:8.1f} us   p99 {c99:8.1f} us")
    bmean, smean = statistics.fmean(times["baseline"]), statistics.fmean(times["scoring"])
    print(f"baseline (no scorer):        p50 {b50:8.1f} us   p99 {b99:8.1f} us   mean {bmean:8.1f} us")
    print(f"scorer, rate 1.0, {label:10s} p50 {s50:8.1f} us   p99 {s99:8.1f} us   mean {smean:8.1f} us")
    print(f"added: p50 {s50 - b50:+.1f} us, p99 {s99 - b99:+.1f} us (goal: p99 <= +100 us)")
    print(f"ratio scorer/baseline: p50 {s50 / b50:.2f}x, p99 {s99 / b99:.2f}x")
    print(f"ratio scorer/clean baseline: p50 {s50 / c50:.2f}x, p99 {s99 / c99:.2f}x")
    print(f"the scorer's CPU with the app idle: {100 * idle_share:.0f}% of a core", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="timed calls per set-up")
    parser.add_argument("--block", type=int, default=500, help="calls per alternating block")
    parser.add_argument("--queue-size", type=int, default=2048, help="the scorer's queue (default: the default)")
    parser.add_argument("--hostile", default="", help="comma-separated hostile judge kinds (see the docstring)")
    args = parser.parse_args()

    if not args.hostile:
        judge = FakeJudge(name="fake:1s", extract_claims=slow_claims, verify=lambda c, k: [["supported"] * len(k)])
        measure(judge, args, "1 s judge:")
        return
    for kind in args.hostile.split(","):
        with hostile_endpoint(kind) as base_url:
            # What an app would run: the judge's defaults but a short timeout (the drip ends there).
            hostile = OpenAIJudge(base_url=base_url, api_key="sk-bench", timeout=2.0, verify="batched", extract="llm")
            measure(hostile, args, kind)


if __name__ == "__main__":
    main()
