"""A dead OTLP endpoint holds neither shutdown() nor the exit past the export's share of the budget,
and what was dropped is said once (real OTLP/HTTP exporters against a closed port on 127.0.0.1)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import warnings

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
        "(the shutdown budget ran out while the exporter was still retrying); nothing answered there: "
        "start the collector (ragtrace-collector serve --db ragtrace.db) or check configure(endpoint=...) / "
        "OTEL_EXPORTER_OTLP_ENDPOINT"
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
        "(the shutdown budget ran out while the exporter was still retrying); nothing answered there: "
        "start the collector (ragtrace-collector serve --db ragtrace.db) or check configure(endpoint=...) / "
        "OTEL_EXPORTER_OTLP_ENDPOINT"
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


def test_a_provider_shut_down_directly_ends_the_watchdog_without_cutting() -> None:
    # The app may shut its TracerProvider down itself (or the provider's atexit hook does): the
    # processor's shutdown ends the watchdog, which must not fire later at the metric exporter.
    receiver = Receiver()
    receiver.thread.start()
    try:
        handle = ragtrace.configure(endpoint=receiver.url, sample_rate=0.0, set_global=False)
        deadline = handle.processor.export_deadline
        assert deadline is not None
        answer("q")
        handle.tracer_provider.shutdown()
        deadline._thread.join(10)
        assert not deadline._thread.is_alive() and not deadline.cut
        assert len(receiver.spans()) == 1
        handle.shutdown()
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_has_a_watchdog_of_its_own() -> None:
    handle = ragtrace.configure(
        endpoint=f"http://127.0.0.1:{closed_port()}", sample_rate=0.0, export_metrics=False, set_global=False
    )
    deadline = handle.processor.export_deadline
    assert deadline is not None
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        signal.alarm(20)
        try:
            os.close(read_fd)
            os.write(write_fd, b"alive" if deadline._thread.is_alive() else b"dead")
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    report = os.read(read_fd, 16)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    handle.shutdown(timeout_millis=500)
    assert os.waitstatus_to_exitcode(status) == 0
    assert report == b"alive"
