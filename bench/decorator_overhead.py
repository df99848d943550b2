"""Per-call overhead of the ragtrace decorators, as a ratio to the same spans written by hand.

One RAG call (a query, a retriever returning 5 chunks of 1 KB, an answer) is timed four ways in one
run, all with the OpenTelemetry SDK and an in-memory exporter (SimpleSpanProcessor):

  (u) the functions undecorated;
  (b) the same two spans and attributes written by hand with the bare OTel API (the baseline);
  (d) the functions decorated with ``@ragtrace.rag`` and ``@ragtrace.retrieve``;
  (n) decorated, with no SDK (a no-op provider): what an app pays when tracing is off.

It prints the per-call time of each, the overhead over (u), and the ratio (d)/(b) (goal: <= 1.3).
The variants are interleaved round by round and the best round of each is kept, so a noisy
neighbour slows all variants alike rather than one.

The ratio is printed twice: with the garbage collector running, as in an app, and paused while
timing, as ``timeit`` does. The first moves with how many objects the process happens to hold (which
modules it imported moved it by as much as 0.06 here, the baseline more than ragtrace); the second is
the code's own cost and is the steadier figure.

Langfuse's ``@observe`` is timed side by side, against the same hand-written baseline, when
langfuse is importable or a throwaway venv exists at ``bench/.venv-langfuse`` (set it up with
``python -m venv bench/.venv-langfuse && bench/.venv-langfuse/bin/pip install langfuse``); the
run there happens in a subprocess. traceloop-sdk is skipped with the reason printed.

Usage: ``.venv/bin/python bench/decorator_overhead.py [--calls 2000] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parent.parent
LANGFUSE_VENV = ROOT / "bench" / ".venv-langfuse"
TRACELOOP_SKIP = (
    "skipped: `pip install traceloop-sdk` did not finish within 400 s in a throwaway venv here "
    "(it pulls some forty instrumentation packages); it is not timed"
)


def _load_semconv() -> ModuleType:
    # Loaded by path so the langfuse subprocess (a venv without ragtrace) uses the same wire names: the
    # package's vocabularies (ragtrace/semconv/_*.py import nothing of ragtrace), merged into one module.
    merged = ModuleType("_bench_semconv")
    for path in sorted((ROOT / "ragtrace" / "semconv").glob("_*.py")):
        spec = importlib.util.spec_from_file_location(f"_bench_semconv{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        merged.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return merged


sc = _load_semconv()
QUERY = "How do I rotate the API keys of a service account?"
CHUNKS = [{"id": f"doc-{i}", "score": 0.9 - i / 10, "text": f"{i} " + "lorem ipsum " * 85} for i in range(5)]
ANSWER = "Open the console, pick the account, choose Keys, then Rotate. " * 3


def sdk() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=1000))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


# --------------------------------------------------------------------------------------------------
# (u) undecorated and (b) hand-written
# --------------------------------------------------------------------------------------------------


def search_plain(query: str) -> list[dict[str, Any]]:
    return CHUNKS


def answer_plain(query: str) -> str:
    search_plain(query)
    return ANSWER


def documents(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, chunk in enumerate(chunks):
        attributes[sc.retrieval_document(i, sc.DOCUMENT_ID)] = chunk["id"]
        attributes[sc.retrieval_document(i, sc.DOCUMENT_SCORE)] = chunk["score"]
        attributes[sc.retrieval_document(i, sc.DOCUMENT_CONTENT)] = chunk["text"]
    return attributes


def handwritten(tracer: trace.Tracer) -> Callable[[str], str]:
    """The same spans and attributes as the decorators, written with the bare OTel API."""

    def search(query: str) -> list[dict[str, Any]]:
        with tracer.start_as_current_span(
            "search",
            attributes={
                sc.RAGTRACE_ROLE: sc.ROLE_RETRIEVE,
                sc.OPENINFERENCE_SPAN_KIND: sc.SPAN_KIND_RETRIEVER,
                sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OPERATION_RETRIEVAL,
            },
        ) as span:
            chunks = search_plain(query)
            attributes = documents(chunks)
            attributes[sc.GEN_AI_RETRIEVAL_DOCUMENTS] = json.dumps(
                [{sc.RETRIEVAL_DOCUMENT_JSON_ID: c["id"], sc.RETRIEVAL_DOCUMENT_JSON_SCORE: c["score"]} for c in chunks]
            )
            attributes[sc.RAGTRACE_CHUNK_COUNT] = len(chunks)
            attributes[sc.INPUT_VALUE] = query
            attributes[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] = query
            attributes[sc.RAGTRACE_CONTENT_CAPTURED] = True
            attributes[sc.RAGTRACE_CONTENT_TRUNCATED] = False
            span.set_attributes(attributes)
            return chunks

    def answer(query: str) -> str:
        with tracer.start_as_current_span(
            "answer", attributes={sc.RAGTRACE_ROLE: sc.ROLE_RAG, sc.OPENINFERENCE_SPAN_KIND: sc.SPAN_KIND_CHAIN}
        ) as span:
            chunks = search(query)
            result = ANSWER
            attributes = documents(chunks)
            attributes[sc.RAGTRACE_CHUNK_COUNT] = len(chunks)
            attributes[sc.INPUT_VALUE] = query
            attributes[sc.OUTPUT_VALUE] = result
            attributes[sc.RAGTRACE_CONTENT_CAPTURED] = True
            attributes[sc.RAGTRACE_CONTENT_TRUNCATED] = False
            span.set_attributes(attributes)
            return result

    return answer


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------


def best_per_call(
    variants: dict[str, Callable[[str], Any]],
    calls: int,
    rounds: int,
    clear: Callable[[], None],
    *,
    pause_gc: bool = False,
) -> dict[str, float]:
    """Seconds per call of each variant: best of ``rounds`` rounds, variants interleaved each round;
    with ``pause_gc`` the garbage collector is off while a round is timed."""
    best = dict.fromkeys(variants, float("inf"))
    for fn in variants.values():  # warm-up
        for _ in range(50):
            fn(QUERY)
        clear()
    for _ in range(rounds):
        for name, fn in variants.items():
            if pause_gc:
                gc.disable()
            start = time.perf_counter()
            for _ in range(calls):
                fn(QUERY)
            elapsed = (time.perf_counter() - start) / calls
            gc.enable()
            best[name] = min(best[name], elapsed)
            clear()
    return best


def langfuse_mode(calls: int, rounds: int) -> None:
    """Run inside a venv with langfuse: print JSON timings of (b) and langfuse's @observe."""
    from langfuse import Langfuse, observe

    provider, exporter = sdk()
    # span_exporter: Langfuse's own processor exports into memory too, never to the network.
    Langfuse(
        public_key="pk-bench",
        secret_key="sk-bench",
        base_url="http://127.0.0.1:9",
        tracer_provider=provider,
        span_exporter=InMemorySpanExporter(),
    )

    @observe(as_type="retriever", name="search")
    def search(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @observe(name="answer")
    def answer(query: str) -> str:
        search(query)
        return ANSWER

    timings = best_per_call(
        {"handwritten": handwritten(provider.get_tracer("bench")), "langfuse": answer},
        calls,
        rounds,
        exporter.clear,
    )
    print(json.dumps(timings))


def run_langfuse(calls: int, rounds: int) -> str:
    if importlib.util.find_spec("langfuse") is not None:
        python = sys.executable
    elif (LANGFUSE_VENV / "bin" / "python").exists():
        python = str(LANGFUSE_VENV / "bin" / "python")
    else:
        return f"skipped: not installed here and no throwaway venv at {LANGFUSE_VENV} (see this file's docstring)"
    done = subprocess.run(
        [python, __file__, "--langfuse", "--calls", str(calls), "--rounds", str(rounds)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        return f"skipped: the langfuse run failed: {done.stderr.strip().splitlines()[-1:]}"
    timings = json.loads(done.stdout.strip().splitlines()[-1])
    base, lf = timings["handwritten"], timings["langfuse"]
    return f"{lf * 1e6:8.1f} us/call   ratio to its own hand-written baseline ({base * 1e6:.1f} us): {lf / base:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="calls per round (default 2000)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the best is kept (default 7)")
    parser.add_argument("--langfuse", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.langfuse:
        langfuse_mode(args.calls, args.rounds)
        return

    import ragtrace

    provider, exporter = sdk()

    @ragtrace.retrieve(tracer_provider=provider)
    def search(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.rag(tracer_provider=provider)
    def answer(query: str) -> str:
        search(query)
        return ANSWER

    noop = trace.NoOpTracerProvider()

    @ragtrace.retrieve(tracer_provider=noop)
    def search_off(query: str) -> list[dict[str, Any]]:
        return CHUNKS

    @ragtrace.rag(tracer_provider=noop)
    def answer_off(query: str) -> str:
        search_off(query)
        return ANSWER

    # The decorated call must produce what the hand-written one does, or the comparison means nothing.
    answer(QUERY)
    handwritten(provider.get_tracer("bench"))(QUERY)
    ours, theirs = exporter.get_finished_spans()[:2], exporter.get_finished_spans()[2:]
    assert [set(s.attributes or {}) for s in ours] == [set(s.attributes or {}) for s in theirs], "attributes differ"
    exporter.clear()

    timings = best_per_call(
        {
            "undecorated": answer_plain,
            "handwritten": handwritten(provider.get_tracer("bench")),
            "ragtrace": answer,
            "ragtrace, no SDK": answer_off,
        },
        args.calls,
        args.rounds,
        exporter.clear,
    )
    plain = timings["undecorated"]
    print(f"one RAG call (query, 5 chunks of 1 KB, answer; 2 spans), best of {args.rounds} x {args.calls} calls")
    for name, seconds in timings.items():
        print(
            f"  {name:<18} {seconds * 1e6:8.2f} us/call   overhead over undecorated {(seconds - plain) * 1e6:8.2f} us"
        )
    ratio = timings["ragtrace"] / timings["handwritten"]
    print(f"ratio ragtrace / hand-written OTel spans: {ratio:.2f}  (goal <= 1.3)")
    paused = best_per_call(
        {"handwritten": handwritten(provider.get_tracer("bench")), "ragtrace": answer},
        args.calls,
        args.rounds,
        exporter.clear,
        pause_gc=True,
    )
    print(
        f"  with the garbage collector paused while timing: {paused['ragtrace'] * 1e6:.2f} us against "
        f"{paused['handwritten'] * 1e6:.2f} us, ratio {paused['ragtrace'] / paused['handwritten']:.2f}"
    )
    print(f"langfuse @observe: {run_langfuse(args.calls, args.rounds)}")
    print(f"traceloop-sdk:     {TRACELOOP_SKIP}")


if __name__ == "__main__":
    main()
