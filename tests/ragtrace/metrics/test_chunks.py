"""Chunk-level metrics: worked examples, shared verify matrix, edge cases (200 chunks, huge chunks)."""

from __future__ import annotations

import pytest

from ragtrace import RagRecord
from ragtrace.judges import Verdict
from ragtrace.metrics import ContextPrecision, ContextRelevance, ContextRelevanceWeighted
from ragtrace.metrics.chunks import average_precision, decayed_mean
from ragtrace.testing import FakeJudge

S, N = Verdict.SUPPORTED, Verdict.NEITHER


def test_worked_examples_of_the_arithmetic() -> None:
    assert decayed_mean([0.9, 0.8, 0.3, 0.2], 0.9) == pytest.approx(2.0088 / 3.439, abs=1e-4)
    assert decayed_mean([0.9, 0.8, 0.3, 0.2], 0.9) == pytest.approx(0.5841, abs=1e-4)
    assert average_precision([True, True, False, True, False]) == pytest.approx(0.9167, abs=1e-4)
    assert average_precision([False, True]) == pytest.approx(0.5, abs=1e-4)
    assert average_precision([False, False]) == 0.0


async def test_relevance_mean_and_weighted_share_one_rating_call_in_a_suite() -> None:
    from ragtrace.metrics import Suite

    record = RagRecord.of("q", ["a", "b", "c", "d"])
    judge = FakeJudge(rate_chunks=[0.9, 0.8, 0.3, 0.2])
    result = await Suite([ContextRelevance(), ContextRelevanceWeighted()]).score(record, judge)
    assert result.value("context_relevance") == pytest.approx(0.55, abs=1e-4)
    assert result.value("context_relevance_weighted") == pytest.approx(0.5841, abs=1e-4)
    assert result.scores["context_relevance"].details["relevant_chunks"] == 2
    assert judge.count() == 1


async def test_context_precision_against_the_reference() -> None:
    chunks = ["c1", "c2", "c3", "c4", "c5"]
    record = RagRecord.of("q", chunks, "answer", reference="ref")
    judge = FakeJudge(extract_claims={"ref": ["r1", "r2"]}, verify={"r1": [S, N, N, S, N], "r2": [N, S, N, N, N]})
    score = await ContextPrecision().score(record, judge)
    assert score.value == pytest.approx(0.9167, abs=1e-4)
    assert score.details["method"] == "reference_claims"


async def test_context_precision_against_the_answer_without_reference() -> None:
    record = RagRecord.of("q", ["c1", "c2"], "answer")
    judge = FakeJudge(extract_claims={"answer": ["a1"]}, verify={"a1": [N, S]})
    score = await ContextPrecision().score(record, judge)
    assert score.value == pytest.approx(0.5, abs=1e-4)
    assert score.details["method"] == "answer_claims"


async def test_context_precision_with_no_useful_chunk_is_zero_not_absent() -> None:
    judge = FakeJudge(extract_claims=["a1"], verify={"a1": N})
    score = await ContextPrecision().score(RagRecord.of("q", ["c1", "c2"], "answer"), judge)
    assert (score.value, score.status) == (0.0, "ok")


async def test_two_hundred_chunks_are_rated_in_one_call() -> None:
    chunks = [f"chunk {i}" for i in range(200)]
    judge = FakeJudge(rate_chunks=lambda query, texts: [1.0 if t.endswith("7") else 0.0 for t in texts])
    score = await ContextRelevance().score(RagRecord.of("q", chunks, "a"), judge)
    assert score.value == pytest.approx(20 / 200)
    assert judge.count() == 1


async def test_a_ten_thousand_word_chunk_goes_through_whole() -> None:
    big = " ".join(["word"] * 10_000)
    judge = FakeJudge(rate_chunks={big: 0.25})
    score = await ContextRelevance().score(RagRecord.of("q", [big], "a"), judge)
    assert score.value == 0.25
    assert judge.calls[0].args[1] == (big,)


async def test_non_english_text_is_passed_unchanged() -> None:
    query, chunk = "¿Cuál es la capital de Perú?", "Lima es la capital del Perú. 東京は日本の首都です。"
    judge = FakeJudge(rate_chunks={chunk: 0.75})
    score = await ContextRelevance().score(RagRecord.of(query, [chunk], "Lima"), judge)
    assert score.value == 0.75
    assert judge.calls[0].args == (query, (chunk,))


@pytest.mark.parametrize("ratings", [[0.5], [0.5, 1.5], [0.5, float("nan")], [0.5, "high"], [0.5, True]])
async def test_bad_ratings_are_explained_errors(ratings: list[object]) -> None:
    judge = FakeJudge(rate_chunks=lambda q, c: ratings)
    score = await ContextRelevance().score(RagRecord.of("q", ["a", "b"], "x"), judge)
    assert (score.value, score.reason) == (None, "unparseable_reply")


async def test_no_chunks_and_empty_query() -> None:
    judge = FakeJudge(rate_chunks=[1.0])
    assert (await ContextRelevance().score(RagRecord.of("q", [], "a"), judge)).reason == "no_chunks"
    assert (await ContextRelevance().score(RagRecord.of(" ", ["c"], "a"), judge)).reason == "no_query"
    assert judge.calls == []
