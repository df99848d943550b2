"""RAG calls traced by OpenInference's LlamaIndex instrumentation are scored, with nothing changed in the app.

Real ``llama-index-core`` and ``openinference-instrumentation-llama-index``: ``MockLLM``, ``MockEmbedding``
and an in-memory ``VectorStoreIndex``, no network.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

from ragtrace import semconv
from tests.ragtrace.foreign_rig import Pipeline, decision, pipeline, texts

# OpenInference reads an LLM's metadata with the method pydantic 2 deprecated; not ours to fix (as an error, the
# warning would stop the instrumentation opening the LLM's span).
pytestmark = pytest.mark.filterwarnings("ignore:The `json` method is deprecated")

QUESTION = "How fast are refunds paid?"
TEXTS = ["Refunds are paid within 14 days.", "Shipping takes 3 days.", "Refunds need a receipt."]
dispatcher = get_dispatcher(__name__)


class ReverseReranker(BaseNodePostprocessor):
    """Keeps the ``top_n`` last nodes, last first, announcing it as LlamaIndex's own rerankers do."""

    top_n: int = 2

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n, model_name="reverse"))
        kept = [NodeWithScore(node=n.node, score=float(i)) for i, n in enumerate(reversed(nodes))][: self.top_n]
        dispatcher.event(ReRankEndEvent(nodes=kept))
        return kept


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    # Built before any instrumentation: indexing spans are not what these tests are about.
    return VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=MockEmbedding(embed_dim=8))


def retrieved(index: VectorStoreIndex, k: int) -> list[str]:
    """What the index's retriever returns for QUESTION, in its order."""
    return [n.node.get_content() for n in index.as_retriever(similarity_top_k=k).retrieve(QUESTION)]


@contextmanager
def instrumented(**kwargs: Any) -> Iterator[Pipeline]:
    p = pipeline(**kwargs)
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=p.provider)
    try:
        yield p
    finally:
        instrumentor.uninstrument()
        p.provider.shutdown()


def engine(index: VectorStoreIndex, **kwargs: Any) -> Any:
    return index.as_query_engine(llm=MockLLM(max_tokens=8), embed_model=MockEmbedding(embed_dim=8), **kwargs)


def test_a_query_engine_is_scored_on_its_query_span(index: VectorStoreIndex) -> None:
    expected = retrieved(index, 3)
    with instrumented() as p:
        response = engine(index, similarity_top_k=3).query(QUESTION)
        (root,) = p.roots()
        spans = p.exported()
    assert root.name == "RetrieverQueryEngine.query" and root.parent is None
    assert decision(root) == (semconv.DECISION_EVALUATED, None)
    (record,) = p.metric.records
    assert (record.query, texts(record), record.answer) == (QUESTION, expected, str(response))
    # LlamaIndex's retriever spans carry ids and scores: they reach the record.
    assert all(c.id is not None and c.score is not None for c in record.chunks)
    assert all(s is root or semconv.EVAL_DECISION not in (s.attributes or {}) for s in spans)


def test_reranked_documents_replace_the_retrieved_ones(index: VectorStoreIndex) -> None:
    expected = list(reversed(retrieved(index, 3)))[:2]
    with instrumented() as p:
        engine(index, similarity_top_k=3, node_postprocessors=[ReverseReranker()]).query(QUESTION)
        (reranker,) = [s for s in p.exported() if s.name.startswith("ReverseReranker")]
    assert (reranker.attributes or {})[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_RERANKER
    (record,) = p.metric.records
    assert texts(record) == expected


def test_a_streamed_response_is_answered_by_the_llm_span(index: VectorStoreIndex) -> None:
    with instrumented() as p:
        response = engine(index, similarity_top_k=2, streaming=True).query(QUESTION)
        streamed = "".join(response.response_gen)  # the spans end once the stream is consumed
        (root,) = p.roots()
        (llm,) = [s for s in p.exported() if s.name == "MockLLM.stream_complete"]
    # Only a placeholder where the answer would be on the query span: the LLM span's output stands in.
    assert "response_gen" in str((root.attributes or {})[semconv.OUTPUT_VALUE])
    (record,) = p.metric.records
    # (MockLLM's last chunk carries the text before its last delta, so the span has one word less.)
    assert record.answer == (llm.attributes or {})[semconv.OUTPUT_VALUE] and streamed.startswith(record.answer)
    assert record.query == QUESTION and len(record.chunks) == 2


def test_hidden_outputs_are_not_scored_and_say_so(index: VectorStoreIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_OUTPUTS", "true")
    with instrumented() as p:
        engine(index, similarity_top_k=2).query(QUESTION)
        (root,) = p.roots()
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert p.metric.records == []


def test_hidden_retrieval_documents_are_not_scored(index: VectorStoreIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_RETRIEVAL_DOCUMENTS", "true")
    with instrumented() as p:
        engine(index, similarity_top_k=2).query(QUESTION)
        (root,) = p.roots()
    assert decision(root) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert p.metric.records == []
