"""What a call puts on its span (OpenInference and GenAI attributes, bounded and redacted) and, for a RAG
call, the ``RagRecord`` it hands to the scoring processor through ``RECORDS``."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from opentelemetry.util.types import AttributeValue

from ragtrace import semconv
from ragtrace._capture._capture_settings import CaptureSettings
from ragtrace._capture._documents import documents_json
from ragtrace._capture._records import RECORDS
from ragtrace._capture._state import Text, prepare_value
from ragtrace._capture._text import export_text
from ragtrace._chunks import CapturedChunk, Normalized
from ragtrace._record import Chunk, RagRecord

if TYPE_CHECKING:
    from ragtrace._capture._call import Call

EMPTY: Mapping[str, Any] = MappingProxyType({})
REORDER_ABOVE = 32  # spans with more attributes than this set their kind and role again, last


def complete(call: Call, result: object, streamed: bool, failed: bool, partial: bool = False) -> None:
    """Put what ``call`` captured on its span (and, for a RAG call, its record into ``RECORDS``).
    ``partial``: a stream closed early, so a RAG answer is marked ``ragtrace.answer.partial``."""
    settings = call.settings
    attributes: dict[str, AttributeValue] = {}
    query = prepare_value(call.query, settings)
    role = call.spec.role
    if role == semconv.ROLE_RETRIEVE:
        found = call.captured_chunks(result, streamed)
        normalized = found or Normalized((), 0)
        truncated = put_documents(attributes, normalized.chunks, settings)
        documents, dropped = documents_json((c.chunk for c in normalized.chunks), settings.max_attribute_length)
        if documents is not None:
            attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS] = documents
        truncated |= dropped
        attributes[semconv.RAGTRACE_CHUNK_COUNT] = normalized.total
        truncated |= put_content(attributes, semconv.INPUT_VALUE, query, settings)
        if semconv.INPUT_VALUE in attributes:
            attributes[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] = attributes[semconv.INPUT_VALUE]
        parent = call.parent
        if parent is not None:
            with parent.lock:
                if parent.retriever_query is None:
                    parent.retriever_query = query
            parent.add_chunks(normalized)
    elif role == semconv.ROLE_GENERATE:
        answer = call.captured_answer(result, streamed)
        truncated = put_content(attributes, semconv.INPUT_VALUE, query, settings)
        truncated |= put_content(attributes, semconv.OUTPUT_VALUE, answer, settings)
        if call.parent is not None and answer is not None:
            with call.parent.lock:
                call.parent.generated = answer
    else:
        truncated = complete_rag(call, attributes, query, result, streamed, failed)
        if partial:
            attributes[semconv.RAGTRACE_ANSWER_PARTIAL] = True
    attributes[semconv.RAGTRACE_CONTENT_CAPTURED] = settings.capture_content
    attributes[semconv.RAGTRACE_CONTENT_TRUNCATED] = truncated
    if attribute_count(call) + len(attributes) > REORDER_ABOVE:
        # An SDK whose attribute count limit is reached drops the oldest attributes first, so on a
        # large span the kind and role (what the scoring processor looks for) are set again, last.
        # Small spans skip it: every attribute set costs the SDK a validation.
        attributes.update(call.spec.start_attributes)
    call.span.set_attributes(attributes)


def attribute_count(call: Call) -> int:
    """Attributes already on the span: the start attributes plus any the app set itself.

    The OpenTelemetry API cannot read a span's attributes; the SDK's span (and most others) can.
    """
    # try/except, not isinstance(..., Mapping): an ABC check on every call is a measurable share
    # of the decorator's cost (bench/decorator_overhead.py).
    try:
        return len(call.span.attributes)  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return len(call.spec.start_attributes)


def complete_rag(
    call: Call,
    attributes: dict[str, AttributeValue],
    own_query: Text | None,
    result: object,
    streamed: bool,
    failed: bool,
) -> bool:
    """A RAG call's attributes: what ``record()`` set wins over its own values, which win over what its
    retrievers and generations gathered; the record goes to ``RECORDS`` unless the call failed. Returns
    whether any text was cut."""
    state = call.state
    assert state is not None
    settings = call.settings
    own_answer = call.captured_answer(result, streamed)
    own_chunks = call.captured_chunks(result, streamed)
    with state.lock:
        query = state.query or own_query or state.retriever_query
        answer = state.answer or own_answer or state.generated
        reference = state.reference
        if own_chunks is not None:
            chunks, total = own_chunks.chunks, own_chunks.total
        else:
            chunks, total = tuple(state.chunks), state.total
        metadata = dict(state.metadata)
    truncated = put_documents(attributes, chunks, settings)
    attributes[semconv.RAGTRACE_CHUNK_COUNT] = total
    if metadata:
        attributes[semconv.METADATA], cut = json_text(metadata, settings.max_attribute_length)
        truncated |= cut
    truncated |= put_content(attributes, semconv.INPUT_VALUE, query, settings)
    truncated |= put_content(attributes, semconv.OUTPUT_VALUE, answer, settings)
    truncated |= put_content(attributes, semconv.RAGTRACE_REFERENCE, reference, settings)
    if not failed and RECORDS.active:
        context = call.span.get_span_context()
        limit = settings.max_record_chunk_length
        RECORDS.put(
            context.trace_id,
            context.span_id,
            RagRecord(
                query="" if query is None else query[0][:limit],
                chunks=tuple(record_chunk(c.chunk, limit) for c in chunks),
                answer="" if answer is None else answer[0][:limit],
                reference=None if reference is None else reference[0][:limit],
                metadata=MappingProxyType(metadata) if metadata else EMPTY,
            ),
        )
    return truncated


def json_text(value: Mapping[str, Any], limit: int) -> tuple[str, bool]:
    """``value`` as exported JSON text (values it cannot encode as their ``str``) and whether it was cut."""
    try:
        text = json.dumps(dict(value), default=str, ensure_ascii=False)
    except Exception:
        text = json.dumps({str(k): str(v) for k, v in value.items()}, ensure_ascii=False)
    return export_text(text, False, limit)


def record_chunk(chunk: Chunk, limit: int) -> Chunk:
    """``chunk`` with its text cut to the record bound (the same object when it fits)."""
    if len(chunk.text) <= limit:
        return chunk
    return Chunk(text=chunk.text[:limit], id=chunk.id, score=chunk.score, metadata=chunk.metadata)


def put_content(attributes: dict[str, AttributeValue], key: str, text: Text | None, settings: CaptureSettings) -> bool:
    """Put an exported text on ``attributes`` when capture is on; return whether it was cut."""
    if text is None or not settings.capture_content:
        return False
    attributes[key], cut = export_text(text[0], text[1], settings.max_attribute_length)
    return cut


def put_documents(
    attributes: dict[str, AttributeValue], chunks: tuple[CapturedChunk, ...], settings: CaptureSettings
) -> bool:
    """The OpenInference ``retrieval.documents.{i}.document.*`` attributes; return whether any text was cut."""
    truncated = False
    capture = settings.capture_content
    limit = settings.max_attribute_length
    for index, captured in enumerate(chunks):
        id_name, content_name, score_name, metadata_name = document_names(index)
        chunk = captured.chunk
        if chunk.id is not None:
            attributes[id_name] = chunk.id
            truncated |= captured.id_truncated
        if chunk.score is not None:
            attributes[score_name] = chunk.score
        if capture:
            text, cut = export_text(chunk.text, captured.truncated, limit)
            attributes[content_name] = text
            truncated |= cut
            if chunk.metadata:
                attributes[metadata_name], cut = json_text(chunk.metadata, limit)
                truncated |= cut
    return truncated


@functools.lru_cache(maxsize=1024)
def document_names(index: int) -> tuple[str, str, str, str]:
    """The four ``retrieval.documents.{index}.document.*`` names, built once per index."""
    return (
        semconv.retrieval_document(index, semconv.DOCUMENT_ID),
        semconv.retrieval_document(index, semconv.DOCUMENT_CONTENT),
        semconv.retrieval_document(index, semconv.DOCUMENT_SCORE),
        semconv.retrieval_document(index, semconv.DOCUMENT_METADATA),
    )
