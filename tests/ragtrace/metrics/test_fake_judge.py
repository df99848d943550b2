"""FakeJudge, the public scripted judge: scripts, failures, capabilities, call log and costs."""

from __future__ import annotations

import pytest

from ragtrace import Cost
from ragtrace.judges import GEvalRating, Judge, JudgeCapabilityError, JudgeError, Question, Rating, Verdict
from ragtrace.testing import DEFAULT_CHAT_COST, DEFAULT_EMBED_COST, FakeJudge


async def test_it_satisfies_the_judge_protocol_and_logs_calls() -> None:
    judge = FakeJudge(
        extract_claims=lambda text, question=None: [text.upper()],
        verify={"A": "supported", "B": [Verdict.NEITHER, Verdict.CONTRADICTED]},
        rate_answer=0.7,
        geval_score=4,
        generate_questions=["q", ("r", True), Question("s", False)],
    )
    assert isinstance(judge, Judge)
    assert (await judge.extract_claims("a", question="why")).value == ["A"]
    assert (await judge.verify(["A", "B"], ["c1", "c2"])).value == [
        ["supported", "supported"],
        [Verdict.NEITHER, Verdict.CONTRADICTED],
    ]
    assert (await judge.rate_answer("q", "a")).value == Rating(0.7)
    assert (await judge.geval_score("c", ["s"], {"input": "q"}, (1, 5))).value == GEvalRating(4.0, "", False)
    assert [q.noncommittal for q in (await judge.generate_questions("a", 3)).value] == [False, True, False]
    assert [c.step for c in judge.calls] == [
        "extract_claims",
        "verify",
        "rate_answer",
        "geval_score",
        "generate_questions",
    ]
    assert judge.calls[0].kwargs == {"question": "why"}
    assert judge.calls[1].args == (("A", "B"), ("c1", "c2"))
    assert judge.cost == Cost(chat_calls=5, prompt_tokens=500, completion_tokens=100)


async def test_mapping_replies_follow_the_request_order() -> None:
    judge = FakeJudge(rate_chunks={"b": 0.2, "a": 0.9}, embed={"x": [1.0], "y": [2.0]})
    assert (await judge.rate_chunks("q", ["a", "b", "a"])).value == [0.9, 0.2, 0.9]
    reply = await judge.embed(["y", "x"])
    assert reply.value == [[2.0], [1.0]]
    assert reply.cost == DEFAULT_EMBED_COST
    assert (judge.chat_calls, judge.embedding_calls) == (1, 1)


async def test_unscripted_steps_and_keys_fail_loudly() -> None:
    judge = FakeJudge(classify_claims={"known": True})
    with pytest.raises(JudgeError, match="no script") as missing_step:
        await judge.rate_chunks("q", ["c"])
    assert missing_step.value.error_type == "unscripted"
    with pytest.raises(JudgeError, match="'unknown'"):
        await judge.classify_claims(["known", "unknown"], "ref")
    assert judge.count() == 2  # both calls were made (and paid for)


async def test_scripted_failures_carry_error_type_and_cost() -> None:
    cost = Cost(chat_calls=1, prompt_tokens=7)
    judge = FakeJudge(fail={"verify": "rate_limited"}, costs={"verify": cost}, verify=[[Verdict.SUPPORTED]])
    with pytest.raises(JudgeError) as info:
        await judge.verify(["a"], ["c"])
    assert (info.value.error_type, info.value.cost) == ("rate_limited", cost)
    boom = ConnectionResetError("peer reset")
    judge.fail["verify"] = boom
    with pytest.raises(ConnectionResetError):
        await judge.verify(["a"], ["c"])


async def test_capabilities_limit_the_steps() -> None:
    judge = FakeJudge(capabilities={"embed"}, embed=[[1.0]], geval_steps=["s"])
    assert "geval" not in judge.capabilities
    with pytest.raises(JudgeCapabilityError):
        await judge.geval_steps("criteria")
    assert judge.calls == []


async def test_async_scripts_and_close() -> None:
    async def claims(text: str, question: str | None = None) -> list[str]:
        return [text]

    judge = FakeJudge(extract_claims=claims)
    assert (await judge.extract_claims("x")).value == ["x"]
    assert (await judge.extract_claims("x")).cost == DEFAULT_CHAT_COST
    await judge.aclose()
    assert judge.closed


def test_unknown_step_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown steps"):
        FakeJudge(fail={"verfy": "timeout"})
