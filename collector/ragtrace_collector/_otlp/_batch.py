"""What decoding produces: a ``Batch`` of store rows and the spans it rejected, and ``OtlpDecodeError``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

Row = dict[str, Any]

SOURCE_APP = "app"
"""``scores.source`` of a score the app put on the RAG span itself."""
SOURCE_CARRIER = "carrier"
"""``scores.source`` of a late score brought by a carrier (EVALUATOR) span."""
SOURCE_COLLECTOR = "collector"
"""``scores.source`` of a score computed by the collector's server-side scoring."""
SOURCE_LOG = "log"
"""``scores.source`` of a score that so far arrived only as an OTLP log record (``_logs``): the span's own
evaluation of the same metric, when it arrives, takes the row over (``_store._writes``)."""

_MAX_REJECTION_MESSAGES = 5


class OtlpDecodeError(ValueError):
    """The body is not an OTLP trace export at all (broken wire format, not JSON, wrong shape)."""


@dataclass(slots=True)
class Batch:
    """The rows decoded from one export request, ready for ``Store.write`` (one transaction).

    Mutable on purpose: the decoder builds it up span by span; nothing changes it after ``decode_*`` returns.
    """

    spans: list[Row] = field(default_factory=list)
    rag_records: list[Row] = field(default_factory=list)
    scores: list[Row] = field(default_factory=list)
    rejected: int = 0
    """Spans that could not be decoded and were not stored."""
    errors: list[str] = field(default_factory=list)
    """Why spans were rejected (the first few reasons), for the partial-success message."""
    pending: list[Row] = field(default_factory=list)
    """One row per span that may be part of a RAG call another instrumentation traced (``_join``): its trace
    waits in ``join_pending`` until it settles. Written in the same transaction as the spans."""
    settled: list[str] = field(default_factory=list)
    """Trace ids whose ``join_pending`` rows go (joined, or dropped to stay bounded), in the same transaction
    as the records joining wrote."""
    log_scores: list[Row] = field(default_factory=list)
    """``scores`` rows read from evaluation log records (``decode_logs_*``): written with the log rule, which
    never overwrites what a span brought for the same ``(span_id, metric)`` (``_store._writes``)."""

    @property
    def error_message(self) -> str:
        """One line for ``ExportTracePartialSuccess.error_message`` (empty when nothing was rejected)."""
        if not self.rejected:
            return ""
        return f"rejected {self.rejected} span(s): " + "; ".join(self.errors)

    def reject(self, count: int, reason: str) -> None:
        """Count ``count`` spans as rejected for ``reason``."""
        self.rejected += count
        if len(self.errors) < _MAX_REJECTION_MESSAGES:
            self.errors.append(reason)

    def extend(self, other: Batch) -> None:
        """Append another batch's rows and rejections to this one."""
        self.spans.extend(other.spans)
        self.rag_records.extend(other.rag_records)
        self.scores.extend(other.scores)
        self.pending.extend(other.pending)
        self.settled.extend(other.settled)
        self.log_scores.extend(other.log_scores)
        for reason in other.errors:
            if len(self.errors) < _MAX_REJECTION_MESSAGES:
                self.errors.append(reason)
        self.rejected += other.rejected


Part = tuple[Resource, InstrumentationScope, list[Span]]
"""One resource's and scope's spans, before they become rows."""


def short(exc: BaseException) -> str:
    """An exception's message, cut for a rejection reason."""
    text = str(exc)
    return text if len(text) <= 160 else text[:157] + "..."
