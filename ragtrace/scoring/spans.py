"""Build the spans the scorer forwards: a scored copy of an ended span (``safe_copy`` never fails to give one),
and the carrier span.

Ended spans are immutable and the SDK's private fields are off limits, so a scored span is a *new*
``ReadableSpan`` built from the original's public fields plus the extra attributes and events. It has
the same trace id, span id, parent, times, status, links and resource, so a backend sees one span.
The only thing the copy cannot carry over is the SDK's count of dropped attributes/events/links (it
is not settable from public API); the copy reports 0.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.util.types import AttributeValue

from ragtrace import semconv, wire

Attributes = Mapping[str, AttributeValue]

_log = logging.getLogger(__name__)


def scored_copy(
    span: ReadableSpan,
    attributes: Attributes,
    events: Sequence[Event] = (),
) -> ReadableSpan:
    """Return a copy of ``span`` with ``attributes`` added (they win over the original's) and ``events`` appended."""
    merged = dict(span.attributes or {})
    merged.update(attributes)
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=merged,
        events=(*span.events, *events),
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def safe_copy(
    span: ReadableSpan,
    attributes: Mapping[str, AttributeValue],
    events: Sequence[Event] = (),
    decision: str = semconv.DECISION_TIMEOUT,
) -> tuple[ReadableSpan, str]:
    """``scored_copy`` and ``decision``; never raises.

    When the copy cannot be built (a bad attribute value, say) the span still has to leave: as a
    copy carrying only decision ``error`` and the exception's type, or, if even that fails, as the
    original. The decision returned is the one the exported span stands for.
    """
    try:
        return scored_copy(span, attributes, events), decision
    except Exception as exc:
        _log.warning("ragtrace: could not build the scored span: %s: %s", type(exc).__name__, exc)
        try:
            error = {semconv.EVAL_DECISION: semconv.DECISION_ERROR, semconv.EVAL_ERROR_TYPE: type(exc).__name__}
            return scored_copy(span, error), semconv.DECISION_ERROR
        except Exception:
            return span, semconv.DECISION_ERROR


def carrier_span(
    target: ReadableSpan,
    attributes: Attributes,
    events: Sequence[Event],
    *,
    start_time: int,
    end_time: int,
) -> ReadableSpan:
    """Return a new EVALUATOR span that brings late scores for ``target``.

    It lives in the target's trace as the target's child (so trace views show it under the RAG span)
    and carries one span link to the target plus the target's ids as attributes, so backends that
    ignore links can still join it. ``attributes`` and ``events`` are the scores, as on a scored copy.
    """
    target_context = target.context
    if target_context is None:
        raise ValueError("the target span has no span context")
    context = trace_api.SpanContext(
        trace_id=target_context.trace_id,
        span_id=_new_span_id(),
        is_remote=False,
        trace_flags=target_context.trace_flags,
        trace_state=target_context.trace_state,
    )
    merged = wire.carrier_attributes(
        trace_api.format_span_id(target_context.span_id), trace_api.format_trace_id(target_context.trace_id)
    )
    merged.update(attributes)
    return ReadableSpan(
        name=semconv.CARRIER_SPAN_NAME,
        context=context,
        parent=target_context,
        resource=target.resource,
        attributes=merged,
        events=tuple(events),
        links=(trace_api.Link(target_context),),
        kind=trace_api.SpanKind.INTERNAL,
        status=trace_api.Status(trace_api.StatusCode.UNSET),
        start_time=start_time,
        end_time=end_time,
        instrumentation_scope=target.instrumentation_scope,
    )


def _new_span_id() -> int:
    # Same rule as the SDK's RandomIdGenerator: 64 random bits, never the invalid id 0.
    span_id = random.getrandbits(64)
    while span_id == trace_api.INVALID_SPAN_ID:
        span_id = random.getrandbits(64)
    return span_id
