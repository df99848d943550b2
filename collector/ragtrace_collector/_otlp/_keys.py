"""What each attribute key is: a retrieval document field, a per-metric score (``ragtrace.wire``), or other.

Classifying a key is computed once per distinct key: the same few dozen keys recur on every span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from ragtrace import semconv, wire
from ragtrace_collector._otlp._values import any_value, json_or_text, number, text

DOCS_DOT = semconv.RETRIEVAL_DOCUMENTS + "."
DOC_FIELDS = {
    semconv.DOCUMENT_ID: "id",
    semconv.DOCUMENT_CONTENT: "content",
    semconv.DOCUMENT_SCORE: "score",
    semconv.DOCUMENT_METADATA: "metadata",
}
DOC = 0
EVAL = 1

# What an attribute key is, computed once per distinct key: the same few dozen keys recur on every span,
# and classifying them anew was a large share of the ingest cost. Bounded so odd keys cannot grow it forever.
KeyKind = tuple[int, Any, str] | None
KEY_KINDS: dict[str, KeyKind] = {}
MAX_KEY_KINDS = 65_536
UNKNOWN: Any = object()


def classify(key: str) -> KeyKind:
    """``(DOC, index, column)``, ``(EVAL, metric, field)`` or None for any other attribute."""
    kind: KeyKind = None
    if key.startswith(DOCS_DOT):
        index, _, field_name = key[len(DOCS_DOT) :].partition(".")
        column = DOC_FIELDS.get(field_name)
        # ASCII digits only: str.isdigit() also accepts "²" or "١", which int() refuses (or reads as another
        # number). Such a key is an ordinary attribute.
        if column is not None and index.isascii() and index.isdigit():
            kind = (DOC, int(index), column)
    else:
        score_key = wire.eval_key(key)
        if score_key is not None:
            kind = (EVAL, *score_key)
    if len(KEY_KINDS) < MAX_KEY_KINDS:
        KEY_KINDS[key] = kind
    return kind


def span_attributes(
    items: Iterable[KeyValue],
) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, Any]]]:
    """A span's attributes without its retrieval documents, the documents' attributes, and its score attributes.

    Documents come back as ``{key: value}`` (put them back for a span that is not a RAG span); score
    attributes as ``(metric, field, value)`` (they also stay in the attributes).
    """
    result: dict[str, Any] = {}
    documents: dict[str, Any] = {}
    evals: list[tuple[str, str, Any]] = []
    kinds = KEY_KINDS
    for kv in items:
        key = kv.key
        value = kv.value
        # Most attribute values are strings: skip the general conversion for them (the ingest hot path).
        converted = value.string_value if value.WhichOneof("value") == "string_value" else any_value(value)
        kind = kinds.get(key, UNKNOWN)
        if kind is UNKNOWN:
            kind = classify(key)
        if kind is None:
            result[key] = converted
        elif kind[0] == DOC:
            documents[key] = converted
        else:
            result[key] = converted
            evals.append((kind[1], kind[2], converted))
    return result, documents, evals


def chunks_from_documents(documents: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Document attributes (``retrieval.documents.{i}.document.*``) as chunks ``{id, content, score, metadata}``."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in documents.items():
        kind = KEY_KINDS.get(key) or classify(key)
        assert kind is not None and kind[0] == DOC
        fields = by_index.get(kind[1])
        if fields is None:
            fields = by_index[kind[1]] = {}
        fields[kind[2]] = value
    chunks: list[dict[str, Any]] = []
    for index in sorted(by_index):
        fields = by_index[index]
        metadata = fields.get("metadata")
        chunk_id = fields.get("id")
        chunks.append(
            {
                "id": None if chunk_id is None else str(chunk_id),
                "content": text(fields.get("content")),
                "score": number(fields.get("score")),
                "metadata": json_or_text(metadata) if isinstance(metadata, str) else metadata,
            }
        )
    return chunks
