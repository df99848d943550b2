"""The production suite on the OpenAI-compatible judge: its call budget, counted from the server's log."""

from __future__ import annotations

import pytest

from ragtrace import RagRecord
from ragtrace._stub_openai import StubOpenAIServer
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import PRODUCTION_METRICS, build_suite

CHUNK = "Brasilia is the capital of Brazil. It replaced Rio de Janeiro as the capital in 1960."
ANSWER = "The capital of Brazil is Brasilia. It became the capital in 1960. Brazil is in South America."


@pytest.mark.parametrize("chunks", [1, 20])
async def test_production_suite_costs_at_most_4_chat_and_1_embeddings_call(stub: StubOpenAIServer, chunks: int) -> None:
    judge = OpenAIJudge(base_url=stub.base_url)
    record = RagRecord.of(
        query="What is the capital of Brazil?",
        chunks=[CHUNK] + [f"Unrelated note {i} about weather in Lima." for i in range(chunks - 1)],
        answer=ANSWER,
    )
    try:
        result = await build_suite().score(record, judge)
    finally:
        await judge.aclose()
    assert set(result.scores) == set(PRODUCTION_METRICS)
    assert all(score.ok for score in result.scores.values()), result.scores
    assert len(stub.chat_requests) <= 4
    assert len(stub.embedding_requests) <= 1
    assert all(r.status == 200 for r in stub.requests)
    # What the suite says it spent is what the server saw.
    assert (result.cost.chat_calls, result.cost.embedding_calls) == (
        len(stub.chat_requests),
        len(stub.embedding_requests),
    )
    assert (result.cost.prompt_tokens, result.cost.completion_tokens) == stub.usage()
    assert result.judge == judge.name
