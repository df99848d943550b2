"""The processor's limits hold whatever the caller passes: time budgets, the daily budget, the throttle, a
failing budget or metrics pipeline."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from ragtrace import semconv
from ragtrace._capture import RecordStore
from ragtrace._sampling import Sampler
from ragtrace.environment_variables import ConfigurationError
from ragtrace.scoring.processor import ERROR_NO_RECORD, ScoringSpanProcessor
from ragtrace.testing import FakeJudge
from tests.ragtrace.test_processor import RECORD, Collect, NullJudge, Scripted, decision, make_rig

# -- time budgets ------------------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["shutdown_timeout", "hold_timeout"])
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 0, -1.0])
def test_a_time_setting_that_is_not_finite_and_positive_is_a_configuration_error(setting: str, value: float) -> None:
    with pytest.raises(ConfigurationError, match=f"{setting}=.*finite number of seconds"):
        ScoringSpanProcessor(Collect(), judge=NullJudge(), metrics=[Scripted()], **{setting: value})


@pytest.mark.parametrize("variable", ["RAGTRACE_SHUTDOWN_TIMEOUT", "RAGTRACE_HOLD_TIMEOUT"])
def test_an_infinite_time_variable_warns_and_keeps_the_default(
    monkeypatch: pytest.MonkeyPatch, variable: str, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv(variable, "inf")
    processor = ScoringSpanProcessor(Collect(), judge=NullJudge(), metrics=[Scripted()])
    try:
        assert (processor.shutdown_timeout, processor.hold_timeout) == (30.0, 30.0)
        (message,) = warned(variable)
        assert "finite number of seconds" in message
    finally:
        processor.shutdown()


def test_a_huge_shutdown_timeout_still_scores_exports_and_stops_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1e12 s is finite, but waiting on it raised OverflowError out of shutdown: the span was lost.
    monkeypatch.setenv("RAGTRACE_SHUTDOWN_TIMEOUT", "1e12")
    gate = threading.Event()
    metric = Scripted(gate=gate)
    r = make_rig([metric])
    span_id = r.rag()
    assert metric.started.wait(10)
    thread = r.processor._worker._thread
    assert thread is not None
    gate.set()
    r.provider.shutdown()
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_EVALUATED
    assert r.processor.pending == 0
    assert not thread.is_alive()


@pytest.mark.parametrize("timeout_millis", [10**16, float("inf"), float("nan")])
def test_force_flush_with_any_budget_returns_and_loses_nothing(timeout_millis: float) -> None:
    gate = threading.Event()
    gate.set()
    r = make_rig([Scripted(gate=gate)])
    span_id = r.rag()
    r.processor.force_flush(timeout_millis)  # type: ignore[arg-type]
    r.provider.shutdown()
    assert decision(r.downstream.by_id()[span_id]) in (semconv.DECISION_EVALUATED, semconv.DECISION_TIMEOUT)


def test_shutdown_with_an_infinite_budget_scores_what_is_queued() -> None:
    r = make_rig([Scripted()])
    span_id = r.rag()
    r.processor.shutdown(float("inf"))
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_EVALUATED


# -- the daily budget --------------------------------------------------------------------------------


@dataclass
class HeldBudget:
    """A processor on a one-record token budget (each record costs 120 tokens) whose judge holds every
    record, in flight and uncharged, until ``release`` is set."""

    release: threading.Event
    sampler: Sampler
    downstream: Collect
    records: RecordStore
    processor: ScoringSpanProcessor


def held_budget() -> HeldBudget:
    release = threading.Event()

    async def rate_chunks(query: str, chunks: list[str]) -> list[float]:
        while not release.is_set():  # noqa: ASYNC110 (the test's thread opens it)
            await asyncio.sleep(0.005)
        return [1.0] * len(chunks)

    sampler = Sampler(1.0, budget_tokens_per_day=120)
    downstream, records = Collect(), RecordStore()
    processor = ScoringSpanProcessor(
        downstream,
        judge=FakeJudge(rate_chunks=rate_chunks),
        metrics=["context_relevance"],
        sampler=sampler,
        records=records,
    )
    return HeldBudget(release, sampler, downstream, records, processor)


def test_a_burst_does_not_overrun_the_token_budget_by_the_whole_queue() -> None:
    # The budget is one record's worth. The decision is taken when a span ends and the charge comes
    # after scoring, so all 20 records of the burst used to pass.
    rig = held_budget()
    provider = TracerProvider()
    provider.add_span_processor(rig.processor)
    tracer = provider.get_tracer("test")
    for _ in range(20):
        with tracer.start_as_current_span("rag", attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG}) as span:
            ctx = span.get_span_context()
            rig.records.put(ctx.trace_id, ctx.span_id, RECORD)
    rig.release.set()
    rig.processor.force_flush(30_000)
    decisions = Counter(decision(s) for s in rig.downstream.spans)
    assert decisions == {semconv.DECISION_EVALUATED: 1, semconv.DECISION_OVER_BUDGET: 19}
    assert rig.sampler.spent_today()[0] == 120
    provider.shutdown()


class Contended:
    """A lock that says when a thread comes to wait for it (``arrived``)."""

    def __init__(self, lock: threading.Lock, arrived: threading.Event) -> None:
        self.lock, self.arrived = lock, arrived

    def __enter__(self) -> None:
        if not self.lock.acquire(blocking=False):
            self.arrived.set()
            self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_two_threads_ending_spans_at_once_are_not_both_picked_against_one_count() -> None:
    # The first thread is held inside the hand-over, after its decision, until the second thread arrives:
    # at the admission lock (fixed), or at its own decision (the race). It must decide with the first record
    # counted (in_flight 1, over budget), not beside it at 0.
    rig = held_budget()
    seen: list[int] = []
    first_handing_over, second_arrived = threading.Event(), threading.Event()
    decide, submit = rig.sampler.decide, rig.processor._worker.submit
    handoff = rig.processor._handoff
    handoff._admission = Contended(handoff._admission, second_arrived)  # type: ignore[assignment]

    def observed_decide(*args: Any, **kwargs: Any) -> Any:
        if seen:
            second_arrived.set()
        seen.append(kwargs["in_flight"])
        return decide(*args, **kwargs)

    def held_submit(*args: Any) -> bool:
        if not first_handing_over.is_set():
            first_handing_over.set()
            assert second_arrived.wait(10)
        return submit(*args)

    rig.sampler.decide = observed_decide  # type: ignore[method-assign]
    rig.processor._worker.submit = held_submit  # type: ignore[method-assign]
    provider = TracerProvider()
    provider.add_span_processor(rig.processor)
    tracer = provider.get_tracer("test")

    def one() -> None:
        with tracer.start_as_current_span("rag", attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG}) as span:
            ctx = span.get_span_context()
            rig.records.put(ctx.trace_id, ctx.span_id, RECORD)

    first = threading.Thread(target=one)
    first.start()
    assert first_handing_over.wait(10)
    second = threading.Thread(target=one)
    second.start()
    first.join(10)
    second.join(10)
    rig.release.set()
    rig.processor.force_flush(30_000)
    assert sorted(seen) == [0, 1]
    assert Counter(decision(s) for s in rig.downstream.spans) == {
        semconv.DECISION_EVALUATED: 1,
        semconv.DECISION_OVER_BUDGET: 1,
    }
    provider.shutdown()


# -- the throttle ------------------------------------------------------------------------------------


class FixedClock:
    def __call__(self) -> float:
        return 600.0


def test_a_throttle_slot_is_spent_only_by_a_span_handed_to_scoring() -> None:
    gate = threading.Event()
    metric = Scripted(gate=gate)
    sampler = Sampler(1.0, throttle_per_minute=3, clock=FixedClock())
    r = make_rig([metric], sampler=sampler, sample_rate=None, queue_size=1, max_concurrency=1)
    running = r.rag()
    assert metric.started.wait(10)
    queued = r.rag()  # the one place in the queue
    overflow = r.rag()  # no room: not scored, so it must not spend the last slot
    no_record = r.rag(record=None)
    gate.set()
    r.processor.force_flush(10_000)
    last = r.rag()
    r.processor.force_flush(10_000)
    throttled = r.rag()
    spans = r.downstream.by_id()
    assert [decision(spans[s]) for s in (running, queued, overflow, no_record, last)] == [
        semconv.DECISION_EVALUATED,
        semconv.DECISION_EVALUATED,
        semconv.DECISION_OVERFLOW,
        semconv.DECISION_ERROR,
        semconv.DECISION_EVALUATED,
    ]
    assert (spans[no_record].attributes or {})[semconv.EVAL_ERROR_TYPE] == ERROR_NO_RECORD
    assert decision(spans[throttled]) == semconv.DECISION_THROTTLED  # three scored: the minute is full
    r.provider.shutdown()


# -- a failing budget or metrics pipeline ------------------------------------------------------------


@pytest.mark.parametrize("part", ["charge", "scores", "cost"])
def test_scores_already_computed_survive_a_failing_charge_or_metrics_call(
    part: str, caplog: pytest.LogCaptureFixture
) -> None:
    r = make_rig([Scripted()])

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("pipeline down")

    owner: Any = r.processor.sampler if part == "charge" else r.processor.telemetry
    setattr(owner, part, boom)
    span_id = r.rag()
    r.processor.force_flush(10_000)
    attrs = r.downstream.by_id()[span_id].attributes or {}
    assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
    assert attrs[semconv.eval_score("faithfulness")] == 0.75
    assert "the scores are kept" in caplog.text
    r.provider.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_an_admission_lock_held_at_fork_time_does_not_block_the_childs_on_end() -> None:
    r = make_rig(sampler=Sampler(1.0, budget_tokens_per_day=1_000_000), sample_rate=None)
    r.processor._handoff._admission.acquire()  # as if another thread were deciding a span when the app forks
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running
            pid = os.fork()
        if pid == 0:
            signal.alarm(10)  # a blocked child dies instead of hanging the test run
            try:
                r.rag()
            finally:
                os._exit(0)
    finally:
        r.processor._handoff._admission.release()
    _, status = os.waitpid(pid, 0)
    r.provider.shutdown()
    assert os.waitstatus_to_exitcode(status) == 0


_EXIT_APP = """
import asyncio, json, sys, threading
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
import ragtrace
from ragtrace.judges.offline import OfflineJudge


class ToFile(SpanExporter):
    def export(self, spans):
        with open(sys.argv[1], "a") as out:
            for span in spans:
                out.write(json.dumps(dict(span.attributes or {})) + "\\n")
        return SpanExportResult.SUCCESS


exiting = threading.Event()


class AtExit(OfflineJudge):
    # Holds the record until the interpreter has begun to exit, then uses the model thread as usual.
    async def extract_claims(self, text, *, question=None):
        while not exiting.is_set():
            await asyncio.sleep(0.01)
        return await super().extract_claims(text, question=question)


# SETUP


@ragtrace.rag
def answer(query):
    ragtrace.record(chunks=["The Eiffel Tower is in Paris."])
    return "The Eiffel Tower is in Paris."


answer("Where is the Eiffel Tower?")
# Registered last, so it runs first of the interpreter's exit hooks: the record is released then.
threading._register_atexit(exiting.set)
# No shutdown(): the interpreter's exit scores and exports the record.
"""


_CONFIGURE = """
ragtrace.configure(exporter=ToFile(), batch=False, sample_rate=1.0, judge=AtExit(), metrics=["faithfulness"],
                   export_metrics=False, set_global=False)
"""

# The processor built before anything has imported ``concurrent.futures.thread`` (a TracerProvider
# does): the pools' exit hook is registered after the processor's drain.
_PROCESSOR_FIRST = """
assert "concurrent.futures.thread" not in sys.modules
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
processor = ragtrace.ScoringSpanProcessor(SimpleSpanProcessor(ToFile()), judge=AtExit(), metrics=["faithfulness"],
                                          sample_rate=1.0)
provider = TracerProvider()
provider.add_span_processor(processor)
trace.set_tracer_provider(provider)
"""


@pytest.mark.parametrize("setup", [_CONFIGURE, _PROCESSOR_FIRST], ids=["configure", "processor_first"])
def test_an_app_that_never_shuts_down_is_scored_at_exit_while_threads_still_take_work(
    tmp_path: Any, setup: str
) -> None:
    import subprocess
    import sys

    app, out = tmp_path / "app.py", tmp_path / "spans.jsonl"
    app.write_text(_EXIT_APP.replace("# SETUP", setup))
    run = subprocess.run([sys.executable, str(app), str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "cannot schedule new futures" not in run.stderr
    (span,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert span[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
    assert span[semconv.eval_label("faithfulness")] == "faithful"
    assert span[semconv.eval_score("faithfulness")] > 0.5


def test_the_exit_drain_and_the_final_shutdown_share_one_shutdown_timeout() -> None:
    # A judge that never answers: the drain before the thread pools close spent its budget, and the
    # shutdown at atexit that follows waited a whole shutdown_timeout again (per processor).
    import weakref

    from ragtrace.scoring.exit import drain_ref

    gate = threading.Event()
    r = make_rig([Scripted(gate=gate)], shutdown_timeout=0.5)
    budgets: dict[str, float] = {}
    worker = r.processor._worker
    flush, shutdown = worker.flush, worker.shutdown

    def recording(name: str, call: Any) -> Any:
        def record(timeout: float) -> bool:
            budgets[name] = timeout
            return bool(call(timeout))

        return record

    worker.flush = recording("drain", flush)  # type: ignore[method-assign]
    worker.shutdown = recording("shutdown", shutdown)  # type: ignore[method-assign]
    span_id = r.rag()
    try:
        drain_ref(weakref.ref(r.processor))
        r.provider.shutdown()
    finally:
        gate.set()
    assert budgets["drain"] + budgets["shutdown"] <= r.processor.shutdown_timeout
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_TIMEOUT
