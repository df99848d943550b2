"""Faithfulness and hallucination weighed by the judge's support probabilities (``JudgeReply.support``):
the expected share of supported claims, labels by verdicts, and the verdict count where the judge
gives no probabilities or ``scoring="verdicts"`` asks for it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ragtrace import ConfigurationError, RagRecord
from ragtrace.judges import Verdict
from ragtrace.judges._base import agreeing
from ragtrace.judges.offline import OfflineJudge
from ragtrace.metrics import Faithfulness, Hallucination, metric_by_name
from ragtrace.metrics.claims import SUPPORT_CUT, claim_support
from ragtrace.testing import FakeJudge

S, C, N = Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.NEITHER

RECORD = RagRecord.of("When was the first Super Bowl?", ["chunk one", "chunk two"], "Answer text.")
CLAIMS = ["held on January 15, 1967", "held in Florida", "played at the Coliseum"]
VERDICTS = {CLAIMS[0]: [S, N], CLAIMS[1]: [N, C], CLAIMS[2]: [N, S]}
SUPPORT = {CLAIMS[0]: [0.9, 0.2], CLAIMS[1]: [0.3, 0.1], CLAIMS[2]: [0.4, 0.7]}


def judge(**kwargs: Any) -> FakeJudge:
    return FakeJudge(extract_claims={RECORD.answer: CLAIMS}, verify=VERDICTS, **kwargs)


async def test_each_claim_counts_by_its_best_support_probability() -> None:
    scripted = judge(support=SUPPORT)
    faith = await Faithfulness().score(RECORD, scripted)
    hallu = await Hallucination().score(RECORD, scripted)
    expected = (0.9 + 0.3 + 0.7) / 3  # each claim's best chunk
    assert faith.value == pytest.approx(expected)
    assert hallu.value == pytest.approx(1.0 - expected)
    # Labels and counts still come from the verdicts: two of three claims supported.
    assert faith.label == "partially_faithful" and faith.details["supported_claims"] == 2
    assert hallu.label == "hallucinated" and hallu.details["unsupported"] == [CLAIMS[1]]
    assert "2 of 3 claims supported" in (faith.explanation or "")
    assert "0.63 by the judge's support probabilities" in (faith.explanation or "")


async def test_verdicts_count_without_probabilities_or_when_asked() -> None:
    without = await Faithfulness().score(RECORD, judge())
    asked = await Faithfulness(scoring="verdicts").score(RECORD, judge(support=SUPPORT))
    by_name = await metric_by_name("hallucination", scoring="verdicts").score(RECORD, judge(support=SUPPORT))
    assert without.value == asked.value == pytest.approx(2 / 3)
    assert by_name.value == pytest.approx(1 / 3)
    assert "probabilities" not in (without.explanation or "") + (asked.explanation or "")


async def test_a_fully_supported_answer_scores_its_probabilities_and_stays_grounded() -> None:
    scripted = FakeJudge(
        extract_claims={RECORD.answer: CLAIMS[:1]}, verify={CLAIMS[0]: [S, N]}, support={CLAIMS[0]: [0.8, 0.1]}
    )
    faith = await Faithfulness().score(RECORD, scripted)
    hallu = await Hallucination(threshold=0.0).score(RECORD, scripted)
    assert faith.value == pytest.approx(0.8) and faith.label == "faithful"
    # The label asks whether any claim went unsupported, not whether the judge was fully sure.
    assert hallu.value == pytest.approx(0.2) and hallu.label == "grounded"


@pytest.mark.parametrize(
    ("support", "why"),
    [
        ({c: [0.5] for c in CLAIMS}, "support in row 0"),  # one number per chunk, not one
        ({CLAIMS[0]: [1.5, 0.0], CLAIMS[1]: [0.1, 0.1], CLAIMS[2]: [0.1, 0.1]}, "support probabilities in [0, 1]"),
        ({CLAIMS[0]: [math.nan, 0.0], CLAIMS[1]: [0.1, 0.1], CLAIMS[2]: [0.1, 0.1]}, "in [0, 1]"),
    ],
)
async def test_support_of_the_wrong_shape_or_range_is_an_unparseable_reply(support: Any, why: str) -> None:
    score = await Faithfulness().score(RECORD, judge(support=support))
    assert score.status == "error" and score.reason == "unparseable_reply"
    assert why in (score.explanation or "")


def test_claim_support_arithmetic() -> None:
    assert claim_support([[S, N], [N, C]], None) == [1.0, 0.0]
    assert claim_support([[S, N], [N, C]], [[0.6, 0.9], [0.2, 0.3]]) == [0.9, 0.3]
    assert claim_support([[]], [[]]) == [0.0]  # no chunk supports anything


def test_agreeing_puts_a_probability_on_the_shared_scale_where_the_cut_is_half() -> None:
    assert agreeing(0.4, S, 0.4) == 0.5 and agreeing(1.0, S, 0.4) == 1.0
    assert agreeing(0.7, S, 0.4) == pytest.approx(0.75)  # [0.4, 1] onto [0.5, 1]
    assert agreeing(0.2, N, 0.4) == pytest.approx(0.25)  # [0, 0.4) onto [0, 0.5)
    assert agreeing(0.2, S, 0.4) == 0.5  # a rule said supported: at the cut
    assert 0.49 < agreeing(0.8, C, 0.4) < 0.5  # a rule vetoed: just below it
    assert agreeing(0.9, "supported", 0.5) == 0.9  # a judge cutting at 0.5 keeps its probability
    assert agreeing(0.5, N, 0.0) == 0.0 and agreeing(0.5, S, 1.0) == 1.0


def test_wrong_scoring_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="scoring='mean'"):
        Faithfulness(scoring="mean")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="support, verdicts"):
        Hallucination(scoring="")  # type: ignore[arg-type]


async def test_the_offline_judges_probabilities_agree_with_its_verdicts() -> None:
    offline = OfflineJudge()
    claims = [
        "The Eiffel Tower is in Paris.",
        "The Eiffel Tower was built in 1887.",
        "The Eiffel Tower was built in 1950.",
        "The Eiffel Tower is in Berlin.",
    ]
    chunks = ["The Eiffel Tower is a wrought-iron tower in Paris. It was built from 1887 to 1889.", "Cats purr."]
    reply = await offline.verify(claims, chunks)
    assert reply.support is not None
    for verdicts, probabilities in zip(reply.value, reply.support, strict=True):
        for verdict, p in zip(verdicts, probabilities, strict=True):
            assert 0.0 <= p <= 1.0
            # On the shared scale (JudgeReply.support) every judge's cut is SUPPORT_CUT, not its own threshold.
            assert (p >= SUPPORT_CUT) is (verdict is S)
    faith = await Faithfulness().score(RagRecord.of("Where and when?", chunks, " ".join(claims[:2])), offline)
    assert faith.value is not None and 0.0 < faith.value <= 1.0


async def test_support_that_disagrees_with_its_verdicts_is_an_unparseable_reply() -> None:
    # 0.7 where the verdict is "neither": the faithfulness would contradict its own label.
    scripted = judge(support={CLAIMS[0]: [0.9, 0.2], CLAIMS[1]: [0.7, 0.1], CLAIMS[2]: [0.4, 0.7]})
    score = await Faithfulness().score(RECORD, scripted)
    assert score.status == "error" and score.reason == "unparseable_reply"
    assert "disagrees with its verdict neither" in (score.explanation or "")


async def test_metrics_that_do_not_use_support_do_not_check_it() -> None:
    from ragtrace.metrics import ContextContradiction

    # A scalar support for every chunk disagrees with the "neither" cells, but contradiction counts verdicts.
    scripted = judge(support=0.9)
    assert (await ContextContradiction().score(RECORD, scripted)).value == pytest.approx(0.5)
    assert (await Faithfulness().score(RECORD, scripted)).reason == "unparseable_reply"
