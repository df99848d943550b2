"""answer_relevancy_rating, G-Eval and combined quality."""

from __future__ import annotations

import math

import pytest

from ragtrace import ConfigurationError, RagRecord
from ragtrace.judges import GEvalRating, Rating, Verdict
from ragtrace.metrics import AnswerRelevancyRating, GEval, Quality, Suite, clear_geval_cache
from ragtrace.metrics.quality import grade, harmonic, weighted
from ragtrace.testing import FakeJudge

RECORD = RagRecord.of("What is the capital of Peru?", ["Lima is the capital of Peru."], "Lima.", reference="Lima")


async def test_rating_is_taken_with_its_explanation() -> None:
    judge = FakeJudge(rate_answer=Rating(0.8, "answers directly"))
    score = await AnswerRelevancyRating().score(RECORD, judge)
    assert (score.value, score.explanation) == (0.8, "answers directly")


@pytest.mark.parametrize("bad", [1.7, -0.1, float("nan"), "0.5", None])
async def test_an_unusable_rating_is_an_error_never_a_default(bad: object) -> None:
    judge = FakeJudge(rate_answer=lambda q, a: Rating(bad) if isinstance(bad, float) else bad)
    score = await AnswerRelevancyRating().score(RECORD, judge)
    assert (score.value, score.status, score.reason) == (None, "error", "unparseable_reply")


# ------------------------------------------------------------------------------------------------
# G-Eval
# ------------------------------------------------------------------------------------------------


async def test_geval_generates_steps_once_per_criteria_and_normalises() -> None:
    clear_geval_cache()
    criteria = "Is every fact in the answer backed by the retrieval context?"
    judge = FakeJudge(
        geval_steps={criteria: ["Read the context", "Check each fact"]},
        geval_score=GEvalRating(score=4.2, explanation="mostly backed", weighted=True),
    )
    metric = GEval(name="rag_fact_checker", criteria=criteria, params=("input", "answer", "chunks"))
    first = await metric.score(RECORD, judge)
    second = await metric.score(RECORD, judge)
    assert first.value == pytest.approx((4.2 - 1) / 4)
    assert second.value == first.value
    assert first.label == "pass"
    assert first.explanation == "mostly backed"
    assert judge.count("geval_steps") == 1  # cached for the second record
    assert judge.count("geval_score") == 2
    _criteria, steps_arg, params_arg, range_arg = judge.calls_to("geval_score")[0].args
    assert steps_arg == ("Read the context", "Check each fact")
    assert dict(params_arg) == {
        "input": RECORD.query,
        "actual_output": "Lima.",
        "retrieval_context": "[1] Lima is the capital of Peru.",
    }
    assert range_arg == (1, 5)


async def test_geval_with_given_steps_makes_one_call_and_checks_the_range() -> None:
    judge = FakeJudge(geval_score=lambda c, s, p, r: 11)
    metric = GEval(name="tone", evaluation_steps=["Is it polite?"], score_range=(0, 10))
    score = await metric.score(RECORD, judge)
    assert (score.status, score.reason) == ("error", "unparseable_reply")
    assert "outside 0..10" in (score.explanation or "")
    assert judge.count("geval_steps") == 0


async def test_geval_with_reference_param_skips_without_reference() -> None:
    metric = GEval(name="correct", criteria="matches the expected output", params=("answer", "reference"))
    score = await metric.score(RagRecord.of("q", [], "a"), FakeJudge())
    assert score.reason == "needs_reference"


def test_geval_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="criteria"):
        GEval(name="x")
    with pytest.raises(ConfigurationError, match="lower-case"):
        GEval(name="Bad Name", criteria="c")
    with pytest.raises(ConfigurationError, match="choose from"):
        GEval(name="x", criteria="c", params=("input", "context"))
    with pytest.raises(ConfigurationError, match="low < high"):
        GEval(name="x", criteria="c", score_range=(5, 1))


# ------------------------------------------------------------------------------------------------
# Quality
# ------------------------------------------------------------------------------------------------


def test_quality_arithmetic_of_the_worked_examples() -> None:
    w = (0.3, 0.4, 0.3)
    assert weighted([0.95, 0.90, 0.85], w) == pytest.approx(0.9, abs=1e-4)
    assert grade(weighted([0.95, 0.90, 0.85], w)) == "A"
    assert harmonic([0.95, 0.90, 0.85]) == pytest.approx(0.8981, abs=1e-4)
    assert weighted([0.8, 0.2, 0.7], w) == pytest.approx(0.53, abs=1e-4)
    assert harmonic([0.8, 0.2, 0.7]) == pytest.approx(0.3907, abs=1e-4)
    assert harmonic([0.8, 0.0, 0.7]) == 0.0
    assert [grade(v) for v in (0.85, 0.75, 0.65, 0.2)] == ["B", "C", "D", "F"]


def quality_judge(relevance: float, supported: int, cos: float) -> FakeJudge:
    claims = [f"claim {i}" for i in range(10)]
    return FakeJudge(
        rate_chunks=[relevance],
        extract_claims=claims,
        verify=[[Verdict.SUPPORTED if i < supported else Verdict.NEITHER] for i in range(10)],
        generate_questions=["q1", "q2", "q3"],
        embed=lambda texts: [[1.0, 0.0]] + [[cos, math.sqrt(1 - cos * cos)]] * (len(texts) - 1),
    )


async def test_quality_through_the_real_metrics() -> None:
    score = await Quality().score(RECORD, quality_judge(0.95, 9, 0.85))
    assert score.value == pytest.approx(0.9, abs=1e-4)
    assert score.label == "A"
    assert score.details["harmonic"] == pytest.approx(0.8981, abs=1e-4)
    low = await Quality(mode="harmonic").score(RECORD, quality_judge(0.8, 2, 0.7))
    assert low.value == pytest.approx(0.3907, abs=1e-4)
    assert low.details["weighted"] == pytest.approx(0.53, abs=1e-4)
    assert low.label == "F"


async def test_quality_in_a_suite_costs_no_extra_call() -> None:
    from ragtrace.metrics import build_suite

    alone = quality_judge(0.95, 9, 0.85)
    await build_suite().score(RECORD, alone)
    with_quality = quality_judge(0.95, 9, 0.85)
    result = await Suite([*build_suite().metrics, Quality()]).score(RECORD, with_quality)
    assert with_quality.count() == alone.count() == 5
    assert result.value("quality") == pytest.approx(0.9, abs=1e-4)


async def test_quality_is_absent_when_a_component_is() -> None:
    judge = quality_judge(0.95, 9, 0.85)
    judge.fail["verify"] = "timeout"
    score = await Quality().score(RECORD, judge)
    assert (score.value, score.status, score.error_type) == (None, "error", "timeout")
    assert "faithfulness" in (score.explanation or "")


def test_quality_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="weights"):
        Quality(weights=(1.0, 1.0))
    with pytest.raises(ConfigurationError, match="mode"):
        Quality(mode="median")  # type: ignore[arg-type]


async def test_records_scored_concurrently_share_one_step_generation() -> None:
    import ragtrace

    clear_geval_cache()
    judge = FakeJudge(geval_steps=["Check the facts"], geval_score=3)
    metric = GEval(name="facts", criteria="facts are right, concurrently")
    records = [RagRecord.of(f"q{i}", [], "a") for i in range(6)]
    result = await ragtrace.aevaluate(records, metrics=[metric], judge=judge, concurrency=6, progress=False)
    assert judge.count("geval_steps") == 1
    assert judge.count("geval_score") == 6
    assert result.means["facts"] == 0.5
    # The evaluation's cost counts the shared generation once.
    assert result.cost == judge.cost


def test_hallucination_threshold_is_checked() -> None:
    from ragtrace.metrics import Hallucination

    with pytest.raises(ConfigurationError, match="threshold"):
        Hallucination(threshold=1.5)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1])
def test_quality_rejects_weights_that_are_not_finite_non_negative(bad: float) -> None:
    with pytest.raises(ConfigurationError, match="non-negative"):
        Quality(weights=(bad, 0.4, 0.3))
