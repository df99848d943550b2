"""OpenLLMetry's shape (``opentelemetry-instrumentation-langchain`` and the Traceloop SDK): a workflow root and
retriever tasks, their inputs and outputs as JSON in ``traceloop.entity.input``/``output``.

* workflow (``traceloop.span.kind=workflow``, a RAG root when retrieval ran under it): the LangChain
  instrumentation writes ``{"inputs": ..., "tags", "metadata", "kwargs"}`` and ``{"outputs": ...,
  "kwargs"}``; the SDK's ``@workflow`` decorator writes ``{"args": [...], "kwargs": {...}}`` and the
  return value. The query and answer are read out of those.
* retriever (a task with ``gen_ai.operation.name=vector_db_retrieve``): ``{"query": ...}`` in, and
  ``{"documents": [{"page_content", "metadata"}, ...], "count"}`` out.
* LLM calls follow the GenAI conventions (``gen_ai.output.messages``): see ``_genai``.

With ``TRACELOOP_TRACE_CONTENT=false`` the instrumentation writes no entity input or output at all: a
retriever's documents then read as not captured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace import semconv
from ragtrace._foreign import _json
from ragtrace._foreign._parts import OPENLLMETRY, Io, Retrieved
from ragtrace._record import CHUNK_TEXT_KEYS, Chunk


def is_retrieval(attributes: Mapping[str, Any]) -> bool:
    """True for a retriever task."""
    return attributes.get(semconv.GEN_AI_OPERATION_NAME) == semconv.GEN_AI_OPERATION_VECTOR_DB_RETRIEVE


def root_io(attributes: Mapping[str, Any]) -> Io:
    """The query and answer a workflow span's entity input and output hold."""
    entered = _json.loads(attributes.get(semconv.TRACELOOP_ENTITY_INPUT))
    returned = _json.loads(attributes.get(semconv.TRACELOOP_ENTITY_OUTPUT))
    return Io(query=_query(entered), answer=_answer(returned))


def _query(entered: Any) -> str | None:
    if not isinstance(entered, Mapping):
        return _json.pick(entered, _json.QUERY_KEYS)
    if semconv.TRACELOOP_JSON_INPUTS in entered:
        return _json.pick(entered[semconv.TRACELOOP_JSON_INPUTS], _json.QUERY_KEYS)
    args = entered.get(semconv.TRACELOOP_JSON_ARGS)
    if isinstance(args, list):
        first = next((a for a in args if isinstance(a, str)), None)
        if first is not None:
            return first
        return _json.pick(entered.get(semconv.TRACELOOP_JSON_KWARGS), _json.QUERY_KEYS)
    return _json.pick(entered, _json.QUERY_KEYS)


def _answer(returned: Any) -> str | None:
    if isinstance(returned, Mapping) and semconv.TRACELOOP_JSON_OUTPUTS in returned:
        returned = returned[semconv.TRACELOOP_JSON_OUTPUTS]
    return _json.pick(returned, _json.ANSWER_KEYS)


def retrieved(attributes: Mapping[str, Any], start: int, read_length: int) -> Retrieved:
    """A retriever task's documents (in order) and query."""
    entered = _json.loads(attributes.get(semconv.TRACELOOP_ENTITY_INPUT))
    query = entered.get(semconv.TRACELOOP_JSON_QUERY) if isinstance(entered, Mapping) else None
    returned = _json.loads(attributes.get(semconv.TRACELOOP_ENTITY_OUTPUT))
    documents = returned.get(semconv.TRACELOOP_JSON_DOCUMENTS) if isinstance(returned, Mapping) else None
    if not isinstance(documents, list):
        # No output written: content tracing is off (or the retriever failed before returning).
        return Retrieved(OPENLLMETRY, start, (), captured=False, query=query if isinstance(query, str) else None)
    chunks = tuple(c for c in (_chunk(d, read_length) for d in documents) if c is not None)
    return Retrieved(OPENLLMETRY, start, chunks, True, query if isinstance(query, str) else None)


def _chunk(document: Any, read_length: int) -> Chunk | None:
    if isinstance(document, str):
        return Chunk(text=document[:read_length]) if document else None
    if not isinstance(document, Mapping):
        return None
    text = next((document[k] for k in CHUNK_TEXT_KEYS if isinstance(document.get(k), str)), None)
    if not text:
        return None
    found = _json.metadata(document.get(semconv.RETRIEVAL_DOCUMENT_JSON_METADATA))
    return Chunk(text=text[:read_length], metadata=found)
