"""Joining a whole trace at once: the RAG calls among spans that all arrived (the collector's case).

The processor joins bottom-up as spans end (``_joiner``); a collector instead has every span of a trace
once the trace has settled, in any order, possibly from several processes. ``join_trace`` finds the same
RAG roots with the same per-shape readers and the same rules:

* a RAG root is a root-kind span (OpenInference CHAIN, OpenLLMetry workflow, GenAI ``invoke_workflow``) with
  a retrieval under it and no root-kind span above it (the topmost one is the call); spans of other kinds
  (an AGENT, an HTTP request) are transparent, so an agent's tool running a chain twice yields two roots;
* under a ragtrace RAG span (``ragtrace.role=rag``) nothing is a root: the decorators win;
* a retrieval's documents stand for those of retrievals nested in it; a rerank's output replaces its input;
* the answer, when the root has none, is the text of the generation under it that ended last;
* the record, or why there is none (``no_content``, ``app_error``), comes from ``_assemble.decide``.

Pure: no I/O, bounded by the number of spans given (each span is visited a bounded number of times).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragtrace import _capture, semconv
from ragtrace._foreign import _classify
from ragtrace._foreign._assemble import decide
from ragtrace._foreign._parts import GENERATION, RERANK, RETRIEVAL, ROOT

if TYPE_CHECKING:
    from ragtrace._foreign._parts import Retrieved
    from ragtrace._record import RagRecord


@dataclass(frozen=True, slots=True)
class SpanView:
    """What joining needs of one span: its ids, times (ns), whether its status is ERROR, its attributes."""

    span_id: str
    parent_id: str | None
    start: int
    end: int
    failed: bool
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Joined:
    """One RAG call found in a trace: its root span, and its record or why it has none (``NOT_SCORED_*``)."""

    root: SpanView
    record: RagRecord | None
    reason: str | None


def join_trace(spans: Sequence[SpanView], hidden: frozenset[str] = frozenset()) -> list[Joined]:
    """The RAG calls among ``spans`` (one trace), in the order their roots started. ``hidden``: shapes whose
    content switch is known to be off (the collector cannot know the app's, and relies on the placeholders
    and missing values the instrumentations leave)."""
    by_id = {s.span_id: s for s in spans}
    children: dict[str, list[SpanView]] = {}
    for span in spans:
        if span.parent_id is not None and span.parent_id in by_id and span.parent_id != span.span_id:
            children.setdefault(span.parent_id, []).append(span)
    roles = {s.span_id: _classify.role_of(s.attributes) for s in spans}
    joined = []
    for span in sorted(spans, key=lambda s: (s.start, s.span_id)):
        role = roles[span.span_id]
        if role is None or role[0] != ROOT or not _topmost(span, by_id, roles):
            continue
        retrieved, answer = _gather(span, children, roles)
        if not retrieved:
            continue  # a chain with no retrieval under it is no RAG call
        record, reason = decide(
            role[1], span.attributes, failed=span.failed, retrieved=retrieved, answer=answer, hidden=hidden
        )
        joined.append(Joined(span, record, reason))
    return joined


def _topmost(span: SpanView, by_id: Mapping[str, SpanView], roles: Mapping[str, Any]) -> bool:
    """True when no root-kind span and no ragtrace RAG span is above ``span`` in the trace."""
    seen = {span.span_id}
    parent = by_id.get(span.parent_id) if span.parent_id is not None else None
    while parent is not None and parent.span_id not in seen:  # ``seen``: ids that loop are no tree
        seen.add(parent.span_id)
        role = roles[parent.span_id]
        if (role is not None and role[0] == ROOT) or _own_rag(parent):
            return False
        parent = by_id.get(parent.parent_id) if parent.parent_id is not None else None
    return not _own_rag(span)


def _own_rag(span: SpanView) -> bool:
    return span.attributes.get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG


def _gather(
    root: SpanView, children: Mapping[str, list[SpanView]], roles: Mapping[str, Any]
) -> tuple[list[Retrieved], str | None]:
    """The retrieval results under ``root`` (a retrieval's own result stands for those nested in it) and the
    text of the generation that ended last."""
    read_length = _capture.get_settings().read_length
    retrieved: list[Retrieved] = []
    answer: str | None = None
    answer_end = -1
    seen = {root.span_id}
    stack = [(child, False) for child in children.get(root.span_id, ())]
    while stack:
        span, inside_retrieval = stack.pop()
        if span.span_id in seen:
            continue
        seen.add(span.span_id)
        role = roles[span.span_id]
        if role is not None:
            kind, shape = role
            if kind == RETRIEVAL and not inside_retrieval:
                retrieved.append(_classify.retrieved(shape, span.attributes, span.start, read_length))
                inside_retrieval = shape != RERANK
            elif kind == GENERATION and span.end >= answer_end:
                text = _classify.answer(shape, span.attributes)
                if text is not None:
                    answer, answer_end = text, span.end
        stack.extend((child, inside_retrieval) for child in children.get(span.span_id, ()))
    return retrieved, answer
