"""The collector joins and scores RAG calls an app traced with OpenInference's LlamaIndex instrumentation and sent
with nothing but an OTLP exporter: real ``llama-index-core`` (``MockLLM``, ``MockEmbedding``, an in-memory index)
and ``openinference-instrumentation-llama-index``, the real OTLP/HTTP exporter, shuffled exports, a real
collector and SQLite file. The settler is driven with ``settle_once`` at a chosen time.
"""

from __future__ import annotations

import json
import time

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

from ragtrace import semconv
from tests.collector._join import HOUR, LIMITS, settle
from tests.collector._spans import start_collector
from tests.collector._stores import rows
from tests.collector._traced_app import send, shuffled_parts, span_id, traced_app
from tests.ragtrace.test_foreign_llama_index import QUESTION, TEXTS, ReverseReranker, engine, retrieved

pytestmark = [
    pytest.mark.filterwarnings("ignore:The `json` method is deprecated"),
    pytest.mark.usefixtures("offline_judge"),
]


def test_a_reranked_query_engine_call_is_scored_on_what_the_model_saw(store_target: str) -> None:
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=MockEmbedding(embed_dim=8))
    expected = list(reversed(retrieved(index, 3)))[:2]
    with traced_app(LlamaIndexInstrumentor(), "li-app") as app:
        response = engine(index, similarity_top_k=3, node_postprocessors=[ReverseReranker()]).query(QUESTION)
        spans = app.spans()
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == "RetrieverQueryEngine.query"
    db = store_target
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        for part in shuffled_parts(spans, 3, seed=2):
            send(collector, part)
        assert settle(collector, time.time_ns() + 2 * HOUR) == [span_id(root)]
    finally:
        collector.stop()
    ((query, answer, chunks, decision),) = rows(db, "SELECT query, answer, chunks, decision FROM rag_records")
    ((scored,),) = rows(db, "SELECT count(*) FROM scores WHERE source = 'collector'")
    assert (query, answer, decision) == (QUESTION, str(response), semconv.DECISION_EVALUATED)
    assert [c["content"] for c in json.loads(chunks)] == expected
    assert scored > 0
