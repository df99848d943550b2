"""A question joined to its answer is one claim of one form in every judge, and the per-claim question
marks its answer: real HTTP to the stub server, which records what the judge asked."""

from __future__ import annotations

import pytest

from ragtrace.judges._question_claims import answer_claim, split_answer_claim
from ragtrace.judges.offline import OfflineJudge
from ragtrace.testing._stub_openai import StubOpenAIServer
from tests.ragtrace.judges.conftest import MakeJudge


@pytest.mark.parametrize(
    ("question", "answer", "claim"),
    [
        ("In what year was Ada born?", "1959", "In what year was Ada born? 1959"),
        ("In what year was Ada born ?  ", " 1959 ", "In what year was Ada born? 1959"),
        ("Name the year Ada was born", "1959", "Name the year Ada was born? 1959"),  # the mark is added
        ("Tell me the year Ada was born.", "1959", "Tell me the year Ada was born? 1959"),  # in place of "."
    ],
)
def test_a_question_and_its_answer_join_with_one_question_mark(question: str, answer: str, claim: str) -> None:
    assert answer_claim(question, answer) == claim
    assert split_answer_claim(claim) == (claim.rsplit("? ", 1)[0], answer.strip())


@pytest.mark.parametrize(
    "claim",
    ["Ada was born in 1959.", "? 1959", "Was Ada born in 1959? ", "Is it 1959?"],
)
def test_a_claim_without_both_parts_is_not_split(claim: str) -> None:
    assert split_answer_claim(claim) is None


@pytest.mark.parametrize(
    ("claim", "parts"),
    [
        # Answers hold no question (their question sentences are dropped), so the last mark splits...
        ("Who? I mean, who wrote it? Ada", ("Who? I mean, who wrote it", "Ada")),
        ('Who sang "Why? Because"? Ada', ('Who sang "Why? Because"', "Ada")),
        # ...unless it stands inside quotes or brackets, where it is part of a title.
        ('When? Her album "Who? Me" came out in 1990.', ("When", 'Her album "Who? Me" came out in 1990.')),
        ('Her album "Who? Me" came out in 1990.', None),
        ("Her album (Who? Me) came out in 1990.", None),
        ("Her album \u201cWho? Me\u201d came out in 1990.", None),
    ],
)  # fmt: skip
def test_the_separator_is_the_last_mark_outside_quotes(claim: str, parts: tuple[str, str] | None) -> None:
    assert split_answer_claim(claim) == parts


@pytest.mark.parametrize("question", ["In what year was Ada born?", "Name the year Ada was born"])
async def test_both_judges_make_the_same_claim_of_a_bare_answer(make_judge: MakeJudge, question: str) -> None:
    openai_claims = await make_judge(extract="sentences").extract_claims("1959", question=question)
    offline_claims = await OfflineJudge().extract_claims("1959", question=question)
    assert openai_claims.value == offline_claims.value == [answer_claim(question, "1959")]


async def test_the_per_claim_question_marks_the_answer(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge(verify="per_claim")
    claims = ["In what year was Ada born? 1959", "Ada was born in 1959.", 'Her album "Who? Me" came out in 1990.']
    await judge.verify(claims, ["Ada was born in 1959."])
    users = sorted(request.body["messages"][1]["content"] for request in stub.chat_requests)
    assert [user.split("Statement: ")[1].split("\n")[0] for user in users] == [
        "Ada was born in 1959.",  # any other claim as it is
        'Her album "Who? Me" came out in 1990.',
        "In what year was Ada born? Answer: 1959",
    ]


async def test_with_several_chunks_the_answer_is_marked_too(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge(verify="per_claim")
    await judge.support(["In what year was Ada born? 1959"], ["Ada was born in 1959.", "Ada wrote code."])
    (request,) = stub.chat_requests
    assert "Statement: In what year was Ada born? Answer: 1959\n" in request.body["messages"][1]["content"]
