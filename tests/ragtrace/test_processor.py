"""ScoringSpanProcessor: scores land on the exported RAG span, every span leaves exactly once."""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry import baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from ragtrace import semconv
from ragtrace._capture import RecordStore
from ragtrace._record import RagRecord
from ragtrace._sampling import Rule, Sampler
from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._base import Score
from ragtrace.scoring.processor import ERROR_NO_RECORD, ScoringSpanProcessor
from ragtrace.testing import FakeJudge

RECORD = RagRecord.of("What is the capital of Brazil?", ["Brazil's capital is Brasilia."], "Brasilia.")


class Collect(SpanProcessor):
    """A downstream processor that keeps what it receives and lets a test wait for a condition."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []
        self._cond = threading.Condition()
        self.shut = False

    def on_end(self, span: ReadableSpan) -> None:
        with self._cond:
            self.spans.append(span)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[list[ReadableSpan]], bool], timeout: float = 10.0) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: predicate(self.spans), timeout), [s.name for s in self.spans]

    def shutdown(self) -> None:
        self.shut = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def by_id(self) -> dict[int, ReadableSpan]:
        ids = Counter(s.context.span_id for s in self.spans if s.name != semconv.CARRIER_SPAN_NAME)
        assert all(n == 1 for n in ids.values()), "a span left the processor twice"
        return {s.context.span_id: s for s in self.spans if s.name != semconv.CARRIER_SPAN_NAME}


@dataclass
class Scripted:
    """A metric whose behaviour the test scripts: a value, a failure, or a gate to wait on."""

    name: str = "faithfulness"
    value: float | None = 0.75
    label: str | None = "partially_faithful"
    error_type: str | None = None
    raises: bool = False
    gate: threading.Event | None = None
    started: threading.Event = field(default_factory=threading.Event)
    direction: str = "higher"
    needs: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()
    details: dict[str, Any] = field(default_factory=dict)
    calls: int = 0

    async def score(self, record: RagRecord, judge: Any) -> Score:
        self.calls += 1
        self.started.set()
        if self.gate is not None:
            # The gate is opened from the test's thread; polling it keeps the worker's loop free
            # and cancellable (a thread parked in gate.wait would outlive the loop).
            while not self.gate.is_set():  # noqa: ASYNC110
                await asyncio.sleep(0.005)
        if self.raises:
            raise RuntimeError("metric exploded")
        if self.error_type is not None:
            return Score.absent(self.name, "error", "judge_error", error_type=self.error_type)
        return Score(self.name, self.value, label=self.label, explanation="two of three claims", details=self.details)


class NullJudge:
    name = "fake:scripted"
    capabilities: frozenset[str] = frozenset()

    async def aclose(self) -> None:
        return None


@dataclass
class Rig:
    provider: TracerProvider
    processor: ScoringSpanProcessor
    downstream: Collect
    records: RecordStore
    started: list[int] = field(default_factory=list)

    def rag(self, name: str = "rag", record: RagRecord | None = RECORD, child: bool = False, **attrs: Any) -> int:
        tracer = self.provider.get_tracer("test")
        with tracer.start_as_current_span(name, attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG, **attrs}) as sp:
            if child:
                with tracer.start_as_current_span("retrieve") as ch:
                    self.started.append(ch.get_span_context().span_id)
            ctx = sp.get_span_context()
            if record is not None:
                self.records.put(ctx.trace_id, ctx.span_id, record)
        self.started.append(ctx.span_id)
        return ctx.span_id


def make_rig(metrics: list[Any] | None = None, **kwargs: Any) -> Rig:
    downstream = Collect()
    records = RecordStore()
    kwargs.setdefault("sample_rate", 1.0)
    processor = ScoringSpanProcessor(
        downstream,
        judge=kwargs.pop("judge", NullJudge()),
        metrics=metrics or [Scripted()],
        records=records,
        **kwargs,
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return Rig(provider, processor, downstream, records)


@pytest.fixture
def rig() -> Iterator[Rig]:
    r = make_rig()
    yield r
    r.provider.shutdown()


def decision(span: ReadableSpan) -> Any:
    return (span.attributes or {}).get(semconv.EVAL_DECISION)


def test_scores_land_as_attributes_and_events_on_the_rag_span(rig: Rig) -> None:
    span_id = rig.rag(child=True)
    assert rig.processor.force_flush(10_000)
    spans = rig.downstream.by_id()
    assert set(spans) == set(rig.started)
    rag = spans[span_id]
    attrs = rag.attributes or {}
    assert decision(rag) == semconv.DECISION_EVALUATED
    assert attrs[semconv.eval_score("faithfulness")] == 0.75
    assert attrs[semconv.eval_label("faithfulness")] == "partially_faithful"
    assert attrs[semconv.EVAL_JUDGE] == "fake:scripted"
    assert attrs[semconv.EVAL_SECONDS] >= 0
    assert attrs[semconv.RAGTRACE_ROLE] == semconv.ROLE_RAG  # the original attributes are kept
    events = [e for e in rag.events if e.name == semconv.GEN_AI_EVALUATION_RESULT]
    assert len(events) == 1
    assert events[0].attributes[semconv.GEN_AI_EVALUATION_NAME] == "faithfulness"
    assert events[0].attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 0.75
    assert events[0].attributes[semconv.GEN_AI_EVALUATION_EXPLANATION] == "two of three claims"
    child = next(s for s in spans.values() if s.name == "retrieve")
    assert semconv.EVAL_DECISION not in (child.attributes or {})
    assert child.events == ()


def test_the_copy_keeps_identity_times_status_and_parent(rig: Rig) -> None:
    tracer = rig.provider.get_tracer("t")
    with tracer.start_as_current_span("outer") as outer:
        span_id = rig.rag()
    rig.processor.force_flush(10_000)
    rag = rig.downstream.by_id()[span_id]
    assert rag.parent is not None and rag.parent.span_id == outer.get_span_context().span_id
    assert rag.context.trace_id == outer.get_span_context().trace_id
    assert rag.start_time is not None and rag.end_time is not None and rag.start_time <= rag.end_time


def test_not_sampled_rag_span_carries_its_decision_at_once() -> None:
    r = make_rig(sample_rate=0.0)
    span_id = r.rag()
    # Forwarded synchronously inside span.end(): no flush needed.
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_NOT_SAMPLED
    assert r.processor.pending == 0
    r.provider.shutdown()


def test_non_rag_spans_pass_through_untouched(rig: Rig) -> None:
    tracer = rig.provider.get_tracer("t")
    with tracer.start_as_current_span("plain", attributes={"k": "v"}) as sp:
        pass
    (out,) = rig.downstream.spans
    assert out.context.span_id == sp.get_span_context().span_id
    assert dict(out.attributes or {}) == {"k": "v"}  # nothing added


def test_never_rule_and_throttle_and_budget_decisions() -> None:
    sampler = Sampler(1.0, never=[Rule.name_matches("*health*")], throttle_per_minute=1)
    r = make_rig(sampler=sampler, sample_rate=None)
    health = r.rag(name="healthcheck")
    first = r.rag()
    second = r.rag()
    r.processor.force_flush(10_000)
    spans = r.downstream.by_id()
    assert decision(spans[health]) == semconv.DECISION_NOT_SAMPLED
    assert decision(spans[first]) == semconv.DECISION_EVALUATED
    assert decision(spans[second]) == semconv.DECISION_THROTTLED
    r.provider.shutdown()


def test_missing_record_is_an_error_not_a_lost_span(rig: Rig) -> None:
    span_id = rig.rag(record=None)
    span = rig.downstream.by_id()[span_id]
    assert decision(span) == semconv.DECISION_ERROR
    assert (span.attributes or {})[semconv.EVAL_ERROR_TYPE] == ERROR_NO_RECORD


def test_judge_failure_is_decision_error_with_type() -> None:
    r = make_rig(metrics=[Scripted(error_type="connection")])
    span_id = r.rag()
    r.processor.force_flush(10_000)
    span = r.downstream.by_id()[span_id]
    attrs = span.attributes or {}
    assert decision(span) == semconv.DECISION_ERROR
    assert attrs[semconv.EVAL_ERROR_TYPE] == "connection"
    assert semconv.eval_score("faithfulness") not in attrs  # absent, never a made-up 0
    assert attrs[semconv.eval_reason("faithfulness")] == "judge_error"
    (event,) = span.events
    assert event.attributes[semconv.ERROR_TYPE] == "connection"
    r.provider.shutdown()


def test_a_metric_that_raises_does_not_lose_the_span() -> None:
    r = make_rig(metrics=[Scripted(raises=True)])
    span_id = r.rag()
    r.processor.force_flush(10_000)
    span = r.downstream.by_id()[span_id]
    assert decision(span) == semconv.DECISION_ERROR
    assert (span.attributes or {})[semconv.EVAL_ERROR_TYPE] == "RuntimeError"
    r.provider.shutdown()


def test_burst_of_ten_times_the_queue_overflows_but_loses_nothing() -> None:
    gate = threading.Event()
    r = make_rig(metrics=[Scripted(gate=gate)], queue_size=5, max_concurrency=2)
    ids = [r.rag() for _ in range(50)]
    counts = Counter(decision(s) for s in r.downstream.spans)
    # The queue holds 5 and 2 are being scored at most; everything else left at once.
    assert counts[semconv.DECISION_OVERFLOW] >= 50 - 5 - 2
    gate.set()
    assert r.processor.force_flush(10_000)
    spans = r.downstream.by_id()
    assert set(spans) == set(ids)
    final = Counter(decision(s) for s in spans.values())
    assert final[semconv.DECISION_EVALUATED] + final[semconv.DECISION_OVERFLOW] == 50
    assert final[semconv.DECISION_EVALUATED] >= 5
    r.provider.shutdown()


def test_hold_timeout_exports_original_then_a_carrier_with_late_scores() -> None:
    gate = threading.Event()
    metric = Scripted(gate=gate)
    # The hold time only has to outlast the loop picking the job up (a job still waiting at its
    # deadline is expired unscored, with no carrier); the judge is held by the gate, so the deadline
    # passes while it is in flight however slow the machine. Nothing here depends on how long it is.
    r = make_rig(metrics=[metric], hold_timeout=2.0)
    span_id = r.rag()
    assert metric.started.wait(10)
    r.downstream.wait_for(lambda spans: any(s.context.span_id == span_id for s in spans))
    original = r.downstream.by_id()[span_id]
    assert decision(original) == semconv.DECISION_TIMEOUT
    assert semconv.eval_score("faithfulness") not in (original.attributes or {})
    gate.set()
    r.downstream.wait_for(lambda spans: any(s.name == semconv.CARRIER_SPAN_NAME for s in spans))
    carrier = next(s for s in r.downstream.spans if s.name == semconv.CARRIER_SPAN_NAME)
    attrs = carrier.attributes or {}
    assert attrs[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_EVALUATOR
    assert attrs[semconv.eval_score("faithfulness")] == 0.75
    assert attrs[semconv.EVAL_TARGET_SPAN_ID] == trace.format_span_id(span_id)
    assert carrier.context.trace_id == original.context.trace_id
    assert [link.context.span_id for link in carrier.links] == [span_id]
    assert carrier.context.span_id != span_id
    r.provider.shutdown()


def test_shutdown_with_100_pending_exports_every_span_once() -> None:
    gate = threading.Event()
    r = make_rig(metrics=[Scripted(gate=gate)], queue_size=200, max_concurrency=4)
    ids = [r.rag() for _ in range(100)]
    assert r.processor.pending == 100
    r.processor.shutdown(timeout_millis=200)  # the judge never answers: all go out unscored
    spans = r.downstream.by_id()
    assert set(spans) == set(ids)
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_TIMEOUT}
    assert r.downstream.shut
    assert r.processor.pending == 0
    gate.set()
    # After shutdown, spans pass straight through.
    late = r.rag()
    assert late in r.downstream.by_id()
    r.provider.shutdown()


def test_shutdown_scores_pending_records_while_time_remains() -> None:
    r = make_rig(queue_size=200, max_concurrency=8)
    ids = [r.rag() for _ in range(100)]
    r.processor.shutdown(timeout_millis=10_000)
    spans = r.downstream.by_id()
    assert set(spans) == set(ids)
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_EVALUATED}
    r.provider.shutdown()


def test_force_flush_with_no_time_exports_unscored_and_keeps_scoring_late() -> None:
    gate = threading.Event()
    r = make_rig(metrics=[Scripted(gate=gate)], max_concurrency=1)
    first = r.rag()
    second = r.rag()
    assert not r.processor.force_flush(0)
    spans = r.downstream.by_id()
    assert {decision(spans[first]), decision(spans[second])} == {semconv.DECISION_TIMEOUT}
    gate.set()
    r.downstream.wait_for(lambda s: any(x.name == semconv.CARRIER_SPAN_NAME for x in s))
    r.provider.shutdown()
    assert len(r.downstream.by_id()) == 2


def test_threads_submitting_at_once_lose_nothing() -> None:
    r = make_rig(queue_size=10_000, max_concurrency=8)
    ended: list[list[int]] = [[] for _ in range(8)]  # each thread's own RAG spans

    def work(mine: list[int]) -> None:
        for _ in range(50):
            mine.append(r.rag())

    threads = [threading.Thread(target=work, args=(mine,)) for mine in ended]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.processor.force_flush(20_000)
    # Every span each thread ended left exactly once (by_id fails on a second), and each was scored.
    spans = r.downstream.by_id()
    assert sorted(spans) == sorted(span_id for mine in ended for span_id in mine)
    assert len(spans) == 8 * 50
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_EVALUATED}
    r.provider.shutdown()


def test_a_downstream_that_raises_never_reaches_the_app(caplog: pytest.LogCaptureFixture) -> None:
    class Boom(Collect):
        def on_end(self, span: ReadableSpan) -> None:
            super().on_end(span)
            raise RuntimeError("exporter down")

    boom = Boom()
    processor = ScoringSpanProcessor(boom, judge=NullJudge(), metrics=[Scripted()], sample_rate=0.0)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    with provider.get_tracer("t").start_as_current_span("rag", attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG}):
        pass  # the span ends here: the RuntimeError would surface in the app at this line
    # Handed over once (not retried, not lost), with its decision, and the failure logged instead of raised.
    assert [decision(span) for span in boom.spans] == [semconv.DECISION_NOT_SAMPLED]
    assert any(record.exc_info and "exporter down" in str(record.exc_info[1]) for record in caplog.records)
    provider.shutdown()


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"queue_size": 0}, "queue_size"),
        ({"max_concurrency": -1}, "max_concurrency"),
        ({"hold_timeout": 0}, "hold_timeout"),
        ({"sample_rate": 1.5}, "between 0 and 1"),
        ({"metrics": []}, "at least one metric"),
        ({"metrics": "faithfulness"}, "pass a list"),
        ({"metrics": ["no_such_metric"]}, "unknown metric"),
    ],
)
def test_wrong_settings_raise_configuration_error(kwargs: dict[str, Any], fix: str) -> None:
    kwargs.setdefault("metrics", [Scripted()])
    with pytest.raises(ConfigurationError, match=fix):
        ScoringSpanProcessor(Collect(), judge=NullJudge(), records=RecordStore(), **kwargs)


def test_environment_variables_configure_the_processor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "17")
    monkeypatch.setenv("RAGTRACE_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("RAGTRACE_HOLD_TIMEOUT", "2.5")
    p = ScoringSpanProcessor(Collect(), judge=NullJudge(), metrics=[Scripted()], records=RecordStore())
    assert (p.queue_size, p.max_concurrency, p.hold_timeout) == (17, 3, 2.5)
    p.shutdown()
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "lots")
    p = ScoringSpanProcessor(Collect(), judge=NullJudge(), metrics=[Scripted()], records=RecordStore())
    assert p.queue_size == 2048  # the default; the variable is reported as a WARNING
    p.shutdown()


def test_jobs_behind_a_stuck_judge_still_leave_at_their_deadline() -> None:
    gate = threading.Event()
    metric = Scripted(gate=gate)
    # As above: the hold time only has to outlast the loop starting the first job; the gate keeps it
    # in flight past its deadline.
    r = make_rig(metrics=[metric], max_concurrency=1, hold_timeout=2.0)
    first = r.rag()
    assert metric.started.wait(10)
    # The only slot is busy: these wait unseen by the loop until its reaper ticks.
    rest = [r.rag() for _ in range(3)]
    r.downstream.wait_for(lambda spans: len(spans) == 4)
    spans = r.downstream.by_id()
    assert set(spans) == {first, *rest}
    assert {decision(s) for s in spans.values()} == {semconv.DECISION_TIMEOUT}
    gate.set()
    r.downstream.wait_for(lambda s: any(x.name == semconv.CARRIER_SPAN_NAME for x in s))
    r.provider.shutdown()
    carriers = [s for s in r.downstream.spans if s.name == semconv.CARRIER_SPAN_NAME]
    assert len(carriers) == 1  # only the job that was being scored has late scores
    assert metric.calls == 1  # the expired ones were never scored


def test_scoring_runs_with_instrumentation_suppressed_and_outside_the_users_trace() -> None:
    seen: dict[str, Any] = {}

    class Probe(Scripted):
        async def score(self, record: RagRecord, judge: Any) -> Score:
            seen["suppressed"] = otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY)
            seen["current_span_valid"] = trace.get_current_span().get_span_context().is_valid
            seen["thread"] = threading.current_thread().name
            return await super().score(record, judge)

    r = make_rig(metrics=[Probe()])
    span_id = r.rag()
    r.processor.force_flush(10_000)
    assert seen == {"suppressed": True, "current_span_valid": False, "thread": "ragtrace-scorer"}
    assert set(r.downstream.by_id()) == {span_id}  # scoring made no span of its own
    r.provider.shutdown()


def test_judge_steps_run_outside_the_apps_trace_context_and_baggage() -> None:
    # The wake-up the request thread sends to the loop used to carry the request's context into
    # every scoring task: the judge saw the app's span as current and the request's baggage.
    seen: list[tuple[bool, object, object]] = []

    def claims(text: str, question: str | None = None) -> list[str]:
        seen.append(
            (
                trace.get_current_span().get_span_context().is_valid,
                baggage.get_baggage("user"),
                otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY),
            )
        )
        return ["Brasilia is the capital"]

    judge = FakeJudge(
        name="fake:scripted",
        extract_claims=claims,
        verify=lambda claims, chunks: [["supported" for _ in chunks] for _ in claims],
    )
    r = make_rig(metrics=["faithfulness"], judge=judge)
    token = otel_context.attach(baggage.set_baggage("user", "alice"))
    try:
        with r.provider.get_tracer("app").start_as_current_span("http-request"):
            span_id = r.rag()
    finally:
        otel_context.detach(token)
    assert r.processor.force_flush(10_000)
    assert seen == [(False, None, True)]
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_EVALUATED
    r.provider.shutdown()


def test_the_method_detail_becomes_an_attribute() -> None:
    r = make_rig(metrics=[Scripted(name="answer_relevancy_embedding", details={"method": "embedding"})])
    span_id = r.rag()
    r.processor.force_flush(10_000)
    attrs = r.downstream.by_id()[span_id].attributes or {}
    assert attrs[semconv.eval_method("answer_relevancy_embedding")] == "embedding"
    r.provider.shutdown()


@dataclass
class Jittery(Scripted):
    """A judge whose latency varies around the hold deadline, so every exit path gets exercised."""

    seed: int = 0

    async def score(self, record: RagRecord, judge: Any) -> Score:
        rng = random.Random(f"{self.seed}:{record.query}")
        await asyncio.sleep(rng.choice([0.0, 0.001, 0.02, 0.06]))  # simulated judge latency
        if rng.random() < 0.1:
            return Score.absent(self.name, "error", "judge_error", error_type="timeout")
        return Score(self.name, 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_exactly_once_under_racing_deadlines_flushes_and_shutdown(seed: int) -> None:
    r = make_rig(metrics=[Jittery(seed=seed)], queue_size=40, max_concurrency=3, hold_timeout=0.03)
    flusher_done = threading.Event()

    def flusher() -> None:
        for budget in (0, 5, 20, 0):
            r.processor.force_flush(budget)
        flusher_done.set()

    threading.Thread(target=flusher).start()
    rng = random.Random(seed)
    for i in range(300):
        r.rag(record=RagRecord.of(f"q{seed}-{i}", ["c"], "a"), child=rng.random() < 0.2)
    assert flusher_done.wait(30)
    r.processor.shutdown(timeout_millis=rng.choice([0, 50, 2000]))
    spans = r.downstream.by_id()  # asserts each span id left exactly once
    assert set(spans) == set(r.started)
    rag = [s for s in spans.values() if s.name == "rag"]
    assert len(rag) == 300
    assert {decision(s) for s in rag} <= {
        semconv.DECISION_EVALUATED,
        semconv.DECISION_ERROR,
        semconv.DECISION_TIMEOUT,
        semconv.DECISION_OVERFLOW,
    }
    assert r.processor.pending == 0
    r.provider.shutdown()


def test_a_bare_exporter_is_wrapped_in_a_batch_processor() -> None:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    processor = ScoringSpanProcessor(exporter, judge=NullJudge(), metrics=[Scripted()], sample_rate=1.0)
    assert isinstance(processor.downstream, BatchSpanProcessor)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    with provider.get_tracer("t").start_as_current_span("plain"):
        pass
    assert processor.force_flush(10_000)
    assert [s.name for s in exporter.get_finished_spans()] == ["plain"]
    provider.shutdown()
