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

        Chunks may be strings or objects with ``text`` (or ``content``) and optional ``id``, ``score``,
        ``metadata``. Raises ``ValueError`` naming the missing field when there is no query.
        """
        query = data.get("query", data.get("question"))
        if not isinstance(query, str):
            raise ValueError("a record needs a string 'query' (or 'question') field")
        raw_chunks = data.get("chunks", data.get("contexts", ())) or ()
        if isinstance(raw_chunks, str):
            raw_chunks = [raw_chunks]
        chunks: list[Chunk] = []
        for item in raw_chunks:
            if isinstance(item, Mapping):
                text = item.get("text", item.get("content", ""))
                score = item.get("score")
                chunks.append(
                    Chunk(
                        text=str(text),
                        id=None if item.get("id") is None else str(item.get("id")),
                        score=float(score) if isinstance(score, (int, float)) else None,
                        metadata=MappingProxyType(dict(item.get("metadata") or {})),
                    )
                )
            elif item is not None:
                chunks.append(Chunk(text=str(item)))
        answer = data.get("answer", data.get("response", ""))
        reference = data.get("reference", data.get("ground_truth"))
        return cls.of(
            query=query,
            chunks=chunks,
            answer="" if answer is None else str(answer),
            reference=None if reference is None else str(reference),
            metadata=data.get("metadata") or None,
        )
