"""The traces waiting to be joined are bounded in count, bytes and time, and what is dropped is counted.

Real OpenInference-shaped spans from the SDK, sent with the real OTLP/HTTP exporter to a real collector; the
settler is driven with ``settle_once`` at chosen times.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from ragtrace_collector.__main__ import main
from ragtrace_collector._join import JoinLimits

from ragtrace import semconv
from tests.collector._join import HOUR, LIMITS
from tests.collector._spans import SpanFactory, start_collector
from tests.collector._stores import rows, store_args, tables_in
from tests.collector._traced_app import send


def _retrievals_under_remote_parents(count: int, text: str = "Refunds are paid within 14 days.") -> list[ReadableSpan]:
    """``count`` traces, each a RETRIEVER span whose parent lives in another service: their root never comes."""
    factory = SpanFactory(service="far")
    for i in range(count):
        parent = NonRecordingSpan(SpanContext(i + 1, i + 1, is_remote=True, trace_flags=TraceFlags(1)))
        with factory.tracer.start_as_current_span("retrieve", context=trace.set_span_in_context(parent)) as span:
            span.set_attribute(semconv.OPENINFERENCE_SPAN_KIND, semconv.SPAN_KIND_RETRIEVER)
            span.set_attribute(semconv.retrieval_document(0, semconv.DOCUMENT_CONTENT), text)
    return factory.all()


def _waiting(db: Path) -> int:
    ((waiting,),) = rows(db, "SELECT count(*) FROM join_pending")
    return int(waiting)


@pytest.mark.slow
def test_ten_thousand_traces_that_never_end_stay_within_the_bound_and_are_counted(store_target: str) -> None:
    db = store_target
    spans = _retrievals_under_remote_parents(10_000)
    limits = JoinLimits(settle_seconds=3600, max_seconds=7200, max_traces=1000)
    collector = start_collector(db, join_limits=limits)
    try:
        for start in range(0, len(spans), 2500):
            send(collector, spans[start : start + 2500])
        assert collector.settler is not None
        assert collector.settler.settle_once(time.time_ns()) == []
        assert collector.settler.stats.dropped == 9000
        assert _waiting(db) == 1000
        with urllib.request.urlopen(f"http://127.0.0.1:{collector.http_port}/metrics", timeout=30) as reply:
            exposition = reply.read().decode()
    finally:
        collector.stop()
    assert "ragtrace_collector_join_waiting_traces 1000.0" in exposition
    assert "ragtrace_collector_join_dropped_traces_total 9000.0" in exposition
    # The oldest went first: the last thousand sent are the ones still waiting.
    kept = {int(t, 16) for (t,) in rows(db, "SELECT trace_id FROM join_pending")}
    assert kept == set(range(9001, 10_001))


def test_the_bytes_of_waiting_traces_are_bounded(store_target: str) -> None:
    db = store_target
    spans = _retrievals_under_remote_parents(50, text="x" * 10_000)
    limits = JoinLimits(settle_seconds=3600, max_seconds=7200, max_bytes=100_000)
    collector = start_collector(db, join_limits=limits)
    try:
        send(collector, spans)
        assert collector.settler is not None
        collector.settler.settle_once(time.time_ns())
        dropped = collector.settler.stats.dropped
    finally:
        collector.stop()
    assert 0 < dropped < 50 and _waiting(db) == 50 - dropped
    ((waiting_bytes,),) = rows(db, "SELECT coalesce(sum(bytes), 0) FROM join_pending")
    assert waiting_bytes <= 100_000


@pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated")
def test_a_rag_call_whose_root_never_arrives_is_joined_after_the_longest_wait(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "0")
    factory = SpanFactory(service="far")
    parent = NonRecordingSpan(SpanContext(7, 7, is_remote=True, trace_flags=TraceFlags(1)))
    with factory.tracer.start_as_current_span("chain", context=trace.set_span_in_context(parent)) as chain:
        chain.set_attributes(
            {
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
                semconv.INPUT_VALUE: "q?",
                semconv.OUTPUT_VALUE: "a.",
            }
        )
        with factory.tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute(semconv.OPENINFERENCE_SPAN_KIND, semconv.SPAN_KIND_RETRIEVER)
            retriever.set_attribute(semconv.retrieval_document(0, semconv.DOCUMENT_CONTENT), "a.")
    db = store_target
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        send(collector, factory.all())
        start = time.time_ns()
        assert collector.settler is not None and collector.scorer is not None
        assert collector.settler.settle_once(start + HOUR + HOUR // 2) == []  # quiet, but no root: waits
        assert len(collector.settler.settle_once(start + 2 * HOUR + 1)) == 1
        assert collector.scorer.wait_idle(120)
        assert collector.settler.stats.expired == 1
    finally:
        collector.stop()
    assert rows(db, "SELECT query, answer, decision FROM rag_records") == [("q?", "a.", semconv.DECISION_NOT_SAMPLED)]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--join-settle-seconds", "0"),
        ("--join-settle-seconds", "nan"),
        ("--join-max-seconds", "5"),
        ("--join-max-traces", "0"),
        ("--join-max-bytes", "-1"),
        ("--claim-lease-seconds", "0"),
        ("--claim-lease-seconds", "nan"),
    ],
)
def test_unusable_join_limits_stop_serve_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, store_target: str
) -> None:
    # --rules names a missing file, checked after the limits: were a limit let through, the command would stop on
    # the rules (a failed assertion below) rather than serve forever.
    argv = ["serve", *store_args(store_target), f"{option}={value}", "--rules", str(tmp_path / "none")]
    assert main(argv) == 2
    assert option in capsys.readouterr().err
    assert tables_in(store_target) == []  # refused before the store was made
