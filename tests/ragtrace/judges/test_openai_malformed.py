"""A 200 reply whose body is broken or misshapen is a JudgeError with a documented type, never a raw Python error."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from ragtrace._record import RagRecord
from ragtrace.judges import JudgeError
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.openai.retry import Tally
from ragtrace.metrics import build_suite
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges.conftest import MakeJudge

TRUNCATED = StubReply(body='{"id": "chatcmpl-1", "choices": [{"message": {"content": "{\\"noncomm')


def _completion(**choice: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [{"index": 0, **choice}]}


async def test_a_body_that_is_not_json_is_retried_like_a_server_fault(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    stub.script(TRUNCATED)
    judge = make_judge()
    reply = await judge.detect_noncommittal("I don't know.")
    assert reply.value is True
    assert reply.cost.chat_calls == 2


async def test_a_body_that_stays_broken_fails_as_invalid_response(
    stub: StubOpenAIServer, make_judge: MakeJudge, caplog: pytest.LogCaptureFixture
) -> None:
    stub.script(*[TRUNCATED] * 3)
    judge = make_judge(max_retries=2)
    with pytest.raises(JudgeError) as caught:
        await judge.detect_noncommittal("I don't know.")
    assert caught.value.error_type == "invalid_response"
    assert "not JSON" in str(caught.value)
    assert caught.value.cost.chat_calls == 3 == len(stub.chat_requests)


async def test_a_suite_on_broken_bodies_records_the_type_without_a_traceback(
    stub: StubOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    stub.script(*[TRUNCATED] * 4)
    judge = OpenAIJudge(base_url=stub.base_url, max_retries=1, retry_base_delay=0.0, verify="batched")
    try:
        record = RagRecord.of("q?", ["Paris is in France."], "Paris is in France.")
        with caplog.at_level(logging.WARNING):
            result = await build_suite("faithfulness,hallucination").score(record, judge)
    finally:
        await judge.aclose()
    assert {s.error_type for s in result.scores.values()} == {"invalid_response"}
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    "body",
    [
        _completion(message=None, finish_reason="stop"),
        _completion(finish_reason="stop"),
        _completion(message={"role": "assistant", "content": 5}),
        {"id": "chatcmpl-1", "choices": None},
        {"id": "chatcmpl-1", "choices": "none"},
        "null",
        "[1]",
    ],
)
async def test_a_misshapen_completion_is_an_unparseable_reply(
    stub: StubOpenAIServer, make_judge: MakeJudge, body: Any
) -> None:
    stub.script(StubReply(body=body), StubReply(body=body))
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.detect_noncommittal("I don't know.")
    assert caught.value.error_type == "unparseable_reply"
    assert len(stub.chat_requests) == 2  # asked again once (parse_retries=1)


async def test_malformed_logprobs_are_ignored(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    body = _completion(
        message={"role": "assistant", "content": '{"score": 4, "explanation": "ok"}'},
        logprobs={"content": [{"token": "4", "logprob": None, "top_logprobs": [{"token": "4", "logprob": None}]}]},
    )
    stub.script(StubReply(body=body))
    judge = make_judge()
    reply = await judge.geval_score("clarity", ["read it"], {"answer": "a"}, (1, 5))
    assert (reply.value.score, reply.value.weighted) == (4.0, False)  # the written integer


def test_usage_that_is_not_a_count_is_not_counted() -> None:
    tally = Tally()
    tally.add_usage(SimpleNamespace(prompt_tokens="many", completion_tokens=None))
    tally.add_usage(None)
    tally.add_usage(SimpleNamespace(prompt_tokens=7, completion_tokens=2))
    assert (tally.prompt_tokens, tally.completion_tokens) == (7, 2)


@pytest.mark.parametrize(
    "data",
    [
        [{"index": 0, "embedding": [0.1, None]}],  # a null inside the vector
        [{"index": 0, "embedding": "AAAA"}],  # base64 although floats were asked
        [{"index": 0, "embedding": []}],
        [{"index": "first", "embedding": [0.1]}],
        [None],
        None,
    ],
)
async def test_a_misshapen_embedding_is_an_unparseable_reply(
    stub: StubOpenAIServer, make_judge: MakeJudge, data: Any
) -> None:
    body = {"object": "list", "model": "m", "data": data}
    stub.script(StubReply(body=body), StubReply(body=body))
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.embed(["Paris"])
    assert caught.value.error_type == "unparseable_reply"
    assert caught.value.cost.embedding_calls == 2 == len(stub.embedding_requests)


async def test_embeddings_without_indices_are_in_input_order(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(body={"object": "list", "data": [{"embedding": [1, 0]}, {"embedding": [0.0, 1.0]}]}))
    judge = make_judge()
    assert (await judge.embed(["a", "b"])).value == [[1.0, 0.0], [0.0, 1.0]]


async def test_a_broken_embedding_then_a_good_one_recovers(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(StubReply(body={"object": "list", "data": [{"index": 0, "embedding": [None]}]}))
    judge = make_judge()
    reply = await judge.embed(["Paris"])
    assert len(reply.value) == 1 and reply.value[0]
    assert reply.cost.embedding_calls == 2
