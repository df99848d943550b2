"""The capture harness: ``capture()``, an in-memory ragtrace set-up for an app's own tests, and ``Captured``.

It builds on ``configure()`` as any app would (nothing in ``ragtrace._config`` knows about tests), so the
harness and the set-up never import each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from ragtrace import semconv
from ragtrace._config import configure
from ragtrace._exceptions import ConfigurationError
from ragtrace._handles import RagtraceHandle
from ragtrace._options import ScoringOptions
from ragtrace.testing._fake_judge import FakeJudge

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtrace.judges._base import Judge
    from ragtrace.metrics._base import Metric

__all__ = ["Captured", "capture"]


class Captured:
    """What ``capture()`` gives a test: the handle, the in-memory exporter and metric reader."""

    def __init__(self, handle: RagtraceHandle, exporter: InMemorySpanExporter, reader: InMemoryMetricReader) -> None:
        self.handle = handle
        self.exporter = exporter
        self.metric_reader = reader

    @property
    def tracer_provider(self) -> TracerProvider:
        """The provider the decorators use inside the ``with`` block."""
        return self.handle.tracer_provider

    def spans(self) -> list[ReadableSpan]:
        """Every exported span, after scoring everything queued (waits for the judge)."""
        self.handle.force_flush()
        return list(self.exporter.get_finished_spans())

    def rag_spans(self) -> list[ReadableSpan]:
        """The exported RAG spans (those that carry scores)."""
        return [s for s in self.spans() if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG]

    def scores(self) -> list[dict[str, float]]:
        """Per exported RAG span, its measured scores by metric name (from the evaluation events)."""
        result: list[dict[str, float]] = []
        for span in self.rag_spans():
            found: dict[str, float] = {}
            for event in span.events:
                attrs = event.attributes or {}
                name, value = (
                    attrs.get(semconv.GEN_AI_EVALUATION_NAME),
                    attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE),
                )
                if event.name == semconv.GEN_AI_EVALUATION_RESULT and isinstance(value, float):
                    found[str(name)] = value
            result.append(found)
        return result


@contextmanager
def capture(
    judge: Judge | None = None,
    *,
    metrics: Sequence[str | Metric] | None = None,
    sample_rate: float = 1.0,
    **options: Any,
) -> Iterator[Captured]:
    """An in-memory ragtrace set-up for an app's own tests; never touches the OpenTelemetry globals.

    Inside the ``with`` block the decorators trace to an in-memory exporter and every RAG call is
    scored (``sample_rate=1.0``) by ``judge`` (default: a ``FakeJudge`` with no scripts, whose steps
    fail, so pass one scripted for your metrics). ``options`` go to ``configure``; a ``scoring=``
    ``ScoringOptions`` may carry the judge, metrics and sampler instead (what it leaves unset is filled
    from the arguments here).
    """
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    scoring = options.pop("scoring", None) or ScoringOptions()
    if not isinstance(scoring, ScoringOptions):
        raise TypeError(f"capture(scoring=...) takes a ragtrace.ScoringOptions, not {type(scoring).__name__}")
    for name, given, held in (("judge", judge, scoring.judge), ("metrics", metrics, scoring.metrics)):
        if given is not None and held is not None:
            raise ConfigurationError(f"capture(): {name} given both as an argument and in scoring=; give it once")
    # The arguments here fill what the options leave unset, so the two never conflict in configure().
    scoring = replace(
        scoring,
        judge=scoring.judge if scoring.judge is not None else (judge if judge is not None else FakeJudge()),
        metrics=scoring.metrics if scoring.metrics is not None else metrics,
    )
    sampling: dict[str, Any] = {} if scoring.sampler is not None else {"sample_rate": sample_rate}
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    handle = configure(
        exporter=exporter,
        batch=False,
        scoring=scoring,
        metric_readers=[reader],
        set_global=False,
        **sampling,
        **options,
    )
    try:
        yield Captured(handle, exporter, reader)
    finally:
        handle.shutdown()
