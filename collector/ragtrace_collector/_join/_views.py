"""Between the store's rows and ragtrace's whole-trace joiner: a stored span as a ``SpanView``, a joined RAG
call as a ``rag_records`` row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from ragtrace import semconv
from ragtrace._foreign import Joined, SpanView
from ragtrace_collector._otlp import Row, route_of
from ragtrace_collector._otlp._values import dumps, int_or_none, number, text

__all__ = ["record_row", "view"]


def view(row: Mapping[str, Any]) -> SpanView:
    """A stored span (``spans`` row) as the joiner reads it."""
    attributes = orjson.loads(row["attributes"]) if row["attributes"] else {}
    return SpanView(
        span_id=row["span_id"],
        parent_id=row["parent_span_id"],
        start=int(row["start_ns"] or 0),
        end=int(row["end_ns"] or 0),
        failed=row["status_code"] == Status.STATUS_CODE_ERROR,
        attributes=attributes if isinstance(attributes, dict) else {},
    )


def record_row(joined: Joined, span: Mapping[str, Any], trace_id: str) -> Row:
    """The ``rag_records`` row of a joined RAG call; ``span``: its root's stored row.

    The app's decision when its processor decided (it puts the decision on the root); else undecided
    (``decision`` NULL, for server-side scoring) when there is a record, ``not_scored`` when there is none.
    """
    attributes = joined.root.attributes
    record = joined.record
    app_decision = attributes.get(semconv.EVAL_DECISION)
    if isinstance(app_decision, str):
        decision: str | None = app_decision  # the app's processor joined and decided it already
    else:
        decision = semconv.DECISION_NOT_SCORED if record is None else None
    chunks = [
        {"id": c.id, "content": c.text, "score": c.score, "metadata": dict(c.metadata)}
        for c in (record.chunks if record is not None else ())
    ]
    return {
        "span_id": joined.root.span_id,
        "trace_id": trace_id,
        "service": span["service"],
        "route": route_of(attributes, str(span["name"])),
        "time_ns": joined.root.end,
        "query": record.query if record is not None else None,
        "answer": record.answer if record is not None else None,
        "chunks": dumps(chunks),
        "reference": None,
        "decision": decision,
        "judge": text(attributes.get(semconv.EVAL_JUDGE)),
        "calls": int_or_none(attributes.get(semconv.EVAL_JUDGE_CALLS)),
        "prompt_tokens": int_or_none(attributes.get(semconv.EVAL_JUDGE_PROMPT_TOKENS)),
        "completion_tokens": int_or_none(attributes.get(semconv.EVAL_JUDGE_COMPLETION_TOKENS)),
        "seconds": number(attributes.get(semconv.EVAL_SECONDS)),
        "reason": text(attributes.get(semconv.EVAL_NOT_SCORED_REASON)) or joined.reason,
    }
