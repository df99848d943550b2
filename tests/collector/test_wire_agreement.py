"""The app and the collector write the same evaluation on the wire: one codec (``ragtrace.wire``) for both.

The same outcome (scores, cost, judge, seconds) becomes a carrier span in the app (late scores) and in the
collector (server-side scores); both must carry identical attributes and events, and the collector must
read back from either exactly the score rows it stores for its own results.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from ragtrace_collector._carrier import carrier_export, encode, score_rows
from ragtrace_collector._otlp import attributes

from ragtrace import semconv, wire
from ragtrace.metrics import Cost, Score, SuiteResult
from ragtrace.metrics._base import DETAIL_METHOD, REASON_JUDGE_ERROR, REASON_NEEDS_REFERENCE
from ragtrace.scoring.jobs import outcome_of
from ragtrace.scoring.spans import carrier_span

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0x00F067AA0BA902B7
SECONDS = 1.25

SCORES = {
    "faithfulness": Score(
        "faithfulness", 0.75, label="pass", explanation="3 of 4 claims supported", details={DETAIL_METHOD: "nli"}
    ),
    # A value with a reason beside it: the reason is not written (it only explains an absent value).
    "hallucination": Score("hallucination", 0.0, direction="lower", reason="no_claims"),
    "context_recall": Score.absent(
        "context_recall", "skipped", REASON_NEEDS_REFERENCE, explanation="needs a reference"
    ),
    "context_relevance": Score.absent(
        "context_relevance", "error", REASON_JUDGE_ERROR, explanation="timeout: judge", error_type="timeout"
    ),
}
COST = Cost(chat_calls=3, embedding_calls=1, prompt_tokens=420, completion_tokens=37)


def _target() -> ReadableSpan:
    context = trace_api.SpanContext(TRACE_ID, SPAN_ID, is_remote=False)
    return ReadableSpan(name="rag", context=context, resource=Resource.create({semconv.SERVICE_NAME: "svc"}))


def _app_carrier(scores: dict[str, Score]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    outcome = outcome_of(list(scores.values()), COST, "fake")
    span = carrier_span(
        _target(),
        wire.finished(outcome.attributes, outcome.decision, SECONDS),
        outcome.events,
        start_time=1,
        end_time=2,
    )
    return dict(span.attributes or {}), [(e.name, dict(e.attributes or {})) for e in span.events]


def _collector_carrier(scores: dict[str, Score]) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    row = {
        "span_id": trace_api.format_span_id(SPAN_ID),
        "trace_id": trace_api.format_trace_id(TRACE_ID),
        "service": "svc",
    }
    result = SuiteResult(scores, cost=COST, judge="fake", seconds=SECONDS, calls=COST.calls)
    request = ExportTraceServiceRequest.FromString(carrier_export(row, result))
    (span,) = request.resource_spans[0].scope_spans[0].spans
    return attributes(span.attributes), [(e.name, attributes(e.attributes)) for e in span.events]


def test_app_and_collector_write_identical_carrier_attributes_and_events() -> None:
    app_attributes, app_events = _app_carrier(SCORES)
    collector_attributes, collector_events = _collector_carrier(SCORES)
    assert collector_attributes == app_attributes
    assert collector_events == app_events
    # What the collector used to lack, and what it used to write wrongly:
    assert app_attributes[semconv.eval_method("faithfulness")] == "nli"
    assert app_attributes[semconv.EVAL_JUDGE_PROMPT_TOKENS] == 420
    assert app_attributes[semconv.EVAL_JUDGE_COMPLETION_TOKENS] == 37
    assert semconv.eval_reason("hallucination") not in app_attributes
    assert app_attributes[semconv.eval_reason("context_recall")] == REASON_NEEDS_REFERENCE


def test_all_metrics_failing_is_decision_error_with_the_error_type_on_both_sides() -> None:
    failed = {"context_relevance": SCORES["context_relevance"]}
    app_attributes, _ = _app_carrier(failed)
    collector_attributes, _ = _collector_carrier(failed)
    assert collector_attributes == app_attributes
    assert app_attributes[semconv.EVAL_DECISION] == semconv.DECISION_ERROR
    assert app_attributes[semconv.EVAL_ERROR_TYPE] == "timeout"


def test_the_collector_stores_what_it_would_read_back_from_the_wire() -> None:
    encoded = encode(SuiteResult(SCORES, cost=COST, judge="fake"))
    row = {"span_id": "ab" * 8, "trace_id": "cd" * 16, "service": "svc", "route": "/ask", "time_ns": 5}
    stored = {r["metric"]: {k: r[k] for k in wire.FIELDS} for r in score_rows(row, encoded)}
    decoded = wire.decode(encoded.attributes, encoded.events)
    assert stored == {metric: {k: fields.get(k) for k in wire.FIELDS} for metric, fields in decoded.items()}
    assert stored["faithfulness"] == {
        "value": 0.75,
        "label": "pass",
        "explanation": "3 of 4 claims supported",
        "reason": None,
        "error_type": None,
    }
    assert stored["context_recall"]["reason"] == REASON_NEEDS_REFERENCE
    assert stored["context_relevance"]["error_type"] == "timeout"
