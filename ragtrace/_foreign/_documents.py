"""Documents flattened the OpenInference way (``{prefix}.{i}.document.{id,content,score,metadata}``), read back.

OpenInference's LangChain instrumentation writes content and metadata (no id or score), its LlamaIndex
instrumentation id, content, score and metadata; both write retrievers' documents under
``retrieval.documents`` and rerankers' under ``reranker.input_documents``/``reranker.output_documents``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from ragtrace import semconv
from ragtrace._foreign import _json
from ragtrace._record import Chunk

MAX_DOCUMENTS: Final = 4096
"""Most documents read off one span: a bound on the work, far above any retriever's k."""


@functools.lru_cache(maxsize=4096)
def names(prefix: str, index: int) -> tuple[str, str, str, str]:
    """The id, content, score and metadata attribute names of document ``index`` under ``prefix``."""
    return (
        semconv.retrieval_document(index, semconv.DOCUMENT_ID, prefix),
        semconv.retrieval_document(index, semconv.DOCUMENT_CONTENT, prefix),
        semconv.retrieval_document(index, semconv.DOCUMENT_SCORE, prefix),
        semconv.retrieval_document(index, semconv.DOCUMENT_METADATA, prefix),
    )


def read(attributes: Mapping[str, Any], prefix: str, read_length: int) -> tuple[tuple[Chunk, ...], bool]:
    """The documents under ``prefix`` in order, and whether their text was captured.

    Texts are cut at ``read_length`` (what the record can keep); a document with no text is left out
    (nothing to judge it by). Not captured: some document's content is the hiding placeholder.
    """
    chunks: list[Chunk] = []
    captured = True
    for index in range(MAX_DOCUMENTS):
        id_name, content_name, score_name, metadata_name = names(prefix, index)
        content = attributes.get(content_name)
        identifier = attributes.get(id_name)
        if content is None and identifier is None and score_name not in attributes:
            break
        if _json.hidden(content):
            captured = False
            continue
        if not isinstance(content, str) or not content:
            continue
        score = attributes.get(score_name)
        found = _json.metadata(attributes.get(metadata_name))
        chunks.append(
            Chunk(
                text=content[:read_length],
                id=None if identifier is None else str(identifier),
                score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                metadata=found,
            )
        )
    return tuple(chunks), captured


def key(chunk: Chunk) -> str:
    """What identifies a document between a retriever's output and a reranker's input: its id, else its text."""
    return chunk.id if chunk.id is not None else chunk.text
