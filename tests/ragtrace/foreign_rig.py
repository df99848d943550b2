"""A pipeline for tests of other instrumentations' RAG calls: a TracerProvider whose only processor is a
``ScoringSpanProcessor`` in front of an in-memory exporter, and a metric that keeps the records it scores."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace._record import RagRecord
from ragtrace.metrics._base import Score
from ragtrace.scoring.processor import ScoringSpanProcessor


@dataclass
class Seen:
    """A metric that scores every record 1.0 and keeps what it was given (the record scoring saw)."""

    name: str = "seen"
    direction: str = "higher"
    needs: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()
    records: list[RagRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def score(self, record: RagRecord, judge: Any) -> Score:
        with self.lock:
            self.records.append(record)
        return Score(self.name, 1.0, label="seen")


class NoJudge:
    name = "fake:none"
    capabilities: frozenset[str] = frozenset()

    async def aclose(self) -> None:
        return None


@dataclass
class Pipeline:
    provider: TracerProvider
    processor: ScoringSpanProcessor
    exporter: InMemorySpanExporter
    metric: Seen

    def exported(self) -> list[ReadableSpan]:
        """Every span exported so far, after a flush; fails when one left twice."""
        assert self.processor.force_flush(20_000)
        spans = list(self.exporter.get_finished_spans())
        twice = [n for n, c in Counter(s.context.span_id for s in spans).items() if c > 1]
        assert twice == [], "a span was exported twice"
        return spans

    def roots(self) -> list[ReadableSpan]:
        """The exported spans that carry a scoring decision (the RAG roots), in the order they ended."""
        return [s for s in self.exported() if semconv.EVAL_DECISION in (s.attributes or {})]


class Switch(SpanProcessor):
    """The one processor of a provider an instrumentation keeps for the whole module (some cannot be
    instrumented twice in a process): each test points it at a fresh scoring processor."""

    def __init__(self) -> None:
        self.target: SpanProcessor | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.target is not None:
            self.target.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self.target is not None:
            self.target.on_end(span)


def pipeline(provider: TracerProvider | None = None, **kwargs: Any) -> Pipeline:
    """A fresh pipeline; ``kwargs`` go to the processor (``sample_rate`` 1.0 unless given). With ``provider``
    (whose processor is a ``Switch``), the switch is pointed at the new processor instead of a new provider."""
    metric = Seen()
    exporter = InMemorySpanExporter()
    kwargs.setdefault("sample_rate", 1.0)
    processor = ScoringSpanProcessor(SimpleSpanProcessor(exporter), judge=NoJudge(), metrics=[metric], **kwargs)
    if provider is None:
        provider = TracerProvider()
        provider.add_span_processor(processor)
    else:
        switches = [p for p in provider._active_span_processor._span_processors if isinstance(p, Switch)]
        switches[0].target = processor
    return Pipeline(provider, processor, exporter, metric)


def decision(span: ReadableSpan) -> tuple[Any, Any]:
    """``(decision, not-scored reason)`` of an exported span."""
    attributes = span.attributes or {}
    return attributes.get(semconv.EVAL_DECISION), attributes.get(semconv.EVAL_NOT_SCORED_REASON)


def texts(record: RagRecord) -> list[str]:
    return [c.text for c in record.chunks]


def shut(p: Pipeline) -> Iterator[Pipeline]:
    """Yield the pipeline, then shut its provider down (a fixture body)."""
    try:
        yield p
    finally:
        p.provider.shutdown()
