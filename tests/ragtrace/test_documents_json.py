"""``gen_ai.retrieval.documents`` is always JSON the conventions describe, within the export bound."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import _capture, semconv
from ragtrace._capture import CaptureSettings
from ragtrace._capture._documents import document_object, documents_json
from ragtrace._record import Chunk

ids = st.one_of(st.none(), st.text(max_size=60))
scores = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**6), 10**6).map(float))
chunks = st.lists(st.builds(Chunk, text=st.just("t"), id=ids, score=scores), max_size=40)


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _capture.set_tracer_provider(provider)
    yield exporter
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)
    provider.shutdown()


def _check(value: str, limit: int, given_chunks: list[Chunk]) -> list[dict[str, Any]]:
    assert len(value) <= limit
    parsed = json.loads(value)
    assert isinstance(parsed, list)
    for document, chunk in zip(parsed, given_chunks, strict=False):  # a prefix, in rank order
        assert set(document) <= {"id", "score"}
        assert document.get("id") == (chunk.id if isinstance(chunk.id, str) else None)
        if "score" in document:
            assert isinstance(document["score"], float) and math.isfinite(document["score"])
            assert document["score"] == chunk.score
        else:
            assert chunk.score is None or not math.isfinite(chunk.score)
    return parsed


@settings(max_examples=300, deadline=None)
@given(chunks, st.integers(min_value=0, max_value=400))
def test_the_attribute_always_parses_and_respects_the_limit(given_chunks: list[Chunk], limit: int) -> None:
    value, dropped = documents_json(given_chunks, limit)
    if value is None:
        assert limit < 2
        return
    parsed = _check(value, limit, given_chunks)
    assert dropped == (len(parsed) < len(given_chunks))
    if dropped:
        # Only as many are left out as needed: the next document would not have fitted.
        following = document_object(given_chunks[len(parsed)])
        assert len(value) + len(following) + (1 if parsed else 0) > limit


def test_ids_are_strings_and_missing_values_are_left_out() -> None:
    value, dropped = documents_json([Chunk("a", id="d1", score=0.5), Chunk("b"), Chunk("c", score=math.nan)], 1000)
    assert value is not None and not dropped
    assert json.loads(value) == [{"id": "d1", "score": 0.5}, {}, {}]


def test_a_retriever_span_keeps_whole_documents_when_many_do_not_fit(exporter: InMemorySpanExporter) -> None:
    _capture.set_settings(CaptureSettings(max_attribute_length=120))

    @ragtrace.retrieve
    def search(q: str) -> list[dict[str, Any]]:
        return [{"text": "t", "id": f"doc-{n}", "score": 1 / (n + 1)} for n in range(30)]

    search("q")
    [span] = exporter.get_finished_spans()
    attributes = span.attributes or {}
    text = str(attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
    documents = json.loads(text)
    assert len(text) <= 120
    assert 0 < len(documents) < 30
    assert [d["id"] for d in documents] == [f"doc-{n}" for n in range(len(documents))]
    assert attributes[semconv.RAGTRACE_CONTENT_TRUNCATED] is True
    assert attributes[semconv.RAGTRACE_CHUNK_COUNT] == 30
