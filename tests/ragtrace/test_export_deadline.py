"""A dead OTLP endpoint holds neither shutdown() nor the exit past the export's share of the budget,
and what was dropped is said once (real OTLP/HTTP exporters against a closed port on 127.0.0.1)."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import textwrap

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace._export_deadline import CountingSpanExporter
from tests.ragtrace.test_config import Receiver


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@ragtrace.rag
def answer(question: str) -> str:
    return "Brasilia."


def test_shutdown_cuts_the_retries_of_a_dead_endpoint_and_says_what_was_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    handle = ragtrace.configure(endpoint=endpoint, sample_rate=0.0, shutdown_timeout=1.0, set_global=False)
    deadline = handle.processor.export_deadline
    assert deadline is not None
    for i in range(20):
        answer(f"q{i}")
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        handle.shutdown()
    assert deadline.cut  # the exporters were shut down at the deadline, ending their backoff
    ours = [r.getMessage() for r in caplog.records if r.name == "ragtrace"]
    assert ours == [
        f"ragtrace: 20 spans could not be exported to {endpoint} and were dropped "
        "(the shutdown budget ran out while the exporter was still retrying)"
    ]


def test_a_script_that_never_calls_shutdown_says_what_it_dropped_at_exit() -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    code = textwrap.dedent(
        f"""
        import ragtrace

        @ragtrace.rag
        def answer(q):
            return "Brasilia."

        ragtrace.configure(endpoint={endpoint!r}, sample_rate=0.0, shutdown_timeout=1.0, set_global=False)
        for i in range(7):
            answer(f"q{{i}}")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ragtrace: ")]
    assert lines == [
        f"ragtrace: 7 spans could not be exported to {endpoint} and were dropped "
        "(the shutdown budget ran out while the exporter was still retrying)"
    ]


def test_a_healthy_endpoint_is_never_cut_even_past_a_tiny_budget(caplog: pytest.LogCaptureFixture) -> None:
    receiver = Receiver()
    receiver.thread.start()
    try:
        handle = ragtrace.configure(endpoint=receiver.url, sample_rate=0.0, export_metrics=False, set_global=False)
        deadline = handle.processor.export_deadline
        assert deadline is not None
        for i in range(2000):
            answer(f"q{i}")
        with caplog.at_level(logging.WARNING, logger="ragtrace"):
            handle.shutdown(timeout_millis=50)  # the export's share is 10 ms: the exporter is busy, not stuck
        assert not deadline.cut
        assert len(receiver.spans()) == 2000
        assert [r for r in caplog.records if r.name == "ragtrace"] == []
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def test_spans_that_end_after_the_exit_drain_are_still_exported_to_a_healthy_endpoint() -> None:
    # Python drains at threading's exit hook, before it joins the app's other threads: spans they end
    # afterwards must still go out (the drain's deadline ends with the drain).
    receiver = Receiver()
    receiver.thread.start()
    try:
        handle = ragtrace.configure(
            endpoint=receiver.url, sample_rate=0.0, shutdown_timeout=0.5, export_metrics=False, set_global=False
        )
        deadline = handle.processor.export_deadline
        assert deadline is not None
        answer("before the drain")
        handle.processor._flush(500, exiting=True)  # what the exit hook runs
        answer("after the drain")
        handle.shutdown()
        assert not deadline.cut
        assert len(receiver.spans()) == 2
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def test_the_counting_exporter_counts_only_what_was_not_exported() -> None:
    class Refusing(InMemorySpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            return SpanExportResult.FAILURE

    ok, refusing = CountingSpanExporter(InMemorySpanExporter()), CountingSpanExporter(Refusing())
    assert ok.export([]) is SpanExportResult.SUCCESS and ok.dropped == 0
    assert refusing.export([object(), object()]) is SpanExportResult.FAILURE  # type: ignore[list-item]
    assert refusing.dropped == 2
