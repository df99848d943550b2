"""OpenInference's shape (its LangChain and LlamaIndex instrumentations): what a root, a retriever, a reranker
and an LLM span say.

* CHAIN (a RAG root when retrieval ran under it): ``input.value``/``output.value``, plain text or JSON
  (``input.mime_type`` ``application/json``) with the query and answer under the app's keys. LlamaIndex's
  ``RetrieverQueryEngine.query`` writes plain text; a streamed response leaves only a placeholder there
  (``{"response_gen": "<generator object>"}``), so the answer comes from the LLM span under it instead.
* RETRIEVER: ``retrieval.documents.{i}.document.*``; ``input.value`` is the query.
* RERANKER: ``reranker.input_documents.*`` and ``reranker.output_documents.*``; the output is what the
  model saw, so it replaces the input.
* LLM: ``llm.output_messages.0.message.content``, else a plain-text ``output.value``.

With ``OPENINFERENCE_HIDE_INPUTS``/``OUTPUTS`` (or ``..._RETRIEVAL_DOCUMENTS``) the instrumentation writes
``__REDACTED__`` instead of the text; such a value is reported hidden, never read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace import semconv
from ragtrace._foreign import _documents, _json
from ragtrace._foreign._parts import OPENINFERENCE, RERANK, Io, Retrieved


def root_io(attributes: Mapping[str, Any]) -> Io:
    """The query and answer a CHAIN span's ``input.value``/``output.value`` hold."""
    raw_query = attributes.get(semconv.INPUT_VALUE)
    raw_answer = attributes.get(semconv.OUTPUT_VALUE)
    if _json.hidden(raw_query) or _json.hidden(raw_answer):
        return Io(hidden=True)
    return Io(
        query=_json.value_text(raw_query, attributes.get(semconv.INPUT_MIME_TYPE), _json.QUERY_KEYS),
        answer=_json.value_text(raw_answer, attributes.get(semconv.OUTPUT_MIME_TYPE), _json.ANSWER_KEYS),
    )


def retrieved(attributes: Mapping[str, Any], start: int, read_length: int) -> Retrieved:
    """A RETRIEVER span's documents and query."""
    chunks, captured = _documents.read(attributes, semconv.RETRIEVAL_DOCUMENTS, read_length)
    query = attributes.get(semconv.INPUT_VALUE)
    text = (
        None
        if _json.hidden(query)
        else _json.value_text(query, attributes.get(semconv.INPUT_MIME_TYPE), _json.QUERY_KEYS)
    )
    return Retrieved(OPENINFERENCE, start, chunks, captured, text)


def reranked(attributes: Mapping[str, Any], start: int, read_length: int) -> Retrieved:
    """A RERANKER span's output documents, replacing the documents it was given."""
    given, _ = _documents.read(attributes, semconv.RERANKER_INPUT_DOCUMENTS, read_length)
    chunks, captured = _documents.read(attributes, semconv.RERANKER_OUTPUT_DOCUMENTS, read_length)
    # OPENINFERENCE_HIDE_OUTPUTS drops a reranker's output documents instead of redacting them: only the
    # redacted output.value beside them tells "hidden" from "none kept".
    captured = captured and not _json.hidden(attributes.get(semconv.OUTPUT_VALUE))
    return Retrieved(RERANK, start, chunks, captured, replaces=frozenset(_documents.key(c) for c in given))


def answer(attributes: Mapping[str, Any]) -> str | None:
    """An LLM span's generated text (``None`` when hidden or absent)."""
    content = attributes.get(semconv.LLM_OUTPUT_MESSAGE_CONTENT)
    if isinstance(content, str) and not _json.hidden(content):
        return content
    output = attributes.get(semconv.OUTPUT_VALUE)
    if _json.hidden(output) or attributes.get(semconv.OUTPUT_MIME_TYPE) == semconv.MIME_TYPE_JSON:
        return None
    return output if isinstance(output, str) else None
