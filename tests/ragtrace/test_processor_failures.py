"""The scoring processor when a part of it fails or races its shutdown: every span still leaves it exactly once.

A decision counter that raises, a copy that cannot be built, a downstream that raises after accepting, a loop
wedged by a synchronous judge, a span submitted while shutdown closes the loop, a judge misconfigured: each test
names the failure and failed before its fix.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.metrics import NoOpCounter, NoOpMeter, NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace._capture import RecordStore
from ragtrace._record import RagRecord
from ragtrace._sampling import Sampler
from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._base import Score
from ragtrace.scoring import processor as _processor
from ragtrace.scoring import spans as _spans
from ragtrace.scoring.processor import ScoringSpanProcessor
from tests.ragtrace.test_processor import Collect, NullJudge, Scripted, decision, make_rig


class _RaisingCounter(NoOpCounter):
    def add(self, amount: int | float, attributes: Any = None, context: Any = None) -> None:
        raise RuntimeError("meter exporter bug")


class _DecisionCounterRaises(NoOpMeterProvider):
    """A MeterProvider whose decision counter raises on every add (a broken metrics pipeline)."""

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> NoOpMeter:
        class Meter(NoOpMeter):
            def create_counter(self, name: str, *args: Any, **kwargs: Any) -> NoOpCounter:
                return _RaisingCounter(name) if name == semconv.METRIC_EVAL_DECISIONS else NoOpCounter(name)

        return Meter(name)


def test_a_decision_counter_that_raises_loses_no_span() -> None:
    # The worker took the job out of ``_held`` and counted before emitting: a raising counter lost the span.
    gate = threading.Event()
    r = make_rig(metrics=[Scripted(gate=gate)], meter_provider=_DecisionCounterRaises(), max_concurrency=1)
    no_record = r.rag(record=None)  # forwarded on the request path with decision error
    scored = r.rag()
    gate.set()
    assert r.processor.force_flush(10_000)
    gate.clear()
    timed_out = r.rag()  # exported unscored by a flush with no time
    r.processor.force_flush(0)
    stuck = r.rag()  # exported unscored by shutdown
    r.processor.shutdown(timeout_millis=100)
    gate.set()
    spans = r.downstream.by_id()  # each exactly once
    assert set(spans) == set(r.started)
    assert decision(spans[no_record]) == semconv.DECISION_ERROR
    assert decision(spans[scored]) == semconv.DECISION_EVALUATED
    assert decision(spans[timed_out]) == semconv.DECISION_TIMEOUT
    assert decision(spans[stuck]) == semconv.DECISION_TIMEOUT
    r.provider.shutdown()


def test_a_copy_that_cannot_be_built_exports_the_original_once(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> ReadableSpan:
        raise ValueError("bad attribute")

    monkeypatch.setattr(_spans, "scored_copy", broken)
    gate = threading.Event()
    r = make_rig(metrics=[Scripted(gate=gate)], max_concurrency=1)
    no_record = r.rag(record=None)
    first = r.rag()
    gate.set()
    assert r.processor.force_flush(10_000)
    gate.clear()
    r.rag()
    r.processor.force_flush(0)
    r.rag()
    r.processor.shutdown(timeout_millis=100)
    gate.set()
    spans = r.downstream.by_id()  # each exactly once
    assert set(spans) == set(r.started)
    assert spans[first] is not None and spans[no_record] is not None
    r.provider.shutdown()


def test_a_scored_copy_that_fails_exports_the_span_with_decision_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _spans.scored_copy

    def fails_with_scores(span: ReadableSpan, attributes: Any, events: Any = ()) -> ReadableSpan:
        if semconv.eval_score("faithfulness") in attributes:
            raise ValueError("bad attribute")
        return real(span, attributes, events)

    monkeypatch.setattr(_spans, "scored_copy", fails_with_scores)
    r = make_rig()
    span_id = r.rag()
    r.processor.force_flush(10_000)
    span = r.downstream.by_id()[span_id]
    assert decision(span) == semconv.DECISION_ERROR
    assert (span.attributes or {})[semconv.EVAL_ERROR_TYPE] == "ValueError"
    assert semconv.eval_score("faithfulness") not in (span.attributes or {})
    r.provider.shutdown()


@dataclass
class WedgesTheLoop(Scripted):
    """The first call blocks the worker's loop (a synchronous judge) once ``block`` is set, until ``wedge`` is."""

    block: threading.Event = field(default_factory=threading.Event)
    wedge: threading.Event = field(default_factory=threading.Event)
    wedged: threading.Event = field(default_factory=threading.Event)

    async def score(self, record: RagRecord, judge: Any) -> Score:
        if self.calls == 0:
            self.calls += 1
            self.started.set()
            while not self.block.is_set():  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            self.wedged.set()
            self.wedge.wait(30)
            return Score(self.name, 0.5)
        return await super().score(record, judge)


def test_a_flush_that_gives_up_on_a_wedged_loop_keeps_the_queue_bound_and_scores_nothing_it_gave_up() -> None:
    # The abandon reset the queue count to 0 while the loop still held the queued jobs; the loop then
    # scored them for nothing (their spans had left) and counted them out again: the count went
    # negative and the queue bound with it.
    metric = WedgesTheLoop()
    r = make_rig(metrics=[metric], queue_size=3, max_concurrency=1)
    worker = r.processor._worker
    first = r.rag()
    assert metric.started.wait(10)
    loop = worker._loop
    assert loop is not None
    queued = [r.rag() for _ in range(3)]  # the only slot is busy: these queue

    async def pump() -> None:
        worker._pump()  # what the reaper's next tick does: the loop takes the queued jobs in

    asyncio.run_coroutine_threadsafe(pump(), loop).result(10)
    assert len(worker._waiting) == 3
    metric.block.set()  # the running judge now blocks the loop
    assert metric.wedged.wait(10)
    assert not r.processor.force_flush(0)  # the loop does not answer: everything held goes out unscored
    spans = r.downstream.by_id()
    assert set(spans) == {first, *queued}
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_TIMEOUT}
    assert r.processor.pending == 0
    metric.wedge.set()
    r.processor.force_flush(10_000)
    assert metric.calls == 1  # the jobs given up on were not scored
    carriers = [s for s in r.downstream.spans if s.name == semconv.CARRIER_SPAN_NAME]
    assert [c.links[0].context.span_id for c in carriers] == [first]  # the running one's scores came late

    # The bound still holds: one running, queue_size waiting, the rest overflow.
    metric.gate = threading.Event()
    metric.started.clear()
    running = r.rag()
    assert metric.started.wait(10)
    more = [r.rag() for _ in range(6)]
    exported = r.downstream.by_id()
    assert [decision(exported[s]) for s in more if s in exported] == [semconv.DECISION_OVERFLOW] * 3
    assert r.processor.pending == 4
    metric.gate.set()
    assert r.processor.force_flush(10_000)
    assert set(r.downstream.by_id()) == set(r.started)
    assert decision(r.downstream.by_id()[running]) == semconv.DECISION_EVALUATED
    r.provider.shutdown()


class _ShutDownFirst:
    """The worker's loop, except that the first wake-up finds that a shutdown has just closed it.

    It plays the race between ``submit`` releasing its lock and waking the loop, and another thread
    shutting the processor down in between.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, shutdown: Any, thread: threading.Thread) -> None:
        self._loop = loop
        self._shutdown = shutdown
        self._thread = thread
        self.raised: list[BaseException] = []

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> Any:
        shutdown, self._shutdown = self._shutdown, None
        if shutdown is not None:
            shutdown()
            self._thread.join(10)
            assert self._loop.is_closed()
            try:
                return self._loop.call_soon_threadsafe(callback, *args, context=context)
            except RuntimeError as exc:
                self.raised.append(exc)
                raise
        return self._loop.call_soon_threadsafe(callback, *args, context=context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


def test_a_span_submitted_while_shutdown_closes_the_loop_leaves_once() -> None:
    # ``submit`` used to raise RuntimeError from the wake-up after the job was held (and exported by
    # the shutdown's drain); ``on_end`` then forwarded the original a second time.
    r = make_rig()
    warm = r.rag()
    assert r.processor.force_flush(10_000)
    worker = r.processor._worker
    assert worker._loop is not None and worker._thread is not None
    proxy = _ShutDownFirst(worker._loop, r.processor.shutdown, worker._thread)
    worker._loop = proxy  # type: ignore[assignment]
    racing = r.rag()
    assert len(proxy.raised) == 1  # the race did happen
    spans = r.downstream.by_id()  # each exactly once
    assert set(spans) == {warm, racing}
    assert decision(spans[racing]) in {semconv.DECISION_EVALUATED, semconv.DECISION_TIMEOUT}
    assert r.processor.pending == 0
    r.provider.shutdown()


class _AcceptsThenRaises(Collect):
    """A downstream processor that keeps the span and then raises (an exporter hook that fails late)."""

    def on_end(self, span: ReadableSpan) -> None:
        super().on_end(span)
        raise RuntimeError("exporter hook failed after accepting the span")


def test_a_downstream_that_raises_after_accepting_gets_the_span_once() -> None:
    # ``on_end`` marked the span forwarded only after ``_forward`` returned: when downstream raised
    # after accepting it, the error path sent the original as well.
    downstream = _AcceptsThenRaises()
    processor = ScoringSpanProcessor(
        downstream, judge=NullJudge(), metrics=[Scripted()], sample_rate=0.0, records=RecordStore()
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("rag", attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG}) as span:
        pass
    (out,) = downstream.by_id().values()
    assert out.context.span_id == span.get_span_context().span_id
    assert decision(out) == semconv.DECISION_NOT_SAMPLED
    provider.shutdown()


def test_rag_spans_ending_after_shutdown_carry_a_decision_and_leave_no_record() -> None:
    # They went downstream untouched (no ``ragtrace.eval.decision``) and their record stayed in the
    # store, which another processor may still hold.
    r = make_rig()
    r.records.acquire()  # another processor shares the store and is still running
    r.processor.shutdown()
    late = r.rag()
    span = r.downstream.by_id()[late]
    assert decision(span) == semconv.DECISION_OVERFLOW
    assert len(r.records) == 0
    tracer = r.provider.get_tracer("t")
    with tracer.start_as_current_span("plain", attributes={"k": "v"}) as plain:
        pass
    out = r.downstream.by_id()[plain.get_span_context().span_id]
    assert dict(out.attributes or {}) == {"k": "v"}  # other spans still pass untouched
    r.records.release()
    r.provider.shutdown()


class _RecordsJoins:
    """The worker's thread, recording how long ``shutdown`` is prepared to wait for it."""

    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread
        self.joins: list[float | None] = []

    def join(self, timeout: float | None = None) -> None:
        self.joins.append(timeout)
        self.thread.join(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.thread, name)


def test_shutdown_waits_for_the_thread_only_for_what_is_left_of_its_budget() -> None:
    # After the drain had spent the budget, shutdown joined the thread for the whole budget again.
    gate = threading.Event()
    metric = Scripted(gate=gate)
    r = make_rig(metrics=[metric])
    span_id = r.rag()
    assert metric.started.wait(10)  # the judge never answers: the drain uses the whole budget
    worker = r.processor._worker
    assert worker._thread is not None and worker._loop is not None
    thread, loop = worker._thread, worker._loop
    spy = _RecordsJoins(thread)
    worker._thread = spy  # type: ignore[assignment]
    r.processor.shutdown(timeout_millis=200)
    assert spy.joins == [0.0]  # the deadline had passed: no more waiting
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_TIMEOUT
    assert r.processor.force_flush(10_000)  # a flush now leaves the stopping loop alone
    gate.set()
    thread.join(10)
    assert not thread.is_alive()
    assert loop.is_closed()  # the thread closes its own loop when it stops
    r.provider.shutdown()


def test_a_judge_misconfiguration_leaves_no_batch_processor_thread_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    # The BatchSpanProcessor wrapped around a bare exporter was built before ``default_judge()``
    # raised, and its export thread was never stopped.
    made: list[BatchSpanProcessor] = []
    stopped: list[BatchSpanProcessor] = []

    class Spy(BatchSpanProcessor):
        def __init__(self, exporter: SpanExporter) -> None:
            super().__init__(exporter)
            made.append(self)

        def shutdown(self) -> None:
            stopped.append(self)
            super().shutdown()

    monkeypatch.setattr(_processor, "BatchSpanProcessor", Spy)
    for variable in ("RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("RAGTRACE_JUDGE", "openai")  # asked for, with no key to use
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        ScoringSpanProcessor(InMemorySpanExporter(), metrics=[Scripted()], records=RecordStore())
    assert made == stopped
    # A judge the dollar budget cannot price fails the same way.
    with pytest.raises(ConfigurationError, match="no price"):
        ScoringSpanProcessor(
            InMemorySpanExporter(),
            judge=NullJudge(),
            metrics=[Scripted()],
            sampler=Sampler(1.0, budget_usd_per_day=1.0),
            records=RecordStore(),
        )
    assert made == stopped
