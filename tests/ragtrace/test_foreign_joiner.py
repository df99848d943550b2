"""The joiner's rules, on spans written with the OTel API as OpenInference writes them: which span is the RAG
root, what its record holds, that every span leaves once, and that per-trace state stays bounded."""

from __future__ import annotations

import json
import os
import signal
import threading
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, Tracer

import ragtrace
from ragtrace import _capture, semconv
from ragtrace._foreign import VARIABLES, JoinSettings
from ragtrace.environment_variables import ConfigurationError
from ragtrace.scoring.processor import ScoringSpanProcessor
from tests.ragtrace.foreign_rig import NoJudge, Pipeline, Seen, decision, pipeline, shut, texts

CHAIN = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN}


@pytest.fixture
def p() -> Iterator[Pipeline]:
    yield from shut(pipeline())


def retrieve(tracer: Tracer, *texts_: str, query: str = "q", name: str = "retrieve") -> None:
    attributes: dict[str, str] = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
        semconv.INPUT_VALUE: query,
    }
    for i, text in enumerate(texts_):
        attributes[semconv.retrieval_document(i, semconv.DOCUMENT_CONTENT)] = text
    with tracer.start_as_current_span(name, attributes=attributes):
        pass


def chain(tracer: Tracer, name: str, query: str = "q", answer: str = "a") -> trace.Span:
    span = tracer.start_span(name, attributes={**CHAIN, semconv.INPUT_VALUE: query})
    span.set_attribute(semconv.OUTPUT_VALUE, answer)
    return span


def test_the_topmost_chain_is_the_root_and_the_chains_under_it_leave_untouched(p: Pipeline) -> None:
    tracer = p.provider.get_tracer("t")
    top = chain(tracer, "top", "the question", "the answer")
    with trace.use_span(top, end_on_exit=True):
        inner = chain(tracer, "inner")
        with trace.use_span(inner, end_on_exit=True):
            retrieve(tracer, "one", "two")
        retrieve(tracer, "three")
    (root,) = p.roots()
    assert root.name == "top" and len(p.exported()) == 4
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == ("the question", ["one", "two", "three"], "the answer")


def test_an_outer_retriever_replaces_what_the_retrievers_inside_it_returned(p: Pipeline) -> None:
    tracer = p.provider.get_tracer("t")
    with (
        trace.use_span(chain(tracer, "top"), end_on_exit=True),
        tracer.start_as_current_span(
            "outer",
            attributes={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
                semconv.retrieval_document(0, semconv.DOCUMENT_CONTENT): "merged",
            },
        ),
    ):
        retrieve(tracer, "first")
        retrieve(tracer, "second")
    p.roots()
    (record,) = p.metric.records
    assert texts(record) == ["merged"]


def test_a_chain_under_a_remote_parent_is_a_root(p: Pipeline) -> None:
    tracer = p.provider.get_tracer("t")
    remote = SpanContext(trace_id=7, span_id=9, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with trace.use_span(NonRecordingSpan(remote)), trace.use_span(chain(tracer, "handler"), end_on_exit=True):
        retrieve(tracer, "doc")
    (root,) = p.roots()
    assert root.name == "handler" and root.parent == remote


def test_a_ragtrace_rag_span_inside_a_chain_wins(p: Pipeline) -> None:
    tracer = p.provider.get_tracer("t")

    @ragtrace.rag
    def answer(question: str) -> str:
        retrieve(tracer, "inside")  # a foreign retriever under ragtrace's own RAG span
        return "ragtrace's answer"

    _capture.set_tracer_provider(p.provider)
    try:
        with trace.use_span(chain(tracer, "top"), end_on_exit=True):
            answer("q")
    finally:
        _capture.set_tracer_provider(None)
    (root,) = p.roots()
    assert (root.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG
    assert len(p.exported()) == 3


def test_held_roots_leave_scored_at_a_flush_and_at_shutdown() -> None:
    p = pipeline()
    tracer = p.provider.get_tracer("t")
    for name in ("flushed", "shut"):
        request = tracer.start_span("request")  # never ends before the flush
        with trace.use_span(request), trace.use_span(chain(tracer, name), end_on_exit=True):
            retrieve(tracer, "doc")
        assert p.processor.join_stats is not None and p.processor.join_stats.held == 1
        assert p.exporter.get_finished_spans()[-1].name == "retrieve"  # the chain is held
        if name == "flushed":
            assert [r.name for r in p.roots()] == ["flushed"]
    p.provider.shutdown()
    spans = p.exporter.get_finished_spans()
    assert [s.name for s in spans if decision(s)[0] == semconv.DECISION_EVALUATED] == ["flushed", "shut"]
    assert len(p.metric.records) == 2


class Count(SpanProcessor):
    """A downstream that only counts (holding 10,000 spans would hide what the joiner holds)."""

    def __init__(self) -> None:
        self.ended = 0
        self.decided = 0

    def on_end(self, span: ReadableSpan) -> None:
        self.ended += 1
        self.decided += semconv.EVAL_DECISION in (span.attributes or {})


@pytest.mark.slow
def test_ten_thousand_traces_that_never_end_stay_within_the_bounds_and_are_counted() -> None:
    downstream = Count()
    processor = ScoringSpanProcessor(
        downstream, judge=NoJudge(), metrics=[Seen()], sample_rate=1.0, join_max_traces=100, join_max_bytes=1 << 20
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")

    def open_traces(n: int) -> None:
        for _ in range(n):
            request = tracer.start_span("request")  # never ended: its trace never completes
            with trace.use_span(request):
                retrieve(tracer, "x" * 500)

    open_traces(1_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        open_traces(9_000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    stats = processor.join_stats
    assert stats is not None
    assert stats.traces == 100 and stats.bytes <= 1 << 20 and stats.dropped == 9_900
    assert downstream.ended == 10_000  # every retrieval span left at once, untouched
    assert grown < 2_000_000, f"the joiner grew by {grown} bytes over 9,000 more open traces"
    provider.shutdown()


def test_the_byte_bound_drops_the_oldest_traces() -> None:
    p = pipeline(join_max_bytes=20_000)
    tracer = p.provider.get_tracer("t")
    for _ in range(20):
        with trace.use_span(tracer.start_span("request")):
            retrieve(tracer, "y" * 3_000)
    stats = p.processor.join_stats
    assert stats is not None and stats.bytes <= 20_000 and stats.traces < 20 and stats.dropped == 20 - stats.traces
    p.provider.shutdown()


class Clock:
    """The joiner's clock, moved by the test instead of waiting for time to pass."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_trace_older_than_the_time_bound_is_dropped_and_its_held_root_scored() -> None:
    clock = Clock()
    p = pipeline(join_max_seconds=60.0, join_clock=clock)
    tracer = p.provider.get_tracer("t")
    with trace.use_span(tracer.start_span("request")), trace.use_span(chain(tracer, "old"), end_on_exit=True):
        retrieve(tracer, "doc")
    # Any span that ends lets the joiner look at the oldest trace: within the bound it stays.
    clock.now = 59.0
    with trace.use_span(tracer.start_span("sooner")):
        retrieve(tracer, "doc")
    stats = p.processor.join_stats
    assert stats is not None and stats.dropped == 0 and stats.held == 1  # "old", not yet released
    clock.now = 61.0
    with trace.use_span(tracer.start_span("later")):
        retrieve(tracer, "doc")
    stats = p.processor.join_stats
    assert stats is not None and stats.dropped == 1 and stats.held == 0
    assert [r.name for r in p.roots()] == ["old"]
    p.provider.shutdown()


def test_concurrent_rag_calls_each_leave_once_with_their_own_record(p: Pipeline) -> None:
    tracer = p.provider.get_tracer("t")

    def call(i: int) -> None:
        request = tracer.start_span("request")
        with (
            trace.use_span(request, end_on_exit=True),
            trace.use_span(chain(tracer, f"rag-{i}", f"q{i}", f"a{i}"), end_on_exit=True),
        ):
            retrieve(tracer, f"doc-{i}")

    threads = [threading.Thread(target=lambda k=k: [call(k * 50 + j) for j in range(50)]) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    roots = p.roots()
    assert len(roots) == 400 and len(p.exported()) == 1_200
    assert all(r.parent is not None for r in roots)
    assert sorted((r.query, r.texts[0], r.answer) for r in p.metric.records) == sorted(
        (f"q{i}", f"doc-{i}", f"a{i}") for i in range(400)
    )
    assert p.processor.join_stats is not None and p.processor.join_stats.traces == 0


def test_wrong_arguments_raise_and_wrong_variables_warn(monkeypatch: pytest.MonkeyPatch, warned: object) -> None:
    with pytest.raises(ConfigurationError, match="join_max_traces=0 is invalid"):
        JoinSettings.resolve(max_traces=0)
    with pytest.raises(ConfigurationError, match="recognize='yes' is not a bool"):
        JoinSettings.resolve(recognize="yes")  # type: ignore[arg-type]
    monkeypatch.setenv("RAGTRACE_JOIN_MAX_TRACES", "lots")
    monkeypatch.setenv("RAGTRACE_RECOGNIZE", "maybe")
    settings = JoinSettings.resolve()
    assert settings.max_traces == 1024
    assert settings.recognize is False  # the safe side: recognising sends span content to the judge
    assert warned("RAGTRACE_JOIN_MAX_TRACES") and warned("RAGTRACE_RECOGNIZE")  # type: ignore[operator]


def test_every_variable_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    assert [v for v in VARIABLES if f"`{v}`" not in doc] == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_empty_and_the_parent_keeps_what_it_held() -> None:
    p = pipeline()
    tracer = p.provider.get_tracer("t")
    request = tracer.start_span("request")
    with trace.use_span(request), trace.use_span(chain(tracer, "parent's"), end_on_exit=True):
        retrieve(tracer, "doc")
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        signal.alarm(20)
        try:
            os.close(read_fd)
            before = p.processor.join_stats
            with trace.use_span(chain(tracer, "child's"), end_on_exit=True):
                retrieve(tracer, "doc")
            roots = [s.name for s in p.roots()]
            os.write(write_fd, json.dumps({"held": before.held if before else -1, "roots": roots}).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    report = json.loads(os.read(read_fd, 65536))
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # The child held nothing of the parent's (the parent exports it) and joined its own call.
    assert report == {"held": 0, "roots": ["child's"]}
    assert [r.name for r in p.roots()] == ["parent's"]
    request.end()
    p.provider.shutdown()
