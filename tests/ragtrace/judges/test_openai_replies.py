"""Replies that do not hold what a step asked for are asked again, then fail: a verdict is never filled in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ragtrace._record import RagRecord
from ragtrace.judges import JudgeError, Verdict
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import build_suite
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges.conftest import MakeJudge


@pytest.mark.parametrize(
    "item",
    [
        {"claim": 1},  # no lists at all
        {"claim": 1, "verdict": "supported"},  # one word for the claim, not per chunk
        {"claim": 1, "supported": True, "contradicted": False},  # booleans, not chunk numbers
        {"claim": 1, "supported_by": [1]},  # contradicted_by missing: chunk 2 unread
        {"claim": 1, "supported_by": ["the first one"], "contradicted_by": []},  # not a chunk number
    ],
)
async def test_a_verify_item_without_its_lists_is_unparseable(
    stub: StubOpenAIServer, make_judge: MakeJudge, item: dict[str, Any]
) -> None:
    stub.responder = lambda step, _body: {"results": [item]} if step == "verify" else None
    judge = make_judge()
    with pytest.raises(JudgeError) as caught:
        await judge.verify(["Paris is in France."], ["Paris is in France.", "Lyon is in France."])
    assert caught.value.error_type == "unparseable_reply"
    assert [r.step for r in stub.chat_requests] == ["verify", "verify"]  # asked again once (parse_retries=1)


async def test_one_verdict_for_two_chunks_is_an_invalid_reply(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.responder = lambda step, _body: (
        {"results": [{"claim": 1, "verdicts": ["supported"]}]} if step == "verify" else None
    )
    with pytest.raises(JudgeError) as caught:
        await make_judge().verify(["Paris is in France."], ["Paris is in France.", "Lyon is in France."])
    assert caught.value.error_type == "invalid_reply"
    assert "1 verdicts for 2 chunks" in str(caught.value)


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"claim": 1, "supported_by": [1], "contradicted_by": []}, [Verdict.SUPPORTED, Verdict.NEITHER]),
        ({"claim": 1, "supported_by": ["[chunk 2]"], "contradicted_by": None}, [Verdict.NEITHER, Verdict.SUPPORTED]),
        ({"claim": 1, "Supported_By": 2, "contradicted_by": "#1"}, [Verdict.CONTRADICTED, Verdict.SUPPORTED]),
        ({"claim": 1, "verdicts": ["neutral", "contradicted"]}, [Verdict.NEITHER, Verdict.CONTRADICTED]),
    ],
)
async def test_verify_reads_the_shapes_that_say_one_thing(
    stub: StubOpenAIServer, make_judge: MakeJudge, item: dict[str, Any], expected: list[Verdict]
) -> None:
    stub.responder = lambda step, _body: {"results": [item]} if step == "verify" else None
    judge = make_judge(parse_retries=0)
    reply = await judge.verify(["Paris is in France."], ["Paris is in France.", "Lyon is in France."])
    assert reply.value == [expected]


async def test_a_verify_reply_in_other_words_leaves_hallucination_unmeasured(stub: StubOpenAIServer) -> None:
    # A JSON-mode model that answers in its own words: before, every chunk read as "neither" and the
    # record was reported 100 % hallucinated.
    stub.mode = "json_object"
    stub.responder = lambda step, _body: (
        {"results": [{"claim": 1, "verdict": "supported"}]} if step == "verify" else None
    )
    judge = OpenAIJudge(base_url=stub.base_url, retry_base_delay=0.0, verify="batched")
    try:
        record = RagRecord.of("Capital of France?", ["Paris is the capital of France."], "Paris is the capital.")
        result = await build_suite("faithfulness,hallucination").score(record, judge)
    finally:
        await judge.aclose()
    for score in result.scores.values():
        assert score.value is None
        assert score.error_type == "unparseable_reply"


Step = Callable[[OpenAIJudge], Awaitable[Any]]
STEPS_WITHOUT_THEIR_VALUE: list[tuple[str, Step]] = [
    ('{"results": [{"claim": 1}]}', lambda j: j.classify_claims(["The sky is green."], "The sky is blue.")),
    ('{"results": [{"statement": 1}]}', lambda j: j.rate_statements("Which states?", ["Florida is a state."])),
    ('{"ratings": [{"chunk": 1}]}', lambda j: j.rate_chunks("Which states?", ["Unrelated chunk."])),
    ('{"ratings": {"chunk_1": 1.5}}', lambda j: j.rate_chunks("Which states?", ["Unrelated chunk."])),
    ('{"claims": [{"id": 1}]}', lambda j: j.extract_claims("Paris is in France.")),
    ('{"questions": [{"question": "Where is Paris?"}]}', lambda j: j.generate_questions("Paris is in France.", 1)),
    ('{"answer": true}', lambda j: j.detect_noncommittal("I am not sure.")),
    ('{"explanation": "fine"}', lambda j: j.rate_answer("q?", "a")),
]


@pytest.mark.parametrize(("content", "step"), STEPS_WITHOUT_THEIR_VALUE)
async def test_an_item_missing_its_value_is_never_filled_in(
    stub: StubOpenAIServer, make_judge: MakeJudge, content: str, step: Step
) -> None:
    stub.script(StubReply(content=content))
    judge = make_judge(parse_retries=0)
    with pytest.raises(JudgeError) as caught:
        await step(judge)
    assert caught.value.error_type == "unparseable_reply"


async def test_a_citation_in_the_prose_before_the_reply_is_not_the_reply(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    stub.script(StubReply(content='Per the text [1], the claims are:\n{"claims": ["Paris is the capital of France"]}'))
    judge = make_judge(parse_retries=0)
    reply = await judge.extract_claims("Paris is the capital of France.")
    assert reply.value == ["Paris is the capital of France"]


async def test_the_candidate_with_the_step_shape_wins(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    stub.script(
        StubReply(content='Context {"note": "chunk 1 is short"} so: {"ratings": [{"chunk": 1, "relevance": 0.5}]}')
    )
    judge = make_judge(parse_retries=0)
    assert (await judge.rate_chunks("q?", ["a chunk"])).value == [0.5]
