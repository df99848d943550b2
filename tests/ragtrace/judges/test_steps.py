"""The table of judge steps (ragtrace/judges/_capabilities.py) against everything that must follow it."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import pytest

from ragtrace.judges._base import ALL_CAPABILITIES, Judge, JudgeReply
from ragtrace.judges._capabilities import METHODS, STEPS, serves_every_step
from ragtrace.judges.offline import OfflineJudge
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.prompts import StepPrompt
from ragtrace.judges.tiered import TieredJudge
from ragtrace.metrics._memo import MemoJudge
from ragtrace.testing import FakeJudge
from ragtrace.testing._stub_answers import ANSWERS


def test_the_judge_protocol_has_one_method_per_step_method() -> None:
    protocol = {name for name, member in vars(Judge).items() if inspect.iscoroutinefunction(member)}
    assert protocol - {"aclose"} == set(METHODS)
    assert {step.capability for step in STEPS} == ALL_CAPABILITIES


@pytest.mark.parametrize("judge", [OpenAIJudge, OfflineJudge, TieredJudge, MemoJudge, FakeJudge])
def test_every_judge_ragtrace_ships_serves_every_step(judge: type) -> None:
    assert serves_every_step(judge) is judge


def test_a_judge_missing_a_step_fails_when_its_class_is_defined() -> None:
    with pytest.raises(TypeError, match=r"Partial does not serve the judge steps \['verify'"):

        @serves_every_step
        class Partial:
            async def extract_claims(self, text: str) -> JudgeReply[list[str]]:
                return JudgeReply([text])

            def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> None:  # not a coroutine
                return None


def test_every_prompt_step_has_a_prompt_and_a_stub_answer_and_nothing_else_does() -> None:
    table = {prompt for step in STEPS for prompt in step.prompts}
    prompts = {value.step for value in vars(_prompts).values() if isinstance(value, StepPrompt)}
    assert prompts == table
    assert set(ANSWERS) == table


def test_fake_judge_scripts_exactly_the_step_methods() -> None:
    with pytest.raises(ValueError, match="unknown steps"):
        FakeJudge(fail={"not_a_step": "timeout"})
    assert FakeJudge(fail={method: "timeout" for method in METHODS}).fail.keys() == set(METHODS)
