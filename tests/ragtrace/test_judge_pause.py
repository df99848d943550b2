"""A judge that fails record after record rests, so a dead or hostile endpoint stops costing the app.

The rules are driven with a hand-turned clock; the whole app path with a real HTTP endpoint that
answers 401 to everything, counting the requests it received."""

from __future__ import annotations

import logging

import pytest

import ragtrace
from ragtrace import semconv
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics._base import Score
from ragtrace.scoring.judge_pause import JudgePause, PauseSettings, failed
from ragtrace.testing import capture
from tests.ragtrace.judges import hostile_server as hs

ERROR = Score.absent("faithfulness", "error", "judge_error", error_type="authentication", explanation="HTTP 401")
MEASURED = Score("faithfulness", 0.9)
NOTHING_TO_MEASURE = Score.absent("context_recall", "skipped", "needs_reference")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_record_failed_only_when_a_score_erred_and_none_was_measured() -> None:
    assert failed([ERROR])
    assert failed([ERROR, NOTHING_TO_MEASURE])
    assert not failed([ERROR, MEASURED])
    assert not failed([NOTHING_TO_MEASURE])


def test_the_judge_rests_after_records_in_a_row_fail_and_a_trial_ends_the_rest() -> None:
    clock = Clock()
    pause = JudgePause("judge", PauseSettings(after=3, first_rest=1.0, max_rest=4.0), clock)
    for _ in range(2):
        assert pause.admit()
        pause.settle([ERROR])
    assert pause.admit()  # two failures: still asked
    pause.settle([ERROR])
    assert pause.resting() and not pause.admit()  # the third opened a rest of 1 s
    clock.now += 0.99
    assert not pause.admit()
    clock.now += 0.02
    assert not pause.resting()  # spans reach the worker again
    assert pause.admit()  # the trial
    assert pause.resting() and not pause.admit()  # one trial at a time
    pause.settle([ERROR])  # the trial failed: the rest doubles
    clock.now += 1.5
    assert not pause.admit()
    clock.now += 0.6
    assert pause.admit()
    pause.settle([ERROR])
    clock.now += 4.0  # doubled again, but capped at 4 s
    assert pause.admit()
    pause.settle([MEASURED])  # well again
    assert not pause.resting() and pause.admit() and pause.admit()


def test_a_success_between_failures_starts_the_count_again() -> None:
    pause = JudgePause("judge", PauseSettings(after=2), Clock())
    for scores in ([ERROR], [MEASURED], [ERROR], [ERROR, MEASURED], [ERROR]):
        assert pause.admit()
        pause.settle(scores)
    assert pause.admit()


def test_records_admitted_before_a_rest_that_fail_after_it_began_do_not_lengthen_it() -> None:
    clock = Clock()
    pause = JudgePause("judge", PauseSettings(after=1, first_rest=1.0), clock)
    assert pause.admit() and pause.admit()  # two records with the judge at once
    pause.settle([ERROR])  # the first opens the rest
    pause.settle([ERROR])  # the second was asked before it
    clock.now += 1.0
    assert pause.admit()


def test_a_trial_that_never_settles_expires_after_one_rest() -> None:
    clock = Clock()
    pause = JudgePause("judge", PauseSettings(after=1, first_rest=1.0), clock)
    pause.admit()
    pause.settle([ERROR])
    clock.now += 1.0
    assert pause.admit()  # the trial, whose span then overflowed: it never settles
    clock.now += 0.99
    assert not pause.admit()
    clock.now += 0.02
    assert pause.admit()


def test_the_cause_is_the_error_type_of_the_failure_that_started_the_rest() -> None:
    pause = JudgePause("judge", PauseSettings(after=1), Clock())
    assert pause.cause == "judge_error"
    pause.admit()
    pause.settle([NOTHING_TO_MEASURE, ERROR])
    assert pause.cause == "authentication"


@ragtrace.rag
def answer(query: str) -> str:
    ragtrace.record(chunks=["Brasilia has been the capital of Brazil since 1960."])
    return "The capital of Brazil is Brasilia."


def test_an_endpoint_that_refuses_every_call_is_rested_and_every_span_still_leaves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, then = 10, 30
    with hs.hostile(hs.echo_key) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test", max_retries=0, extract="llm")
        with caplog.at_level(logging.WARNING), capture(judge, metrics=["faithfulness"]) as captured:
            for i in range(first):
                answer(f"question {i}")
            captured.handle.force_flush()  # the judge refused records in a row: it rests
            asked_first = len(server.requests)
            for i in range(then):
                answer(f"question {first + i}")
            spans = [s for s in captured.spans() if (s.attributes or {}).get(semconv.EVAL_DECISION)]
        asked_then = len(server.requests) - asked_first
    # Resting, the judge is asked only for a trial each time a rest ends (1, 2, 4, ... s): without the
    # rest it would be asked once per record.
    assert asked_then < then / 2
    assert len(spans) == first + then  # every span left, once
    assert {(s.attributes or {})[semconv.EVAL_DECISION] for s in spans} == {"error"}
    # The spans not sent name the cause, as those the judge refused do, and left with no evaluations.
    assert {(s.attributes or {}).get(semconv.EVAL_ERROR_TYPE) for s in spans} == {"authentication"}
    assert sum(1 for s in spans if not s.events) >= then - asked_then
    assert "rests 1 s after 5 records in a row failed (authentication)" in caplog.text


def test_records_queued_before_the_rest_began_leave_without_a_call() -> None:
    calls = 40
    with hs.hostile(hs.echo_key) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test", max_retries=0, extract="llm")
        with capture(judge, metrics=["faithfulness"]) as captured:
            for i in range(calls):  # all queued before the first reply comes back
                answer(f"question {i}")
            spans = [s for s in captured.spans() if (s.attributes or {}).get(semconv.EVAL_DECISION)]
        asked = len(server.requests)
    # The five failures that open the rest, and the records the worker had already sent then (at most its
    # concurrency); the others leave the queue without a call.
    assert asked < calls / 2
    assert len(spans) == calls
    assert {(s.attributes or {}).get(semconv.EVAL_ERROR_TYPE) for s in spans} == {"authentication"}
