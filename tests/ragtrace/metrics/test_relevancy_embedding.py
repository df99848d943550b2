"""answer_relevancy_embedding: worked examples, the noncommittal gate and the offline fallback."""

from __future__ import annotations

import math

import pytest

from ragtrace import ConfigurationError, RagRecord
from ragtrace.judges import Question
from ragtrace.metrics import AnswerRelevancyEmbedding
from ragtrace.metrics.relevancy_embedding import cosine, gated
from ragtrace.testing import FakeJudge

RECORD = RagRecord.of("Where is the Nile?", ["The Nile flows through Egypt."], "The Nile is in Africa.")


def unit_at(cos: float) -> list[float]:
    """A 2-d vector whose cosine with [1, 0] is ``cos``."""
    return [cos, math.sqrt(1 - cos * cos)]


async def test_real_cosines_of_the_worked_example() -> None:
    vectors = {
        RECORD.query: [0.9, 0.4, 0.1],
        "q1": [0.85, 0.38, 0.09],
        "q2": [0.88, 0.39, 0.11],
        "q3": [0.87, 0.41, 0.10],
    }
    judge = FakeJudge(generate_questions=["q1", "q2", "q3"], embed=vectors)
    score = await AnswerRelevancyEmbedding().score(RECORD, judge)
    assert score.value == pytest.approx(0.999887, abs=1e-4)
    assert score.details["cosines"] == pytest.approx([0.999986, 0.999920, 0.999754], abs=1e-6)
    assert score.details["method"] == "generated_questions"
    assert (judge.chat_calls, judge.embedding_calls) == (1, 1)
    assert judge.calls_to("embed")[0].args == ((RECORD.query, "q1", "q2", "q3"),)
    assert judge.calls_to("generate_questions")[0].args == (RECORD.answer, 3)


def nile_judge() -> FakeJudge:
    return FakeJudge(
        generate_questions=[
            ("In which continent is the Nile?", False),
            ("Which river is in Africa?", True),
            ("q3", False),
        ],
        embed={
            RECORD.query: [1.0, 0.0],
            "In which continent is the Nile?": unit_at(0.92),
            "Which river is in Africa?": unit_at(0.90),
            "q3": unit_at(0.89),
        },
    )


async def test_nile_one_noncommittal_question_zeroes_the_score() -> None:
    judge = nile_judge()
    score = await AnswerRelevancyEmbedding().score(RECORD, judge)
    assert score.value == 0.0
    assert score.label == "noncommittal"
    assert score.ok
    assert judge.embedding_calls == 0  # gated before the embeddings call: nothing to pay for


async def test_gate_all_and_off_let_one_flag_through() -> None:
    for gate in ("all", "off"):
        score = await AnswerRelevancyEmbedding(noncommittal=gate).score(RECORD, nile_judge())
        assert score.value == pytest.approx((0.92 + 0.90 + 0.89) / 3, abs=1e-4)
        assert score.label is None


async def test_i_dont_know_scores_zero() -> None:
    record = RagRecord.of("What is the capital of Peru?", [], "I don't know.")
    judge = FakeJudge(generate_questions=[Question("What is unknown?", True)] * 3, embed=lambda t: [[1.0]] * len(t))
    score = await AnswerRelevancyEmbedding().score(record, judge)
    assert score.value == 0.0
    assert score.label == "noncommittal"


async def test_negative_cosine_is_not_clipped() -> None:
    judge = FakeJudge(generate_questions=["q"], embed={RECORD.query: [1.0, 0.0], "q": [-1.0, 0.2]})
    score = await AnswerRelevancyEmbedding(n=1).score(RECORD, judge)
    assert score.value is not None and score.value < -0.9


async def test_offline_fallback_embeds_query_and_answer() -> None:
    judge = FakeJudge(
        name="offline",
        capabilities={"embed", "detect_noncommittal"},
        embed={RECORD.query: [1.0, 0.0], RECORD.answer: unit_at(0.8)},
        detect_noncommittal=False,
    )
    score = await AnswerRelevancyEmbedding().score(RECORD, judge)
    assert score.value == pytest.approx(0.8)
    assert score.details["method"] == "answer_embedding"


async def test_offline_fallback_gates_noncommittal_answers() -> None:
    record = RagRecord.of("q", [], "I'm not sure.")
    judge = FakeJudge(
        capabilities={"embed", "detect_noncommittal"}, embed=lambda t: [[1.0, 0.0]] * 2, detect_noncommittal=True
    )
    score = await AnswerRelevancyEmbedding().score(record, judge)
    assert (score.value, score.label, score.details["method"]) == (0.0, "noncommittal", "answer_embedding")


async def test_judge_without_embeddings_is_skipped() -> None:
    judge = FakeJudge(capabilities={"generate_questions", "detect_noncommittal"})
    score = await AnswerRelevancyEmbedding().score(RECORD, judge)
    assert (score.status, score.reason) == ("skipped", "judge_lacks_capability")


@pytest.mark.parametrize(
    ("questions", "vectors", "why"),
    [
        ([], None, "no question"),
        (["q"], [[1.0, 0.0]], "1 embeddings for 2 texts"),
        (["q"], [[1.0, 0.0], [0.0, 0.0]], "zero"),
        (["q"], [[1.0, 0.0], [1.0]], "dimensions"),
    ],
)
async def test_bad_replies_are_explained(questions: list[str], vectors: object, why: str) -> None:
    judge = FakeJudge(generate_questions=questions, embed=lambda texts: vectors)
    score = await AnswerRelevancyEmbedding(n=1).score(RECORD, judge)
    assert (score.status, score.reason) == ("error", "unparseable_reply")
    assert why in (score.explanation or "")


async def test_extra_questions_are_cut_to_n() -> None:
    judge = FakeJudge(generate_questions=["a", "b", "c", "d"], embed=lambda texts: [[1.0, 0.0]] * len(texts))
    score = await AnswerRelevancyEmbedding(n=2).score(RECORD, judge)
    assert score.details["questions"] == ["a", "b"]


def test_pure_helpers_and_configuration() -> None:
    assert cosine([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert gated([False, True], "any") and not gated([False, True], "all") and not gated([True], "off")
    with pytest.raises(ConfigurationError, match="'any'"):
        AnswerRelevancyEmbedding(noncommittal="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="n=0"):
        AnswerRelevancyEmbedding(n=0)


def test_huge_embedding_components_still_give_a_finite_cosine() -> None:
    # Squares of 1e200 overflow to inf, and inf / inf is NaN: never a NaN on the wire.
    assert cosine([1e200, 1e200], [1e200, 0.0]) == pytest.approx(2**-0.5)


async def test_a_judge_that_returns_nan_gives_an_error_not_a_nan() -> None:
    judge = FakeJudge(
        generate_questions=lambda answer, n: [("What is the capital of Brazil?", False)] * n,
        embed=lambda texts: [[float("nan"), 1.0] for _ in texts],
    )
    score = await AnswerRelevancyEmbedding().score(
        RagRecord.of("What is the capital of Brazil?", answer="Brasilia."), judge
    )
    assert score.value is None and score.status == "error"
