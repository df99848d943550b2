"""The scored copy and the carrier span: built from public fields, faithful, and encodable as OTLP."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragtrace import semconv
from ragtrace.scoring.spans import carrier_span, scored_copy


def ended_span() -> ReadableSpan:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with (
        tracer.start_as_current_span("outer"),
        tracer.start_as_current_span(
            "rag", kind=trace.SpanKind.SERVER, attributes={"a": 1, semconv.EVAL_DECISION: "placeholder"}
        ) as sp,
    ):
        sp.add_event("seen", {"x": "y"})
        sp.add_link(trace.SpanContext(1, 2, False))
        sp.set_status(trace.Status(trace.StatusCode.ERROR, "bad"))
    provider.shutdown()
    return next(s for s in exporter.get_finished_spans() if s.name == "rag")


def decode(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest.FromString(encode_spans(spans).SerializeToString())


def test_scored_copy_keeps_everything_and_adds_scores() -> None:
    original = ended_span()
    event = Event(semconv.GEN_AI_EVALUATION_RESULT, {semconv.GEN_AI_EVALUATION_NAME: "faithfulness"})
    copy = scored_copy(original, {semconv.EVAL_DECISION: "evaluated", "ragtrace.eval.faithfulness": 0.5}, [event])
    assert copy is not original
    for field in ("name", "context", "parent", "kind", "start_time", "end_time", "resource", "links"):
        assert getattr(copy, field) == getattr(original, field), field
    assert copy.status.status_code == original.status.status_code
    assert copy.status.description == "bad"
    assert copy.instrumentation_scope == original.instrumentation_scope
    assert copy.attributes == {"a": 1, semconv.EVAL_DECISION: "evaluated", "ragtrace.eval.faithfulness": 0.5}
    assert [e.name for e in copy.events] == ["seen", semconv.GEN_AI_EVALUATION_RESULT]
    # The original is untouched: ended spans are immutable.
    assert original.attributes == {"a": 1, semconv.EVAL_DECISION: "placeholder"}
    assert [e.name for e in original.events] == ["seen"]


def test_scored_copy_encodes_to_otlp_with_the_scores() -> None:
    original = ended_span()
    copy = scored_copy(original, {"ragtrace.eval.faithfulness": 0.25})
    request = decode([copy])
    (otlp,) = request.resource_spans[0].scope_spans[0].spans
    assert otlp.span_id == original.context.span_id.to_bytes(8, "big")
    assert otlp.parent_span_id == original.parent.span_id.to_bytes(8, "big")
    values = {kv.key: kv.value for kv in otlp.attributes}
    assert values["ragtrace.eval.faithfulness"].double_value == 0.25
    assert len(otlp.links) == 1 and len(otlp.events) == 1


def test_carrier_span_is_an_evaluator_linked_to_its_target() -> None:
    target = ended_span()
    carrier = carrier_span(target, {"ragtrace.eval.faithfulness": 0.9}, [], start_time=10, end_time=20)
    attrs = carrier.attributes or {}
    assert carrier.name == semconv.CARRIER_SPAN_NAME
    assert attrs[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_EVALUATOR
    assert attrs[semconv.EVAL_TARGET_SPAN_ID] == trace.format_span_id(target.context.span_id)
    assert attrs[semconv.EVAL_TARGET_TRACE_ID] == trace.format_trace_id(target.context.trace_id)
    assert attrs["ragtrace.eval.faithfulness"] == 0.9
    assert carrier.context.trace_id == target.context.trace_id
    assert carrier.context.span_id not in (0, target.context.span_id)
    assert carrier.parent == target.context
    assert [link.context for link in carrier.links] == [target.context]
    assert (carrier.start_time, carrier.end_time) == (10, 20)
    assert carrier.resource == target.resource
    (otlp,) = decode([carrier]).resource_spans[0].scope_spans[0].spans
    assert otlp.links[0].span_id == target.context.span_id.to_bytes(8, "big")
