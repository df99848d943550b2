"""Verification as small local models serve it: one yes/no question per claim, scored from logprobs.

Real HTTP to the stub server, which returns P(yes) in the logprobs of the answer token and records
whether each reply kept to the request's JSON schema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragtrace import ConfigurationError, RagRecord
from ragtrace.judges import JudgeError, Verdict
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import Faithfulness
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges.conftest import MakeJudge

CHUNK = "Brasilia is the capital of Brazil. It replaced Rio de Janeiro as the capital in 1960."


def _schema(request: Any) -> dict[str, Any]:
    schema: dict[str, Any] = request.body["response_format"]["json_schema"]["schema"]
    return schema


def _logprob_reply(p_yes: float, answer: str = "yes", chunk: int | None = None) -> dict[str, Any]:
    """A completion whose answer token carries P(yes) = ``p_yes`` against P(no): one word, or JSON
    naming a chunk."""
    import math

    content: dict[str, Any] = {"supported": answer, "contradicted": "no"}
    if chunk is not None:
        content["chunk"] = chunk
    text = json.dumps(content) if chunk is not None else answer
    head, tail = text.split(answer, 1)
    alternatives = [
        {"token": "yes", "logprob": math.log(p_yes), "bytes": None},
        {"token": "no", "logprob": math.log(1 - p_yes), "bytes": None},
    ]
    tokens = [
        {"token": head, "logprob": 0.0, "bytes": None, "top_logprobs": []},
        {"token": answer, "logprob": math.log(p_yes if answer == "yes" else 1 - p_yes), "bytes": None},
        {"token": tail, "logprob": 0.0, "bytes": None, "top_logprobs": []},
    ]
    tokens[1]["top_logprobs"] = alternatives
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": {"content": tokens},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


async def test_a_self_hosted_endpoint_gets_one_question_per_claim(stub: StubOpenAIServer) -> None:
    judge = OpenAIJudge(base_url=stub.base_url)
    try:
        assert (judge.verify_mode, judge.extract_mode) == ("per_claim", "sentences")
        claims = ["Brasilia is the capital of Brazil.", "Brasilia replaced Rio de Janeiro in 1960.", "Lima is in Peru."]
        reply = await judge.verify(claims, [CHUNK])
    finally:
        await judge.aclose()
    assert reply.value == [[Verdict.SUPPORTED], [Verdict.SUPPORTED], [Verdict.NEITHER]]
    requests = stub.chat_requests
    assert [r.step for r in requests] == ["verify_claim"] * 3
    assert reply.cost.chat_calls == 3
    for request in requests:
        # One chunk: one word asked for in plain text (small models answer it best), with logprobs.
        assert request.body["logprobs"] is True
        assert "response_format" not in request.body
        assert request.body["max_tokens"] == 4
        assert "Reply with one word: yes if" in request.body["messages"][0]["content"]
        assert request.body["messages"][1]["content"].endswith("Is the statement supported by the context?")


async def test_a_one_word_reply_is_read_and_anything_else_is_unparseable(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    stub.logprobs = False
    judge = make_judge(verify="per_claim", parse_retries=0)
    for content, verdict in (
        ("Yes.", Verdict.SUPPORTED),
        (" no", Verdict.NEITHER),
        ("Contradicted", Verdict.CONTRADICTED),
    ):
        stub.script(StubReply(content=content))
        assert (await judge.verify(["a claim"], ["a chunk"])).value == [[verdict]]
    stub.script(StubReply(content="Perhaps, the context is unclear."))
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["a claim"], ["a chunk"])
    assert caught.value.error_type == "unparseable_reply"


async def test_several_chunks_ask_for_json_naming_the_chunk(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge(verify="per_claim")
    await judge.verify(["Brasilia is the capital of Brazil."], ["Lima is in Peru.", CHUNK])
    (request,) = stub.chat_requests
    schema = _schema(request)
    assert schema["properties"]["supported"]["enum"] == ["yes", "no"]
    assert schema["properties"]["chunk"]["enum"] == [1, 2]
    assert request.schema_errors == ()
    # No example values in the prompt that a model could copy.
    shape = request.body["messages"][0]["content"].split("shaped:")[1]
    assert "[2]" not in shape and '"yes"' not in shape.replace('<"yes" or "no">', "")


def test_openai_itself_gets_the_batched_call() -> None:
    judge = OpenAIJudge(api_key="k", base_url="https://api.openai.com/v1")
    assert (judge.verify_mode, judge.extract_mode) == ("batched", "llm")


async def test_support_is_p_yes_from_the_logprobs_normalised_over_yes_and_no(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    stub.script(_scripted(_logprob_reply(0.8)), _scripted(_logprob_reply(0.3, answer="no")))
    judge = make_judge(verify="per_claim", max_concurrency=1)  # the claims' calls in order
    reply = await judge.support(["claim one", "claim two"], ["a chunk"])
    assert reply.value == [[pytest.approx(0.8)], [pytest.approx(0.3)]]


async def test_without_logprobs_the_written_answer_decides(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.logprobs = False
    judge = make_judge(verify="per_claim")
    support = await judge.support(["Brasilia is the capital of Brazil.", "Lima is in Peru."], [CHUNK])
    assert support.value == [[1.0], [0.0]]


async def test_the_verdict_follows_p_yes_not_the_written_word(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    # Written "no" with P(yes) 0.7 from the logprobs (sampling picked the less likely token): supported.
    stub.script(_scripted(_logprob_reply(0.7, answer="no")))
    judge = make_judge(verify="per_claim")
    reply = await judge.verify(["a claim"], ["a chunk"])
    assert reply.value == [[Verdict.SUPPORTED]]


async def test_the_support_threshold_moves_the_verdict_cut(
    stub: StubOpenAIServer, make_judge: MakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small model that leans to "no": P(yes) 0.3 for a supported claim. With the cut calibrated
    # for it (0.25) the claim is supported; with the default 0.5 it is not.
    replies = [_scripted(_logprob_reply(0.3, answer="no")) for _ in range(3)]
    stub.script(*replies)
    assert (await make_judge(verify="per_claim").verify(["a claim"], ["a chunk"])).value == [[Verdict.NEITHER]]
    calibrated = make_judge(verify="per_claim", support_threshold=0.25)
    assert (await calibrated.verify(["a claim"], ["a chunk"])).value == [[Verdict.SUPPORTED]]
    monkeypatch.setenv("RAGTRACE_JUDGE_SUPPORT_THRESHOLD", "0.25")
    from_variable = make_judge(verify="per_claim")
    assert from_variable.support_threshold == 0.25
    assert (await from_variable.verify(["a claim"], ["a chunk"])).value == [[Verdict.SUPPORTED]]
    with pytest.raises(ConfigurationError, match="support_threshold"):
        make_judge(support_threshold=1.5)


async def test_several_chunks_the_claim_is_placed_at_the_chunk_it_rests_on(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    judge = make_judge(verify="per_claim")
    chunks = ["Lima is the capital of Peru.", CHUNK, "Quito is in Ecuador."]
    verdicts = await judge.verify(["Brasilia is the capital of Brazil."], chunks)
    support = await judge.support(["Brasilia is the capital of Brazil."], chunks)
    assert verdicts.value == [[Verdict.NEITHER, Verdict.SUPPORTED, Verdict.NEITHER]]
    assert support.value[0][0] == support.value[0][2] == 0.0 and support.value[0][1] > 0.5
    assert _schema(stub.chat_requests[0])["properties"]["chunk"]["enum"] == [1, 2, 3]
    assert all(r.schema_errors == () for r in stub.chat_requests)


@pytest.mark.parametrize("step", ["rate_chunks", "verify_claim_rated", "verify_rated"])
async def test_ratings_are_asked_under_one_required_key_per_chunk(
    stub: StubOpenAIServer, make_judge: MakeJudge, step: str
) -> None:
    """A server that holds its output to the schema can write neither too few ratings nor a chunk twice:
    asked as a list, a 0.5B model left a chunk out of every several-chunk reply."""
    judge = make_judge(verify="batched" if step == "verify_rated" else "per_claim", rate_chunks_in_verify=True)
    chunks = ["Lima is the capital of Peru.", CHUNK, "Quito is in Ecuador."]
    if step == "rate_chunks":
        ratings = (await judge.rate_chunks("What is the capital of Brazil?", chunks)).value
    else:
        reply = await judge.verify(["Brasilia is the capital of Brazil."], chunks, question="Capital of Brazil?")
        assert reply.relevance is not None
        ratings = list(reply.relevance)
    (request,) = stub.chat_requests
    assert request.step == step and request.schema_errors == ()
    schema = _schema(request)["properties"]["ratings"]
    assert schema["required"] == list(schema["properties"]) == ["chunk_1", "chunk_2", "chunk_3"]
    assert schema["additionalProperties"] is False
    assert all(p == {"type": "number", "minimum": 0, "maximum": 1} for p in schema["properties"].values())
    assert ratings[1] > ratings[0] and ratings[1] > ratings[2]  # the stub rates by word overlap


RATINGS_AS_WRITTEN: list[Any] = [
    {"chunk_2": 0.25, "chunk_1": 1},
    {"1": 1, "Chunk 2": 0.25},
    [{"chunk": "2", "relevance": "0.25"}, {"chunk": 1, "relevance": 1}],
]


@pytest.mark.parametrize("ratings", RATINGS_AS_WRITTEN)
async def test_ratings_are_read_by_key_in_any_order_or_as_a_list(
    stub: StubOpenAIServer, make_judge: MakeJudge, ratings: Any
) -> None:
    judge = make_judge(parse_retries=0, verify="batched", rate_chunks_in_verify=True)
    stub.script(StubReply(content=json.dumps({"ratings": ratings})))
    assert (await judge.rate_chunks("q?", ["one", "two"])).value == [1.0, 0.25]
    verdicts = {"results": [{"claim": 1, "supported_by": [1], "contradicted_by": []}]}
    stub.script(StubReply(content=json.dumps({**verdicts, "ratings": ratings})))
    reply = await judge.verify(["a claim"], ["one", "two"], question="q?")
    assert reply.relevance == [1.0, 0.25]
    assert reply.value == [[Verdict.SUPPORTED, Verdict.NEITHER]]


async def test_batched_ratings_that_cannot_be_read_leave_the_verdicts(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    """As per claim: the verdicts stand, ``relevance`` is None (the suite then asks rate_chunks), no retry."""
    judge = make_judge(verify="batched", rate_chunks_in_verify=True)
    verdicts = {"results": [{"claim": 1, "supported_by": [], "contradicted_by": [2]}]}
    stub.script(StubReply(content=json.dumps({**verdicts, "ratings": {"chunk_1": 0.5}})))
    reply = await judge.verify(["a claim"], ["one", "two"], question="q?")
    assert reply.value == [[Verdict.NEITHER, Verdict.CONTRADICTED]]
    assert reply.relevance is None
    assert len(stub.chat_requests) == 1


@pytest.mark.parametrize(
    ("ratings", "message"),
    [
        ({"chunk_1": 0.5}, "reply lacks chunk 2 of 2"),
        ({"chunk_1": 0.5, "chunk_2": 1, "chunk_3": 1}, "reply names chunk 3, but the request has chunks 1 to 2"),
        ({"chunk_1": 0.5, "1": 0.5, "chunk_2": 1}, "reply gives chunk 1 twice"),
        ({"chunk_1": 0.5, "second": 1}, "ratings name 'second', but the request has chunks 1 to 2"),
    ],
)
async def test_ratings_for_other_chunks_than_the_request_has_are_invalid(
    stub: StubOpenAIServer, make_judge: MakeJudge, ratings: dict[str, float], message: str
) -> None:
    stub.script(StubReply(content=json.dumps({"ratings": ratings})))
    judge = make_judge(parse_retries=0)
    with pytest.raises(JudgeError) as caught:
        await judge.rate_chunks("q?", ["one", "two"])
    assert caught.value.error_type == "invalid_reply"
    assert message in str(caught.value)


async def test_a_claim_answer_citing_a_chunk_that_does_not_exist_is_invalid(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    # The measured failure was chunk 2 of a one-chunk record: one chunk now asks for one word (nothing
    # to cite), and with several chunks a number the request lacks is an invalid reply.
    stub.responder = lambda step, _body: {"supported": "yes", "contradicted": "no", "chunk": 3}
    judge = make_judge(verify="per_claim")
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["a claim", "another claim"], ["chunk one", "chunk two"])
    assert caught.value.error_type == "invalid_reply"
    assert "rests on chunk 3, but the request has chunks 1 to 2" in str(caught.value)
    # The stub saw the reply break the enum a constrained server would have enforced.
    assert any("is not one of [1, 2]" in e for r in stub.chat_requests for e in r.schema_errors)


async def test_a_failing_claim_fails_the_step_with_the_cost_of_every_call(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    stub.responder = lambda step, body: "not an answer" if "second" in body["messages"][1]["content"] else "yes"
    judge = make_judge(verify="per_claim", parse_retries=0)
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["first claim", "second claim"], ["chunk"])
    assert caught.value.error_type == "unparseable_reply"
    assert caught.value.cost.chat_calls == 2


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        ("1959", ["In what year was Ada born? 1959"]),  # a bare answer keeps the question's meaning
        ("Ada Lovelace.", ["In what year was Ada born? Ada Lovelace"]),
        ("I don't know.", []),
        ("Unknown.", []),  # a refusal asserts nothing to check
        ("No idea", []),
        ("Maybe. She was born in 1959.", ["In what year was Ada born? She was born in 1959."]),  # a shrug
        ("The provided context does not mention her birth year.", []),
        ("It is not mentioned.", []),
        ("The document was signed in 1776.", ["In what year was Ada born? The document was signed in 1776."]),
        # A negative fact about a document is a fact: no verb of saying is negated.
        ("The document was not signed until 1787.",
         ["In what year was Ada born? The document was not signed until 1787."]),
        ("The context says she was born in 1815.",  # the sources named, nothing refused
         ["In what year was Ada born? The context says she was born in 1815."]),
        ("Ada did not say goodbye.", ["In what year was Ada born? Ada did not say goodbye."]),  # no sources named
        ("She was born in 1959. She wrote code.", ["In what year was Ada born? She was born in 1959.",
                                                   "In what year was Ada born? She wrote code."]),
    ],
)  # fmt: skip
async def test_sentence_claims_keep_the_question(
    stub: StubOpenAIServer, make_judge: MakeJudge, answer: str, claims: list[str]
) -> None:
    judge = make_judge(verify="per_claim", extract="sentences")
    reply = await judge.extract_claims(answer, question="In what year was Ada born?")
    assert reply.value == claims
    assert stub.chat_requests == []  # no call


async def test_a_bare_answer_needs_no_extraction_call_in_any_mode(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    judge = make_judge(extract="llm")
    reply = await judge.extract_claims("1959", question="In what year was Ada born?")
    assert reply.value == ["In what year was Ada born? 1959"]
    assert stub.chat_requests == []


async def test_faithfulness_per_claim_over_real_http(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge(verify="per_claim", extract="sentences")
    record = RagRecord.of(
        "What is the capital of Brazil?",
        [CHUNK],
        "Brasilia is the capital of Brazil. Brasilia replaced Rio de Janeiro as the capital in 1960. Lima is big.",
    )
    score = await Faithfulness().score(record, judge)
    by_verdicts = await Faithfulness(scoring="verdicts").score(record, judge)
    assert by_verdicts.value == pytest.approx(2 / 3)
    # By default each claim counts by its P("yes"): the expected share of supported claims.
    claims = (await judge.extract_claims(record.answer, question=record.query)).value
    support = (await judge.support(claims, [CHUNK])).value
    assert score.value == pytest.approx(sum(max(row) for row in support) / 3)
    assert score.value != pytest.approx(by_verdicts.value)
    assert score.label == by_verdicts.label == "partially_faithful"
    assert score.cost.chat_calls == by_verdicts.cost.chat_calls == 3


def test_wrong_modes_raise_configuration_error() -> None:

    with pytest.raises(ConfigurationError, match="verify='sometimes' is unknown"):
        OpenAIJudge(api_key="k", verify="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="extract='words' is unknown"):
        OpenAIJudge(api_key="k", extract="words")  # type: ignore[arg-type]


def test_the_default_timeout_suits_a_model_on_a_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace.judges.openai import DEFAULT_TIMEOUT

    monkeypatch.delenv("RAGTRACE_JUDGE_TIMEOUT", raising=False)
    assert OpenAIJudge(api_key="k").timeout == DEFAULT_TIMEOUT == 180.0
    monkeypatch.setenv("RAGTRACE_JUDGE_TIMEOUT", "45")
    assert OpenAIJudge(api_key="k").timeout == 45.0


def _scripted(body: dict[str, Any]) -> Any:
    from ragtrace.testing._stub_openai import StubReply

    return StubReply(body=body)
