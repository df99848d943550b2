"""The state of one RAG call, shared with everything that runs under it, and ``record()`` that sets it.

A RAG call keeps a ``RagState`` in the OpenTelemetry context (under ``RAG_KEY``), so retrievers,
generations and ``record()`` that run under it, in any task or thread the context reaches, add to it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context

from ragtrace._capture._capture_settings import CaptureSettings
from ragtrace._capture._text import prepare_text
from ragtrace._chunks import CapturedChunk, Normalized, normalize_chunks, to_text

RAG_KEY = otel_context.create_key("ragtrace.rag_call")

Text = tuple[str, bool]
"""A prepared text and whether it was cut."""


class RagState:
    """What a RAG call has gathered so far; retrievers, generations and ``record()`` add to it."""

    __slots__ = (
        "answer",
        "chunks",
        "generated",
        "lock",
        "metadata",
        "query",
        "reference",
        "retriever_query",
        "settings",
        "total",
    )

    def __init__(self, settings: CaptureSettings) -> None:
        self.settings = settings
        self.lock = threading.Lock()  # retrievers may run in parallel threads or tasks under one call
        self.query: Text | None = None
        self.answer: Text | None = None
        self.reference: Text | None = None
        self.generated: Text | None = None
        self.retriever_query: Text | None = None
        self.chunks: list[CapturedChunk] = []
        self.total = 0
        self.metadata: dict[str, Any] = {}

    def add_chunks(self, normalized: Normalized) -> None:
        with self.lock:
            room = self.settings.max_record_chunks - len(self.chunks)
            if room > 0:
                self.chunks.extend(normalized.chunks[:room])
            self.total += normalized.total


def prepare_value(value: object, settings: CaptureSettings) -> Text | None:
    if value is None:
        return None
    return prepare_text(to_text(value, settings.read_length), settings)


def record(
    *,
    query: object = None,
    chunks: object = None,
    answer: object = None,
    reference: object = None,
    metadata: Mapping[str, Any] | None = None,
) -> bool:
    """Set values of the current RAG call (the innermost ``@ragtrace.rag`` call running here).

    ``query``, ``answer`` and ``reference`` replace what the decorator would have taken from the
    arguments and the return value; ``chunks`` (one chunk or a collection, any shape ``retrieve``
    accepts) are added after the chunks gathered so far; ``metadata`` is merged into the span's
    ``metadata`` JSON. Values go through the same redaction and size bounds as everything captured.

    Returns False, and does nothing, when no recording RAG call is current. Raises ``TypeError``
    when ``metadata`` is not a mapping.
    """
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"ragtrace.record(metadata=...) takes a mapping, not {type(metadata).__name__}")
    state = otel_context.get_value(RAG_KEY)
    if not isinstance(state, RagState):
        return False
    settings = state.settings
    prepared = {name: prepare_value(value, settings) for name, value in (("query", query), ("answer", answer))}
    ref = prepare_value(reference, settings)
    normalized = None
    if chunks is not None:
        # Chunks past the bound are only counted (a racy read: add_chunks enforces the bound anyway).
        room = max(settings.max_record_chunks - len(state.chunks), 0)
        normalized = normalize_chunks(chunks, settings, room)
    with state.lock:
        if prepared["query"] is not None:
            state.query = prepared["query"]
        if prepared["answer"] is not None:
            state.answer = prepared["answer"]
        if ref is not None:
            state.reference = ref
        if metadata:
            state.metadata.update({str(k): v for k, v in metadata.items()})
    if normalized is not None:
        state.add_chunks(normalized)
    return True


def outside_rag_calls(ctx: otel_context.Context | None) -> otel_context.Context | None:
    """``ctx`` (None: the current context) without the enclosing RAG call, for a RAG call that does not
    record: what runs under it (retrievers, ``record()``) is its own, never added to the outer call.

    Returns ``ctx`` itself when no RAG call encloses it, so an app without one pays one lookup.
    """
    base = otel_context.get_current() if ctx is None else ctx
    if base.get(RAG_KEY) is None:
        return ctx
    return otel_context.set_value(RAG_KEY, None, base)
