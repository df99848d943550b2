"""configure()/instrument() handles: what a shutdown puts back, what a failed call leaves behind, one
ragtrace per provider, and the one-global-provider limit of OpenTelemetry."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import _capture, semconv
from ragtrace.environment_variables import ConfigurationError

CARD = "my card is 4111-1111-1111-1111"


@ragtrace.rag
def answer(question: str) -> str:
    return "call me at 555-0100"


def configure(exporter: InMemorySpanExporter | None = None, **kwargs: object) -> ragtrace.RagtraceHandle:
    return ragtrace.configure(
        exporter=exporter or InMemorySpanExporter(),
        batch=False,
        export_metrics=False,
        sample_rate=0.0,
        set_global=False,
        **kwargs,  # type: ignore[arg-type]
    )


def test_shutting_down_an_older_handle_keeps_the_newer_privacy_settings() -> None:
    before = _capture.get_settings()
    old = configure()
    exporter = InMemorySpanExporter()
    new = configure(exporter, capture_content=False, redact=lambda s: "[REDACTED]")
    try:
        old.shutdown()  # retire the previous set-up; ``new`` stays in force
        answer(CARD)
        (span,) = exporter.get_finished_spans()
        attrs = span.attributes or {}
        assert semconv.INPUT_VALUE not in attrs and semconv.OUTPUT_VALUE not in attrs
        assert _capture.get_tracer_provider() is new.tracer_provider
    finally:
        new.shutdown()
    # The newest handle gone, what was in force before both comes back (not the dead old handle's).
    assert _capture.get_settings() is before
    assert _capture.get_tracer_provider() is not old.tracer_provider


def test_shutting_down_the_newest_handle_restores_the_one_before() -> None:
    first = configure(capture_content=False)
    second = configure()
    second.shutdown()
    try:
        assert _capture.get_settings().capture_content is False
        assert _capture.get_tracer_provider() is first.tracer_provider
    finally:
        first.shutdown()


@pytest.mark.parametrize(
    "wrong",
    [
        {"sample_rate": 2.0},  # the sampler
        {"metrics": ["no_such_metric"]},  # the processor
        {"prices": {"my-model": 0.2}},  # a price
    ],
)
def test_a_failed_configure_leaves_no_thread_behind(wrong: dict[str, object]) -> None:
    before = set(threading.enumerate())
    with pytest.raises(ConfigurationError):
        ragtrace.configure(service_name="x", endpoint="http://127.0.0.1:9", set_global=False, **wrong)  # type: ignore[arg-type]
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []


def test_a_second_instrument_of_one_provider_is_a_configuration_error() -> None:
    provider = TracerProvider()
    first = ragtrace.instrument(provider, SimpleSpanProcessor(InMemorySpanExporter()), sample_rate=0.0)
    try:
        with pytest.raises(ConfigurationError, match="once per provider"):
            ragtrace.instrument(provider, SimpleSpanProcessor(InMemorySpanExporter()), sample_rate=0.0)
    finally:
        first.shutdown()
    again = ragtrace.instrument(provider, SimpleSpanProcessor(InMemorySpanExporter()), sample_rate=0.0)
    again.shutdown()


def test_a_second_global_configure_warns_and_the_decorators_follow_the_live_handle() -> None:
    # OpenTelemetry sets the global provider once per process: a child process keeps this one's clean.
    code = textwrap.dedent(
        """
        import warnings
        import ragtrace
        from opentelemetry import trace
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        @ragtrace.rag
        def answer(q):
            return "Brasilia."

        first, second = InMemorySpanExporter(), InMemorySpanExporter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            h1 = ragtrace.configure(exporter=first, batch=False, export_metrics=False, sample_rate=0.0)
            h1.shutdown()
            h2 = ragtrace.configure(exporter=second, batch=False, export_metrics=False, sample_rate=0.0)
        answer("What is the capital of Brazil?")
        print(len(caught), caught[0].category.__name__ if caught else "-", "set_global=False" in str(caught[0].message))
        print(trace.get_tracer_provider() is h1.tracer_provider)
        print([s.name for s in first.get_finished_spans()], [s.name for s in second.get_finished_spans()])
        h2.shutdown()
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.splitlines() == ["1 RuntimeWarning True", "True", "[] ['answer']"]
