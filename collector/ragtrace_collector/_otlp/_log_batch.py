"""What decoding a logs export produces: ``LogBatch``, the evaluation rows and what became of every record."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from ragtrace_collector._otlp._batch import Batch, Row

__all__ = ["LogBatch", "LogPart"]

_MAX_MESSAGES = 5

LogPart = tuple[Resource, InstrumentationScope, list[LogRecord]]
"""One resource's and scope's log records, before they become rows."""


@dataclass(slots=True)
class LogBatch:
    """The rows decoded from one logs export, and what became of each record: every record is exactly one of
    stored (an evaluation, its row in ``scores``), ignored (not an evaluation) or rejected (not decodable, or an
    evaluation without the span it evaluates or a metric name).

    Mutable on purpose: the decoder builds it up record by record; nothing changes it after ``decode_logs_*``.
    """

    scores: list[Row] = field(default_factory=list)
    """One ``scores`` row per evaluation record (``SOURCE_LOG``), in the order received."""
    ignored: int = 0
    """Records that are not ``gen_ai.evaluation.result`` events: counted, not stored, not an error."""
    rejected: int = 0
    """Records refused one by one (``partial_success.rejected_log_records``)."""
    errors: list[str] = field(default_factory=list)
    """Why records were rejected (the first few reasons)."""
    warnings: list[str] = field(default_factory=list)
    """What was stored other than sent (the first few), e.g. a score that is not a number, stored as none."""

    @property
    def stored(self) -> int:
        """Evaluation records stored (each is one row)."""
        return len(self.scores)

    @property
    def received(self) -> int:
        """Every record of the export: stored, ignored or rejected."""
        return self.stored + self.ignored + self.rejected

    @property
    def error_message(self) -> str:
        """``ExportLogsPartialSuccess.error_message``: the rejections' reasons and the warnings (empty: none)."""
        notes = "; ".join(self.errors + self.warnings)
        return f"rejected {self.rejected} log record(s): {notes}" if self.rejected else notes

    def reject(self, count: int, reason: str) -> None:
        """Count ``count`` records as rejected for ``reason`` (0: a reason that cost no record by itself)."""
        self.rejected += count
        if len(self.errors) < _MAX_MESSAGES:
            self.errors.append(reason)

    def warn(self, message: str) -> None:
        """Note something stored other than it was sent; the reply carries it, the record is not rejected."""
        if len(self.warnings) < _MAX_MESSAGES:
            self.warnings.append(message)

    def extend(self, other: LogBatch) -> None:
        """Append another batch's rows and counts to this one."""
        self.scores.extend(other.scores)
        self.ignored += other.ignored
        self.rejected += other.rejected
        self.errors.extend(other.errors[: _MAX_MESSAGES - len(self.errors)])
        self.warnings.extend(other.warnings[: _MAX_MESSAGES - len(self.warnings)])

    def store_batch(self) -> Batch:
        """What ``Store.write`` takes: the rows as ``Batch.log_scores`` (written with the log rule)."""
        return Batch(log_scores=list(self.scores))
