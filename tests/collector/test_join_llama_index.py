"""The collector joins and scores RAG calls an app traced with OpenInference's LlamaIndex instrumentation and sent
with nothing but an OTLP exporter: real ``llama-index-core`` (``MockLLM``, ``MockEmbedding``, an in-memory index)
and ``openinference-instrumentation-llama-index``, the real OTLP/HTTP exporter, shuffled exports, a real
collector and SQLite file. The settler is driven with ``settle_once`` at a chosen time.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from ragtrace_collector._join import JoinLimits

from ragtrace import semconv
from tests.collector._spans import start_collector
from tests.collector._traced_app import send, shuffled_parts, span_id, traced_app
from tests.ragtrace.test_foreign_llama_index import QUESTION, TEXTS, ReverseReranker, engine, retrieved

pytestmark = pytest.mark.filterwarnings("ignore:The `json` method is deprecated")

HOUR = 3600 * 1_000_000_000


@pytest.fixture(autouse=True)
def _offline_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    for name in ("OPENAI_API_KEY", "RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_METRICS"):
        monkeypatch.delenv(name, raising=False)


def test_a_reranked_query_engine_call_is_scored_on_what_the_model_saw(tmp_path: Path) -> None:
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=MockEmbedding(embed_dim=8))
    expected = list(reversed(retrieved(index, 3)))[:2]
    with traced_app(LlamaIndexInstrumentor(), "li-app") as app:
        response = engine(index, similarity_top_k=3, node_postprocessors=[ReverseReranker()]).query(QUESTION)
        spans = app.spans()
    (root,) = [s for s in spans if s.parent is None]
    assert root.name == "RetrieverQueryEngine.query"
    db = tmp_path / "c.db"
    collector = start_collector(db, score=True, join_limits=JoinLimits(settle_seconds=3600, max_seconds=7200))
    try:
        for part in shuffled_parts(spans, 3, seed=2):
            send(collector, part)
        assert collector.settler is not None and collector.scorer is not None
        assert collector.settler.settle_once(time.time_ns() + 2 * HOUR) == [span_id(root)]
        assert collector.scorer.wait_idle(120)
    finally:
        collector.stop()
    with sqlite3.connect(db) as conn:
        ((query, answer, chunks, decision),) = conn.execute("SELECT query, answer, chunks, decision FROM rag_records")
        scored = conn.execute("SELECT count(*) FROM scores WHERE source = 'collector'").fetchone()[0]
    assert (query, answer, decision) == (QUESTION, str(response), semconv.DECISION_EVALUATED)
    assert [c["content"] for c in json.loads(chunks)] == expected
    assert scored > 0
