"""Log records to rows: each ``gen_ai.evaluation.result`` record becomes one ``scores`` row, keyed like the span
event it stands for; any other record is counted and ignored; a bad record is rejected alone.

An evaluation record is the GenAI conventions' log-based event: event name ``gen_ai.evaluation.result``, the
trace and span id of the evaluated span, and the same attributes as the span event (``gen_ai.evaluation.name``,
``.score.value``, ``.score.label``, ``gen_ai.evaluation.explanation``, ``error.type`` and ragtrace's own, read by
``ragtrace.wire.decode_scores``, the codec the span path uses). Its row is the span event's row of the same span
(``_score_row``): ``(span_id, metric)`` from the record's span id and the evaluation's name, the service from
the resource, the route left to the store (it takes the span's RAG record's), the time the record's, and source
``log``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from ragtrace import semconv, wire
from ragtrace_collector._otlp._batch import SOURCE_LOG, Row, short
from ragtrace_collector._otlp._log_batch import LogBatch, LogPart
from ragtrace_collector._otlp._score_row import score_row
from ragtrace_collector._otlp._values import attributes, text

__all__ = ["log_rows_from_parts", "scope_log_rows"]

_MAX_SQLITE_INTEGER = 2**63 - 1


class _Rejected(ValueError):
    """An evaluation record that cannot become a row; its message is the rejection reason."""


def log_rows_from_parts(parts: Iterable[LogPart], batch: LogBatch, received_ns: int) -> LogBatch:
    """Append the rows of every part to ``batch`` and return it."""
    for resource, scope, records in parts:
        batch.extend(scope_log_rows(resource, scope, records, received_ns))
    return batch


def scope_log_rows(
    resource: Resource, scope: InstrumentationScope, records: Iterable[LogRecord], received_ns: int
) -> LogBatch:
    """The rows of one scope's records; a record that cannot be converted is rejected alone."""
    batch = LogBatch()
    try:
        service = attributes(resource.attributes).get(semconv.SERVICE_NAME)
    except Exception as exc:
        # A resource we cannot read costs the service name, not the evaluations.
        batch.reject(0, f"resource not convertible (records kept without a service): {short(exc)}")
        service = None
    service = service if isinstance(service, str) else None
    for record in records:
        if _event_name(record) != semconv.GEN_AI_EVALUATION_RESULT:
            batch.ignored += 1
            continue
        try:
            batch.scores.append(_evaluation_row(record, service, received_ns, batch))
        except _Rejected as exc:
            batch.reject(1, str(exc))
        except Exception as exc:
            # A bug or an input we did not foresee costs this record only, never the export.
            where = record.span_id.hex() or "?"
            batch.reject(1, f"log record of span {where}: not convertible: {type(exc).__name__}: {short(exc)}")
    return batch


def _evaluation_row(record: LogRecord, service: str | None, received_ns: int, batch: LogBatch) -> Row:
    if not (len(record.trace_id) == 16 and any(record.trace_id) and len(record.span_id) == 8 and any(record.span_id)):
        # Without the evaluated span there is nothing to key the score on (and nothing to join it to).
        raise _Rejected(
            f"evaluation log record with trace id {record.trace_id.hex() or '?'} and span id "
            f"{record.span_id.hex() or '?'}: needs the evaluated span's ids (16 and 8 non-zero bytes)"
        )
    span_id = record.span_id.hex()
    attrs = attributes(record.attributes)
    event = {"name": semconv.GEN_AI_EVALUATION_RESULT, "attributes": attrs}
    decoded = wire.decode_scores((), (event,), text=text)
    if len(decoded) != 1:
        raise _Rejected(
            f"evaluation log record of span {span_id}: {semconv.GEN_AI_EVALUATION_NAME} must be a non-empty "
            f"string without dots, not {_shown(attrs.get(semconv.GEN_AI_EVALUATION_NAME))}"
        )
    [(metric, fields)] = decoded.items()
    sent = attrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)
    if sent is not None and fields.get(wire.VALUE) is None:
        # As from a span event: a value that is not a finite number is no score; the rest of it is kept.
        batch.warn(
            f"span {span_id}, {metric}: {semconv.GEN_AI_EVALUATION_SCORE_VALUE} {_shown(sent)} is not a finite "
            "number: stored without a value"
        )
    return score_row(
        metric,
        fields,
        span_id=span_id,
        trace_id=record.trace_id.hex(),
        service=service,
        route=None,
        time_ns=_time_ns(record, received_ns),
        source=SOURCE_LOG,
    )


def _time_ns(record: LogRecord, received_ns: int) -> int:
    """When the evaluation happened: the record's time, else when it was observed, else when it arrived (OTLP
    leaves both optional; fixed64 on the wire, signed 64-bit in SQLite, so a time past 2262 is no time)."""
    for candidate in (record.time_unix_nano, record.observed_time_unix_nano):
        if 0 < candidate <= _MAX_SQLITE_INTEGER:
            return candidate
    return received_ns


def _shown(value: Any) -> str:
    """A value for a message, cut short."""
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _event_name(record: LogRecord) -> str:
    """The record's event name: the ``event_name`` field, else the ``event.name`` attribute that SDKs and
    bridges older than the field write instead."""
    if record.event_name:
        return str(record.event_name)
    for item in record.attributes:
        if item.key == semconv.EVENT_NAME and item.value.HasField("string_value"):
            return str(item.value.string_value)
    return ""
