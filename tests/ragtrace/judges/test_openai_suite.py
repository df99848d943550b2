"""The production suite on the OpenAI-compatible judge: its call budget, counted from the server's log."""

from __future__ import annotations

from typing import Literal

import pytest

from ragtrace import RagRecord
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import PRODUCTION_METRICS, build_suite
from ragtrace.testing._stub_openai import StubOpenAIServer

CHUNK = "Brasilia is the capital of Brazil. It replaced Rio de Janeiro as the capital in 1960."
ANSWER = "The capital of Brazil is Brasilia. It became the capital in 1960. Brazil is in South America."


@pytest.mark.parametrize("chunks", [1, 20])
@pytest.mark.parametrize("verify", ["batched", "per_claim"])
async def test_production_suite_costs_at_most_4_chat_and_1_embeddings_call(
    stub: StubOpenAIServer, chunks: int, verify: Literal["batched", "per_claim"]
) -> None:
    """Batched: extract, verify, rate chunks, questions (4 chat) + 1 embeddings call, whatever the claims
    and chunks. Per claim: the answer's 3 sentences are its claims (no call), one question each (3),
    rate chunks and questions (2): 5 chat + 1 embeddings call, i.e. 2 + one per claim."""
    judge = OpenAIJudge(base_url=stub.base_url, verify=verify)
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
    assert len(stub.chat_requests) == (4 if verify == "batched" else 2 + 3)
    assert all(not r.schema_errors for r in stub.chat_requests)
    assert len(stub.embedding_requests) <= 1
    assert all(r.status == 200 for r in stub.requests)
    # What the suite says it spent is what the server saw.
    assert (result.cost.chat_calls, result.cost.embedding_calls) == (
        len(stub.chat_requests),
        len(stub.embedding_requests),
    )
    assert (result.cost.prompt_tokens, result.cost.completion_tokens) == stub.usage()
    assert result.judge == judge.name
