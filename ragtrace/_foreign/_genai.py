"""The OpenTelemetry GenAI conventions' shape: retrieval spans, workflow roots and generations.

* retrieval (``gen_ai.operation.name=retrieval``): ``gen_ai.retrieval.query.text`` and
  ``gen_ai.retrieval.documents``, a JSON array of objects with at least ``id`` and ``score``; the text is
  an extra property (``content``; ``text`` and ``page_content`` are read too). The attribute is opt-in:
  absent, or with objects that carry no text, the documents read as not captured.
* workflow (``gen_ai.operation.name=invoke_workflow``, a RAG root when retrieval ran under it): the last
  user message of ``gen_ai.input.messages`` is the query, the last assistant message of
  ``gen_ai.output.messages`` the answer.
* generation (``chat``, ``text_completion``, ``generate_content``; also OpenLLMetry's LLM spans):
  ``gen_ai.output.messages``, else the older ``gen_ai.completion.0.content``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ragtrace import semconv
from ragtrace._foreign import _json
from ragtrace._foreign._parts import GEN_AI, Io, Retrieved
from ragtrace._record import CHUNK_TEXT_KEYS, Chunk

GENERATIONS: Final = frozenset(
    {
        semconv.GEN_AI_OPERATION_CHAT,
        semconv.GEN_AI_OPERATION_TEXT_COMPLETION,
        semconv.GEN_AI_OPERATION_GENERATE_CONTENT,
    }
)
"""The ``gen_ai.operation.name`` values of spans whose output is generated text."""

TEXT_KEYS: Final = (semconv.GEN_AI_PART_CONTENT, *CHUNK_TEXT_KEYS)


def root_io(attributes: Mapping[str, Any]) -> Io:
    """The query and answer a workflow span's messages hold."""
    return Io(
        query=_json.message_text(attributes.get(semconv.GEN_AI_INPUT_MESSAGES), semconv.GEN_AI_ROLE_USER),
        answer=_json.message_text(attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES), semconv.GEN_AI_ROLE_ASSISTANT),
    )


def retrieved(attributes: Mapping[str, Any], start: int, read_length: int) -> Retrieved:
    """A retrieval span's documents (in order) and query."""
    query = attributes.get(semconv.GEN_AI_RETRIEVAL_QUERY_TEXT)
    query = query if isinstance(query, str) else None
    documents = _json.loads(attributes.get(semconv.GEN_AI_RETRIEVAL_DOCUMENTS))
    if not isinstance(documents, list):
        return Retrieved(GEN_AI, start, (), captured=False, query=query)
    chunks: list[Chunk] = []
    for document in documents:
        if not isinstance(document, Mapping):
            continue
        text = next((document[k] for k in TEXT_KEYS if isinstance(document.get(k), str)), None)
        if text is None:
            # Ids and scores only: the instrumentation did not capture the text (it is opt-in).
            return Retrieved(GEN_AI, start, (), captured=False, query=query)
        if not text:
            continue
        identifier = document.get(semconv.RETRIEVAL_DOCUMENT_JSON_ID)
        score = document.get(semconv.RETRIEVAL_DOCUMENT_JSON_SCORE)
        found = _json.metadata(document.get(semconv.RETRIEVAL_DOCUMENT_JSON_METADATA))
        chunks.append(
            Chunk(
                text=text[:read_length],
                id=None if identifier is None else str(identifier),
                score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                metadata=found,
            )
        )
    return Retrieved(GEN_AI, start, tuple(chunks), True, query)


def answer(attributes: Mapping[str, Any]) -> str | None:
    """A generation span's text."""
    text = _json.message_text(attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES), semconv.GEN_AI_ROLE_ASSISTANT)
    if text is not None:
        return text
    legacy = attributes.get(semconv.GEN_AI_COMPLETION_CONTENT)
    return legacy if isinstance(legacy, str) else None
