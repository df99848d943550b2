"""The claim-based family: metrics.md's worked examples through the real metric code, and edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from ragtrace import RagRecord
from ragtrace.judges import JudgeError, Verdict
from ragtrace.metrics import (
    AnswerRelevancy,
    ContextContradiction,
    ContextRecall,
    Faithfulness,
    Hallucination,
    IrrelevantNoiseSensitivity,
    NoiseSensitivity,
    RelevantNoiseSensitivity,
)
from ragtrace.metrics._base import DETAIL_CLAIMS
from ragtrace.metrics.claims import (
    ClaimVerdict,
    contradicted_chunks,
    faithfulness_label,
    noisy_claims,
    supported_by_any,
)
from ragtrace.testing import DEFAULT_CHAT_COST, FakeJudge

S, C, N = Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.NEITHER

SUPER_BOWL = RagRecord.of(
    query="When and where was the first Super Bowl?",
    chunks=[
        "The First AFL-NFL World Championship Game, later known as Super Bowl I, was played on January 15, 1967, "
        "at the Los Angeles Memorial Coliseum."
    ],
    answer="The first Super Bowl was held on January 15, 1967, in Florida.",
)
SUPER_BOWL_JUDGE: dict[str, Any] = dict(
    extract_claims={SUPER_BOWL.answer: ["The first Super Bowl was held on January 15, 1967", "It was held in Florida"]},
    verify={"The first Super Bowl was held on January 15, 1967": [S], "It was held in Florida": [C]},
)


async def test_super_bowl_faithfulness_and_hallucination_are_half() -> None:
    judge = FakeJudge(**SUPER_BOWL_JUDGE)
    faith = await Faithfulness().score(SUPER_BOWL, judge)
    hallu = await Hallucination().score(SUPER_BOWL, judge)
    assert faith.value == pytest.approx(0.5, abs=1e-4)
    assert faith.label == "partially_faithful"
    assert hallu.value == pytest.approx(0.5, abs=1e-4)
    assert hallu.label == "hallucinated"
    assert hallu.direction == "lower"
    assert hallu.details["unsupported"] == ["It was held in Florida"]
    assert "Florida" not in (hallu.explanation or "")  # no record text in explanations
    assert hallu.details["contradicted_claims"] == 1


async def test_einstein_three_of_four_claims_supported() -> None:
    claims = [
        "Einstein developed the theory of relativity",
        "He developed it in 1905",
        "He worked at the Swiss patent office",
        "The patent office was in Bern",
    ]
    chunks = ["Einstein published special relativity in 1905.", "He was a clerk at the Swiss patent office."]
    record = RagRecord.of("Tell me about Einstein", chunks, "Einstein developed relativity in 1905 ... Bern.")
    judge = FakeJudge(
        extract_claims=lambda text, question=None: claims,
        verify={claims[0]: [S, N], claims[1]: [S, N], claims[2]: [N, S], claims[3]: [N, N]},
    )
    score = await Faithfulness().score(record, judge)
    assert score.value == pytest.approx(0.75, abs=1e-4)
    assert {k: v for k, v in score.details.items() if k != DETAIL_CLAIMS} == {
        "claims": 4,
        "supported_claims": 3,
        "unsupported": [claims[3]],
    }
    # Which chunk decided each claim (no support probabilities from this judge).
    assert score.details[DETAIL_CLAIMS] == (
        ClaimVerdict(claims[0], "supported", 0, None),
        ClaimVerdict(claims[1], "supported", 0, None),
        ClaimVerdict(claims[2], "supported", 1, None),
        ClaimVerdict(claims[3], "unsupported", None, None),
    )
    # Alone, a metric pays for its own steps: one extraction and one verification.
    assert [c.step for c in judge.calls] == ["extract_claims", "verify"]
    assert score.cost == DEFAULT_CHAT_COST + DEFAULT_CHAT_COST


async def test_brazil_capital_florida_is_fully_hallucinated() -> None:
    record = RagRecord.of(
        "What is the capital of Brazil?",
        ["Brazil is a country in South America. Its capital is Brasilia."],
        "The capital of Brazil is Florida.",
    )
    judge = FakeJudge(extract_claims=["The capital of Brazil is Florida"], verify=[[N]])
    score = await Hallucination().score(record, judge)
    assert score.value == pytest.approx(1.0, abs=1e-4)
    faith = await Faithfulness().score(record, judge)
    assert faith.value == 0.0
    assert faith.label == "unfaithful"


async def test_what_is_ai_contradicts_no_chunk() -> None:
    record = RagRecord.of(
        "What is AI?",
        ["AI is the simulation of human intelligence by machines.", "Machine learning is a subset of AI."],
        "AI is the simulation of human intelligence by machines, and machine learning is part of it.",
    )
    judge = FakeJudge(
        extract_claims=["AI simulates human intelligence", "Machine learning is part of AI"],
        verify=[[S, N], [N, S]],
    )
    score = await ContextContradiction().score(record, judge)
    assert score.value == pytest.approx(0.0, abs=1e-4)
    assert score.label == "none"


async def test_context_contradiction_counts_chunks_not_claims() -> None:
    record = RagRecord.of("q", ["a", "b", "c"], "answer")
    judge = FakeJudge(extract_claims=["x", "y"], verify=[[C, C, N], [C, N, N]])
    score = await ContextContradiction().score(record, judge)
    assert score.value == pytest.approx(2 / 3)
    assert score.label == "contradiction"


async def test_brazil_answer_relevancy_two_of_three_statements() -> None:
    statements = [
        "The capital of Brazil is Brasilia",
        "Brasilia replaced Rio de Janeiro as capital in 1960",
        "Florida is a state in the USA",
    ]
    record = RagRecord.of("What is the capital city of Brazil?", [], "Brasilia, since 1960 ... Florida ...")
    judge = FakeJudge(
        extract_claims=statements,
        rate_statements={statements[0]: True, statements[1]: True, statements[2]: False},
    )
    score = await AnswerRelevancy().score(record, judge)
    assert score.value == pytest.approx(2 / 3, abs=1e-4)
    assert score.details["irrelevant"] == [statements[2]]
    assert judge.calls_to("rate_statements")[0].args == (record.query, tuple(statements))


MONA_LISA = RagRecord.of(
    "Who painted the Mona Lisa and when?",
    ["The Mona Lisa, painted by Leonardo da Vinci in the 15th century, hangs in the Louvre."],
    "Leonardo da Vinci painted the Mona Lisa in the 15th century.",
    reference="Leonardo da Vinci painted the Mona Lisa in the 16th century.",
)


async def test_mona_lisa_relevant_noise_sensitivity_is_half() -> None:
    judge = FakeJudge(
        extract_claims={
            MONA_LISA.answer: ["Da Vinci painted the Mona Lisa", "The Mona Lisa was painted in the 15th century"],
            MONA_LISA.reference: ["Da Vinci painted the Mona Lisa", "The Mona Lisa was painted in the 16th century"],
        },
        classify_claims={
            "Da Vinci painted the Mona Lisa": True,
            "The Mona Lisa was painted in the 15th century": False,
        },
        verify={
            "Da Vinci painted the Mona Lisa": [S],
            "The Mona Lisa was painted in the 15th century": [S],
            "The Mona Lisa was painted in the 16th century": [C],
        },
    )
    relevant = await RelevantNoiseSensitivity().score(MONA_LISA, judge)
    irrelevant = await IrrelevantNoiseSensitivity().score(MONA_LISA, judge)
    assert relevant.value == pytest.approx(0.5, abs=1e-4)
    assert relevant.details["relevant_chunks"] == 1
    assert irrelevant.value == 0.0


async def test_pride_and_prejudice_irrelevant_noise_sensitivity_is_half() -> None:
    record = RagRecord.of(
        "Who wrote Pride and Prejudice?",
        [
            "Pride and Prejudice is an 1813 novel by Jane Austen.",
            "Charlotte Bronte is famous for Jane Eyre.",
        ],
        "Charlotte Bronte wrote Pride and Prejudice. She is famous for Jane Eyre.",
        reference="Jane Austen wrote Pride and Prejudice.",
    )
    judge = FakeJudge(
        extract_claims={
            record.answer: ["Charlotte Bronte wrote Pride and Prejudice", "Charlotte Bronte is famous for Jane Eyre"],
            record.reference: ["Jane Austen wrote Pride and Prejudice"],
        },
        classify_claims=[False, False],
        verify={
            "Charlotte Bronte wrote Pride and Prejudice": [C, N],
            "Charlotte Bronte is famous for Jane Eyre": [N, S],
            "Jane Austen wrote Pride and Prejudice": [S, N],
        },
    )
    irrelevant = await IrrelevantNoiseSensitivity().score(record, judge)
    relevant = await RelevantNoiseSensitivity().score(record, judge)
    assert irrelevant.value == pytest.approx(0.5, abs=1e-4)
    assert relevant.value == 0.0


async def test_eiffel_tower_noise_sensitivity_is_half() -> None:
    claims = ["The Eiffel Tower is in Paris", "It is 330 m tall", "It was built in 1901", "It is made of wood"]
    record = RagRecord.of(
        "Tell me about the Eiffel Tower",
        [],
        "The Eiffel Tower in Paris is 330 m tall, built in 1901 of wood.",
        reference="The Eiffel Tower, in Paris, is 330 m tall and was completed in 1889 in wrought iron.",
    )
    judge = FakeJudge(extract_claims=claims, classify_claims=[True, True, False, False])
    score = await NoiseSensitivity().score(record, judge)
    assert score.value == pytest.approx(0.5, abs=1e-4)
    assert score.direction == "lower"


async def test_water_context_recall_is_half() -> None:
    record = RagRecord.of(
        "Tell me about water",
        ["Water is a molecule with the chemical formula H2O."],
        "Water is H2O.",
        reference="Water boils at 100 C at sea level. Its formula is H2O.",
    )
    judge = FakeJudge(
        extract_claims={record.reference: ["Water boils at 100 C at sea level", "The formula of water is H2O"]},
        verify={"Water boils at 100 C at sea level": [N], "The formula of water is H2O": [S]},
    )
    score = await ContextRecall().score(record, judge)
    assert score.value == pytest.approx(0.5, abs=1e-4)
    assert score.details["missing"] == ["Water boils at 100 C at sea level"]
    # Context recall reads the reference, not the answer.
    assert [c.args[0] for c in judge.calls_to("extract_claims")] == [record.reference]


# ------------------------------------------------------------------------------------------------
# Pure arithmetic
# ------------------------------------------------------------------------------------------------


def test_pure_functions() -> None:
    matrix = [[S, C], [N, N], [C, S]]
    assert supported_by_any(matrix) == [True, False, True]
    assert contradicted_chunks(matrix, 2) == [True, True]
    assert noisy_claims([False, False, True], matrix, [True, False]) == [True, False, False]
    assert faithfulness_label(3, 3) == "faithful"
    assert faithfulness_label(1, 2) == "partially_faithful"
    assert faithfulness_label(1, 3) == "unfaithful"


# ------------------------------------------------------------------------------------------------
# Absent scores and malformed replies
# ------------------------------------------------------------------------------------------------


async def test_no_chunks_is_unmeasured_without_a_call() -> None:
    judge = FakeJudge()
    score = await Faithfulness().score(RagRecord.of("q", [], "an answer"), judge)
    assert (score.value, score.status, score.reason) == (None, "unmeasured", "no_chunks")
    assert judge.calls == []


async def test_empty_answer_is_unmeasured_without_a_call() -> None:
    judge = FakeJudge()
    score = await Hallucination().score(RagRecord.of("q", ["c"], "   "), judge)
    assert (score.status, score.reason) == ("unmeasured", "no_answer")
    assert judge.calls == []


async def test_i_dont_know_has_no_claims() -> None:
    judge = FakeJudge(extract_claims=[])
    score = await Faithfulness().score(RagRecord.of("q", ["c"], "I don't know."), judge)
    assert (score.value, score.status, score.reason) == (None, "unmeasured", "no_claims")
    assert score.cost.chat_calls == 1
    assert judge.count("verify") == 0


async def test_reference_metrics_skip_without_reference() -> None:
    judge = FakeJudge()
    record = RagRecord.of("q", ["c"], "a")
    for metric in (NoiseSensitivity(), RelevantNoiseSensitivity(), IrrelevantNoiseSensitivity(), ContextRecall()):
        score = await metric.score(record, judge)
        assert (score.status, score.reason) == ("skipped", "needs_reference"), metric.name
    assert judge.calls == []


async def test_judge_without_the_step_skips_the_metric() -> None:
    judge = FakeJudge(name="small", capabilities={"extract_claims"})
    score = await Faithfulness().score(SUPER_BOWL, judge)
    assert (score.status, score.reason) == ("skipped", "judge_lacks_capability")
    assert "verify" in (score.explanation or "")
    assert judge.calls == []


async def test_judge_failure_is_an_error_score_with_its_cost() -> None:
    judge = FakeJudge(**SUPER_BOWL_JUDGE, fail={"verify": "timeout"})
    score = await Faithfulness().score(SUPER_BOWL, judge)
    assert (score.value, score.status, score.reason, score.error_type) == (None, "error", "judge_error", "timeout")
    assert score.cost.chat_calls == 2  # the extraction and the failed verification


async def test_a_non_judge_exception_is_recorded_not_raised() -> None:
    judge = FakeJudge(**SUPER_BOWL_JUDGE, fail={"verify": RuntimeError("socket gone")})
    score = await Faithfulness().score(SUPER_BOWL, judge)
    assert (score.status, score.error_type) == ("error", "RuntimeError")
    assert "socket gone" in (score.explanation or "")


@pytest.mark.parametrize(
    ("matrix", "why"),
    [
        ([[S]], "1 verdict rows for 2 claims"),  # a row missing
        ([[S], [S], [S]], "3 verdict rows for 2 claims"),  # an extra row
        ([[S, S], [S]], "2 verdicts in row 0 for 1 chunks"),  # an extra column
        ([[S], ["maybe"]], "row 1"),  # not a verdict
    ],
)
async def test_malformed_verdicts_are_explained_errors(matrix: list[list[object]], why: str) -> None:
    judge = FakeJudge(extract_claims=SUPER_BOWL_JUDGE["extract_claims"], verify=lambda claims, chunks: matrix)
    score = await Faithfulness().score(SUPER_BOWL, judge)
    assert (score.value, score.status, score.reason) == (None, "error", "unparseable_reply")
    assert why in (score.explanation or "")


async def test_verdict_strings_are_accepted() -> None:
    judge = FakeJudge(extract_claims=["a", "b"], verify=[["supported"], ["CONTRADICTED"]])
    score = await Faithfulness().score(RagRecord.of("q", ["c"], "ab"), judge)
    assert score.value == 0.5


async def test_duplicate_and_blank_claims_are_dropped() -> None:
    judge = FakeJudge(extract_claims=["a", " a ", "", "b"], verify=[[S], [N]])
    score = await Faithfulness().score(RagRecord.of("q", ["c"], "ab"), judge)
    assert score.value == 0.5
    assert judge.calls_to("verify")[0].args[0] == ("a", "b")


async def test_wrong_number_of_flags_is_an_error() -> None:
    judge = FakeJudge(extract_claims=["a", "b"], classify_claims=[True])
    score = await NoiseSensitivity().score(RagRecord.of("q", [], "ab", reference="r"), judge)
    assert score.reason == "unparseable_reply"
    assert "1 correctness flags for 2 items" in (score.explanation or "")


async def test_judge_error_class_is_kept() -> None:
    err = JudgeError("slow down", error_type="rate_limited")
    judge = FakeJudge(fail={"extract_claims": err})
    score = await AnswerRelevancy().score(RagRecord.of("q", [], "a"), judge)
    assert score.error_type == "rate_limited"


async def test_non_english_claims_are_verified_unchanged() -> None:
    record = RagRecord.of(
        "Quelle est la capitale du Brésil ?",
        ["La capitale du Brésil est Brasilia.", "東京は日本の首都です。"],
        "La capitale du Brésil est Rio. 東京は日本の首都です。",
    )
    claims = ["La capitale du Brésil est Rio", "東京は日本の首都です"]
    judge = FakeJudge(extract_claims={record.answer: claims}, verify={claims[0]: [C, N], claims[1]: [N, S]})
    score = await Faithfulness().score(record, judge)
    assert score.value == 0.5
    assert judge.calls_to("verify")[0].args == (tuple(claims), tuple(record.texts))
    assert judge.calls_to("extract_claims")[0].kwargs == {"question": record.query}
