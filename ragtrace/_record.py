"""The RAG record: the value that travels from capture to scoring.

A ``RagRecord`` is what a metric sees: the query, the retrieved chunks in rank order, the answer and,
in offline evaluation, a reference answer. Capture builds one when a RAG span ends; ``evaluate`` builds
them from dicts or JSONL lines. Records are frozen: once captured, nothing downstream changes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})
CHUNK_TEXT_KEYS = ("text", "content", "page_content")
"""Where a chunk mapping keeps its text, in the order looked up: ours, the common one, and LangChain's
``Document`` (capture reads retrievers' dicts with the same keys)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk: its text and what the retriever said of it."""

    text: str
    id: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class RagRecord:
    """One RAG call as the judge sees it.

    ``chunks`` are in rank order (all retrievers of the call, in the order they ran). ``reference`` is
    the ground-truth answer, present in golden sets and replays, usually ``None`` in production.
    """

    query: str
    chunks: tuple[Chunk, ...] = ()
    answer: str = ""
    reference: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def texts(self) -> list[str]:
        """The chunks' texts, in rank order."""
        return [c.text for c in self.chunks]

    @classmethod
    def of(
        cls,
        query: str,
        chunks: Iterable[str | Chunk] = (),
        answer: str = "",
        reference: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RagRecord:
        """Build a record from plain strings or ``Chunk`` values (a convenience for tests and scripts)."""
        return cls(
            query=query,
            chunks=tuple(c if isinstance(c, Chunk) else Chunk(text=c) for c in chunks),
            answer=answer,
            reference=reference,
            metadata=MappingProxyType(dict(metadata)) if metadata else _EMPTY,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RagRecord:
        """Build a record from a JSON object: ``query``/``question``, ``chunks``/``contexts``, ``answer``/``response``,
        optional ``reference``/``ground_truth`` and ``metadata``.

        ``chunks`` is a list whose items are strings or objects with a string ``text`` (or ``content``,
        or LangChain's ``page_content``) and optional ``id``, ``score``, ``metadata``; a single string is
        one chunk and ``null`` items are skipped. ``answer`` and ``reference`` are strings (a number is
        written as text, ``null`` is none); ``metadata`` is an object. Any other shape raises
        ``ValueError`` naming the field: a value is never turned into its Python spelling (``None``,
        a dict's keys) and scored.
        """
        query = _first(data, "query", "question")
        if not isinstance(query, str):
            raise ValueError("a record needs a string 'query' (or 'question') field")
        raw_chunks = _first(data, "chunks", "contexts")
        if raw_chunks is None:
            raw_chunks = []
        elif isinstance(raw_chunks, str):
            raw_chunks = [raw_chunks]
        elif not isinstance(raw_chunks, (list, tuple)):
            raise ValueError(
                f"'chunks' must be a list of strings or objects, got {_json_type(raw_chunks)}"
                + (" (wrap a single chunk in [...])" if isinstance(raw_chunks, Mapping) else "")
            )
        chunks = [_chunk(item, n) for n, item in enumerate(raw_chunks, start=1) if item is not None]
        return cls.of(
            query=query,
            chunks=chunks,
            answer=_text(_first(data, "answer", "response"), "answer") or "",
            reference=_text(_first(data, "reference", "ground_truth"), "reference"),
            metadata=_object(data.get("metadata"), "metadata"),
        )


def _chunk(item: Any, number: int) -> Chunk:
    """Chunk ``number`` (1-based) of a record's ``chunks`` list."""
    if isinstance(item, str):
        return Chunk(text=item)
    if not isinstance(item, Mapping):
        raise ValueError(f"chunk {number} must be a string or an object with 'text', got {_json_type(item)}")
    text = _first(item, *CHUNK_TEXT_KEYS)
    if not isinstance(text, str):
        raise ValueError(f"chunk {number} needs a string 'text' (or 'content', 'page_content'), got {_json_type(text)}")
    score = item.get("score")
    metadata = _object(item.get("metadata"), f"chunk {number} metadata")
    return Chunk(
        text=text,
        id=None if item.get("id") is None else str(item.get("id")),
        score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
        metadata=MappingProxyType(dict(metadata)) if metadata else _EMPTY,
    )


def _first(data: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` that is not null: ``{"text": null, "content": "x"}`` reads "x"."""
    return next((data[name] for name in names if data.get(name) is not None), None)


def _text(value: Any, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"'{field}' must be a string, got {_json_type(value)}")


def _object(value: Any, field: str) -> Mapping[str, Any] | None:
    if value is None or isinstance(value, Mapping):
        return value
    raise ValueError(f"'{field}' must be a JSON object, got {_json_type(value)}")


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages about a record."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__
