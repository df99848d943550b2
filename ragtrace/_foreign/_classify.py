"""Which part of a RAG call an ended span is, by whose conventions, and what it says: one dispatch over the shapes.

``role_of`` runs for every ended span, so it only looks up a few attributes and allocates nothing: most
spans (HTTP, database, ragtrace's own) are none of these and go on untouched. The readers run only for
the spans that matter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ragtrace import semconv
from ragtrace._foreign import _genai, _openinference, _openllmetry
from ragtrace._foreign._parts import (
    GEN_AI,
    GENERATION,
    NAMED,
    OPENINFERENCE,
    OPENLLMETRY,
    RERANK,
    RETRIEVAL,
    ROOT,
    Io,
    Retrieved,
)

Role = tuple[str, str]
"""``(role, shape)``: what the span is in the RAG call, and whose conventions say so."""

_OI_ROOT: Final = (ROOT, OPENINFERENCE)
_OI_RETRIEVAL: Final = (RETRIEVAL, OPENINFERENCE)
_OI_RERANK: Final = (RETRIEVAL, RERANK)
_OI_GENERATION: Final = (GENERATION, OPENINFERENCE)
_TL_ROOT: Final = (ROOT, OPENLLMETRY)
_TL_RETRIEVAL: Final = (RETRIEVAL, OPENLLMETRY)
_GA_ROOT: Final = (ROOT, GEN_AI)
_GA_RETRIEVAL: Final = (RETRIEVAL, GEN_AI)
_GA_GENERATION: Final = (GENERATION, GEN_AI)


def role_of(attributes: Mapping[str, Any]) -> Role | None:
    """The span's role and shape, or ``None`` for a span that is no part of a RAG call.

    ragtrace's own spans are none: its decorators hand their records over themselves, and win.
    """
    if semconv.RAGTRACE_ROLE in attributes:
        return None
    kind = attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    if kind is not None:
        if kind == semconv.SPAN_KIND_CHAIN:
            return _OI_ROOT
        if kind == semconv.SPAN_KIND_RETRIEVER:
            return _OI_RETRIEVAL
        if kind == semconv.SPAN_KIND_RERANKER:
            return _OI_RERANK
        return _OI_GENERATION if kind == semconv.SPAN_KIND_LLM else None
    traceloop = attributes.get(semconv.TRACELOOP_SPAN_KIND)
    if traceloop is not None:
        if traceloop == semconv.TRACELOOP_KIND_WORKFLOW:
            return _TL_ROOT
        if traceloop == semconv.TRACELOOP_KIND_TASK and _openllmetry.is_retrieval(attributes):
            return _TL_RETRIEVAL
        return None
    operation = attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if operation is None:
        return None
    if operation == semconv.GEN_AI_OPERATION_RETRIEVAL:
        return _GA_RETRIEVAL
    if operation == semconv.GEN_AI_OPERATION_INVOKE_WORKFLOW:
        return _GA_ROOT
    return _GA_GENERATION if operation in _genai.GENERATIONS else None


def retrieved(shape: str, attributes: Mapping[str, Any], start: int, read_length: int) -> Retrieved:
    """What a retrieval span of ``shape`` returned (texts cut at ``read_length``)."""
    if shape == OPENINFERENCE:
        return _openinference.retrieved(attributes, start, read_length)
    if shape == RERANK:
        return _openinference.reranked(attributes, start, read_length)
    if shape == OPENLLMETRY:
        return _openllmetry.retrieved(attributes, start, read_length)
    return _genai.retrieved(attributes, start, read_length)


def answer(shape: str, attributes: Mapping[str, Any]) -> str | None:
    """What a generation span of ``shape`` generated."""
    return _openinference.answer(attributes) if shape == OPENINFERENCE else _genai.answer(attributes)


def root_io(shape: str, attributes: Mapping[str, Any]) -> Io:
    """A root's own query and answer. A root a user's rule named may follow any shape: the first that
    finds either wins."""
    if shape == OPENINFERENCE:
        return _openinference.root_io(attributes)
    if shape == OPENLLMETRY:
        return _openllmetry.root_io(attributes)
    if shape == GEN_AI:
        return _genai.root_io(attributes)
    assert shape == NAMED
    for read in (_openinference.root_io, _openllmetry.root_io, _genai.root_io):
        io = read(attributes)
        if io.hidden or io.query is not None or io.answer is not None:
            return io
    return Io()
