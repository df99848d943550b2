"""The production suite on the OpenAI-compatible judge: its call budget, counted from the server's log, and
context relevance read in the verification call (the same ratings as a call of its own, without the call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pytest

from ragtrace import RagRecord
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import PRODUCTION_METRICS, ContextRelevance, Faithfulness, Suite, build_suite
from ragtrace.testing._stub_openai import StubOpenAIServer

CHUNK = "Brasilia is the capital of Brazil. It replaced Rio de Janeiro as the capital in 1960."
ANSWER = "The capital of Brazil is Brasilia. It became the capital in 1960. Brazil is in South America."


@pytest.mark.parametrize("chunks", [1, 20])
@pytest.mark.parametrize("verify", ["batched", "per_claim"])
@pytest.mark.parametrize("rated", [None, True])
async def test_production_suite_costs_at_most_3_chat_and_1_embeddings_call(
    stub: StubOpenAIServer, chunks: int, verify: Literal["batched", "per_claim"], rated: bool | None
) -> None:
    """Batched: extract, verify (the chunks rated in the same call, no rate_chunks call), questions (3 chat)
    + 1 embeddings call, whatever the claims and chunks. Per claim: the answer's 3 sentences are its claims
    (no call), one question each (3), questions (1), and with one chunk by default rate chunks apart (1): 5
    chat + 1 embeddings call, i.e. 2 + one per claim; with several chunks, or ``rate_chunks_in_verify=True``,
    the first claim's question rates them: 1 + one per claim."""
    judge = OpenAIJudge(base_url=stub.base_url, verify=verify, rate_chunks_in_verify=rated)
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
    apart = verify == "per_claim" and rated is None and chunks == 1
    assert len(stub.chat_requests) == (3 if verify == "batched" else 1 + 3) + apart
    steps = [r.step for r in stub.chat_requests]
    assert steps.count("rate_chunks") == apart
    assert steps.count("verify_rated" if verify == "batched" else "verify_claim_rated") == (not apart)
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


def _record(chunks: int = 2, answer: str = ANSWER) -> RagRecord:
    return RagRecord.of(
        query="What is the capital of Brazil?",
        chunks=[CHUNK] + [f"Unrelated note {i} about weather in Lima." for i in range(chunks - 1)],
        answer=answer,
    )


async def _scores(stub: StubOpenAIServer, suite: Suite, record: RagRecord, **options: Any) -> dict[str, Any]:
    judge = OpenAIJudge(base_url=stub.base_url, **options)
    try:
        result = await suite.score(record, judge)
    finally:
        await judge.aclose()
    return {name: (score.value, score.details.get("ratings")) for name, score in result.scores.items()}


@pytest.mark.parametrize("chunks", [1, 3])
@pytest.mark.parametrize("verify", ["batched", "per_claim"])
async def test_ratings_read_in_verification_equal_a_rate_chunks_call(
    stub: StubOpenAIServer, chunks: int, verify: Literal["batched", "per_claim"]
) -> None:
    """The ratings the verification call carries are the ones a rate_chunks call gives (the stub rates both
    alike), and every other score of the suite is unchanged; only the call is saved."""
    record = _record(chunks)
    shared = await _scores(stub, build_suite(), record, verify=verify, rate_chunks_in_verify=True)
    shared_calls = len(stub.chat_requests)
    separate = await _scores(stub, build_suite(), record, verify=verify, rate_chunks_in_verify=False)
    second = stub.chat_requests[shared_calls:]
    assert [r.step for r in second].count("rate_chunks") == 1
    assert not any(r.step in ("verify_rated", "verify_claim_rated") for r in second)
    assert len(second) == shared_calls + 1
    assert shared == separate
    ratings = shared["context_relevance"][1]
    assert len(ratings) == chunks and ratings[0] > 0.5  # the chunk that answers, rated as rate_chunks rates it
    assert all(r < 0.5 for r in ratings[1:])


async def test_the_question_is_shown_to_verification_only_when_the_chunks_are_rated_there(
    stub: StubOpenAIServer,
) -> None:
    """Per claim: the first claim's question carries the record's question and asks for the ratings; the
    others are the plain yes/no question (one chunk: the one-word prompt)."""
    await _scores(stub, build_suite(), _record(1), verify="per_claim", rate_chunks_in_verify=True)
    verifications = [r for r in stub.chat_requests if r.step in ("verify_claim", "verify_claim_rated")]
    assert [r.step for r in verifications].count("verify_claim_rated") == 1
    for request in verifications:
        user = request.body["messages"][-1]["content"]
        rated = request.step == "verify_claim_rated"
        assert user.startswith("Question: What is the capital of Brazil?") is rated
        assert ("relevance to the question" in request.body["messages"][0]["content"]) is rated


async def test_context_relevance_alone_asks_rate_chunks(stub: StubOpenAIServer) -> None:
    """A suite that verifies nothing, and the metric scored on its own, ask rate_chunks: one call, no
    claim extracted or verified for it."""
    judge = OpenAIJudge(base_url=stub.base_url)
    try:
        alone = await ContextRelevance().score(_record(), judge)
        suite = await Suite([ContextRelevance()]).score(_record(), judge)
    finally:
        await judge.aclose()
    assert alone.ok and suite.scores["context_relevance"].ok
    assert [r.step for r in stub.chat_requests] == ["rate_chunks", "rate_chunks"]


async def test_an_empty_answer_rates_the_chunks_in_a_call_of_their_own(stub: StubOpenAIServer) -> None:
    """Nothing is verified for an empty answer: context relevance still measured, by rate_chunks."""
    scores = await _scores(stub, Suite([Faithfulness(), ContextRelevance()]), _record(answer=""))
    assert scores["faithfulness"][0] is None
    assert scores["context_relevance"][0] is not None
    assert [r.step for r in stub.chat_requests] == ["rate_chunks"]


@pytest.mark.parametrize("verify", ["batched", "per_claim"])
async def test_a_verification_that_fails_leaves_context_relevance_to_rate_chunks(
    stub: StubOpenAIServer, verify: Literal["batched", "per_claim"]
) -> None:
    """A rated verification whose reply cannot be read (no ratings, after the retry) fails faithfulness,
    not context relevance: that is asked on its own."""

    def responder(step: str, body: Mapping[str, Any]) -> Any:
        return {"results": []} if step in ("verify_rated", "verify_claim_rated") else None

    stub.responder = responder
    suite = Suite([Faithfulness(), ContextRelevance()])
    scores = await _scores(stub, suite, _record(), verify=verify, rate_chunks_in_verify=True)
    assert scores["faithfulness"][0] is None
    assert scores["context_relevance"][0] is not None
    assert [r.step for r in stub.chat_requests].count("rate_chunks") == 1


async def test_garbled_ratings_in_a_per_claim_verification_keep_the_claims_answer(stub: StubOpenAIServer) -> None:
    """Per claim, a rated reply whose answer reads but whose ratings do not (a chunk missing, as a 0.5B model
    wrote them for every two-chunk calibration record of bench/verify_rated_choice.py) keeps faithfulness
    from that reply, in that one call: only context relevance is asked again, by rate_chunks."""
    garbled = {"supported": "yes", "contradicted": "no", "chunk": 1, "ratings": [{"chunk": 1, "relevance": 0.9}]}

    def responder(step: str, body: Mapping[str, Any]) -> Any:
        return garbled if step == "verify_claim_rated" else None

    stub.responder = responder
    record = _record(2, answer="The capital of Brazil is Brasilia.")
    suite = Suite([Faithfulness(), ContextRelevance()])
    scores = await _scores(stub, suite, record, verify="per_claim", rate_chunks_in_verify=True)
    assert [r.step for r in stub.chat_requests] == ["verify_claim_rated", "rate_chunks"]
    plain = await _scores(stub, suite, record, verify="per_claim", rate_chunks_in_verify=False)
    assert scores["faithfulness"][0] is not None
    assert scores == plain  # the claim's P(yes) read from the rated reply; the ratings from rate_chunks


async def test_a_suite_that_rates_no_chunks_verifies_without_the_question(stub: StubOpenAIServer) -> None:
    """Nobody reads ratings in a suite without context relevance: verification is asked as it always was."""
    await _scores(stub, Suite([Faithfulness()]), _record(1), verify="per_claim", rate_chunks_in_verify=True)
    await _scores(stub, Suite([Faithfulness()]), _record(1), verify="batched")
    assert {r.step for r in stub.chat_requests} == {"verify_claim", "extract_claims", "verify"}
    verifications = [r for r in stub.chat_requests if r.step != "extract_claims"]
    assert not any(r.body["messages"][-1]["content"].startswith("Question:") for r in verifications)


def test_rate_chunks_in_verify_takes_a_boolean() -> None:
    from ragtrace.environment_variables import ConfigurationError

    with pytest.raises(ConfigurationError, match="rate_chunks_in_verify"):
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", rate_chunks_in_verify="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("verify", "rated", "steps_by_chunks"),
    [
        ("batched", None, {1: {"verify_rated"}, 3: {"verify_rated"}}),
        ("per_claim", None, {1: {"verify_claim", "rate_chunks"}, 3: {"verify_claim_rated"}}),
        ("per_claim", True, {1: {"verify_claim_rated"}, 3: {"verify_claim_rated"}}),
        ("per_claim", False, {1: {"verify_claim", "rate_chunks"}, 3: {"verify_claim", "rate_chunks"}}),
        ("batched", False, {1: {"verify", "rate_chunks"}, 3: {"verify", "rate_chunks"}}),
    ],
)
async def test_by_default_one_chunk_per_claim_keeps_its_one_word_question(
    stub: StubOpenAIServer,
    verify: Literal["batched", "per_claim"],
    rated: bool | None,
    steps_by_chunks: dict[int, set[str]],
) -> None:
    """Per claim (small self-hosted models) a one-chunk record's yes/no question is one word, which rating the
    chunk too would turn into JSON (a 0.5B model's AUROC 0.779 -> 0.715): by default its chunk is rated apart.
    With several chunks the question is JSON naming its chunk either way, and the ratings ride on it; batched
    (one JSON call for every claim) always rates them there. True or False forces either way."""
    suite = Suite([Faithfulness(), ContextRelevance()])
    answer = "The capital of Brazil is Brasilia."
    for chunks, expected in steps_by_chunks.items():
        before = len(stub.chat_requests)
        scores = await _scores(stub, suite, _record(chunks, answer=answer), verify=verify, rate_chunks_in_verify=rated)
        asked = [r for r in stub.chat_requests[before:] if r.step != "extract_claims"]
        assert sorted(r.step for r in asked) == sorted(expected)  # each step once: nothing asked twice
        for request in asked:
            # The one-word question is asked without a response format; every other step with its schema.
            one_word = request.step == "verify_claim" and chunks == 1
            assert ("response_format" in request.body) is not one_word
        assert all(value is not None for value, _ in scores.values())


@pytest.mark.parametrize(("chunks", "calls"), [(1, 1), (3, 2)])
async def test_context_relevance_waits_on_verification_only_where_it_reads_its_ratings(
    stub: StubOpenAIServer, chunks: int, calls: int
) -> None:
    """Per claim by default: one chunk is rated by its own rate_chunks call, which context_relevance neither
    waits on verification for nor is charged verification's calls; several chunks are rated in the first
    claim's question, whose call (with the second claim's) is what context_relevance spent."""
    judge = OpenAIJudge(base_url=stub.base_url, verify="per_claim")
    record = _record(chunks, answer="The capital of Brazil is Brasilia. It replaced Rio de Janeiro in 1960.")
    try:
        result = await Suite([Faithfulness(), ContextRelevance()]).score(record, judge)
    finally:
        await judge.aclose()
    assert result.scores["context_relevance"].ok
    assert result.scores["context_relevance"].cost.chat_calls == calls
