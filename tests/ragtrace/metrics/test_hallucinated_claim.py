"""The record-level hallucination signal (``hallucinated_claim``): one wrong claim is enough to raise it, the
``hallucination`` label says ``hallucinated`` exactly when it is raised, it costs no judge call of its own,
and it goes on the wire under the name semconv gives it."""

from __future__ import annotations

import random

import pytest

from ragtrace import RagRecord, semconv
from ragtrace.judges import Verdict
from ragtrace.judges._base import agreeing
from ragtrace.metrics import (
    PRODUCTION_METRICS,
    HallucinatedClaim,
    Hallucination,
    build_suite,
    metric_by_name,
)
from ragtrace.metrics.claims import SUPPORT_CUT, least_support
from ragtrace.testing import FakeJudge
from ragtrace.wire import LABEL, VALUE, decode, encode

S, C, N = Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.NEITHER

RECORD = RagRecord.of("Tell me about the tower.", ["chunk one", "chunk two"], "A long answer.")


def scripted(probabilities: list[list[float]], cut: float = 0.6) -> FakeJudge:
    """A judge whose verdicts are its probabilities drawn at ``cut``, its support on the shared scale."""
    claims = [f"claim {i}" for i in range(len(probabilities))]
    verdicts = [[S if p >= cut else N for p in row] for row in probabilities]
    support = [
        [agreeing(p, v, cut) for p, v in zip(row, vs, strict=True)]
        for row, vs in zip(probabilities, verdicts, strict=True)
    ]
    return FakeJudge(
        extract_claims={RECORD.answer: claims},
        verify=dict(zip(claims, verdicts, strict=True)),
        support=dict(zip(claims, support, strict=True)),
    )


async def test_one_wrong_claim_among_five_raises_it_where_the_share_stays_low() -> None:
    judge = scripted([[0.95, 0.1]] * 5 + [[0.2, 0.1]])
    share = await Hallucination().score(RECORD, judge)
    signal = await HallucinatedClaim().score(RECORD, judge)
    assert share.value is not None and share.value < 0.5  # the mean over claims dilutes the wrong one
    assert signal.value is not None and signal.value > 0.5
    assert signal.label == share.label == "hallucinated"
    assert signal.direction == "lower"
    assert signal.details["claims"] == 6 and signal.details["unsupported_claims"] == 1
    assert signal.value == pytest.approx(1.0 - signal.details["least_support"])


async def test_every_claim_above_the_cut_is_grounded() -> None:
    judge = scripted([[0.61, 0.1], [0.9, 0.95]])
    signal = await HallucinatedClaim().score(RECORD, judge)
    share = await Hallucination().score(RECORD, judge)
    assert signal.value is not None and signal.value < 0.5
    assert signal.label == share.label == "grounded"


async def test_the_label_is_the_signal_on_any_reading() -> None:
    rng = random.Random(28)
    for _ in range(200):
        claims = rng.randint(1, 6)
        chunks = rng.randint(1, 3)
        cut = rng.choice([0.3, 0.5, 0.62])
        judge = scripted([[rng.random() for _ in range(chunks)] for _ in range(claims)], cut)
        record = RagRecord.of(RECORD.query, [f"chunk {k}" for k in range(chunks)], RECORD.answer)
        signal = await HallucinatedClaim().score(record, judge)
        share = await Hallucination().score(record, judge)
        assert signal.value is not None
        raised = signal.value > 1.0 - SUPPORT_CUT
        assert (signal.label == "hallucinated") is raised
        assert (share.label == "hallucinated") is raised


async def test_verdicts_only_give_one_or_zero() -> None:
    claims = ["held in 1967", "held in Florida"]
    judge = FakeJudge(extract_claims={RECORD.answer: claims}, verify={claims[0]: [S, N], claims[1]: [N, C]})
    assert (await HallucinatedClaim().score(RECORD, judge)).value == 1.0
    grounded = FakeJudge(extract_claims={RECORD.answer: claims[:1]}, verify={claims[0]: [N, S]})
    assert (await HallucinatedClaim(scoring="verdicts").score(RECORD, grounded)).value == 0.0


def test_least_support_is_the_worst_claims_best_chunk() -> None:
    assert least_support([[S, N], [N, N]], [[0.9, 0.2], [0.3, 0.4]]) == pytest.approx(0.4)
    assert least_support([[S, N], [N, S]], None) == 1.0


async def test_in_the_production_suite_it_costs_no_call_of_its_own() -> None:
    assert semconv.HALLUCINATED_CLAIM in PRODUCTION_METRICS
    assert metric_by_name(semconv.HALLUCINATED_CLAIM).name == semconv.HALLUCINATED_CLAIM
    without = [m for m in PRODUCTION_METRICS if m != semconv.HALLUCINATED_CLAIM]
    judge_with, judge_without = scripted([[0.9, 0.1], [0.2, 0.3]]), scripted([[0.9, 0.1], [0.2, 0.3]])
    with_it = await build_suite(list(PRODUCTION_METRICS)).score(RECORD, judge_with)
    without_it = await build_suite(without).score(RECORD, judge_without)
    assert with_it.calls == without_it.calls
    assert with_it.scores[semconv.HALLUCINATED_CLAIM].ok


async def test_it_goes_on_the_span_and_comes_back_from_the_wire() -> None:
    judge = scripted([[0.95, 0.1], [0.2, 0.1]])
    score = await HallucinatedClaim().score(RECORD, judge)
    encoded = encode([score], score.cost, judge.name)
    assert encoded.attributes[semconv.eval_score(semconv.HALLUCINATED_CLAIM)] == score.value
    assert encoded.attributes[semconv.eval_label(semconv.HALLUCINATED_CLAIM)] == "hallucinated"
    decoded = decode(encoded.attributes, encoded.events)[semconv.HALLUCINATED_CLAIM]
    assert decoded[VALUE] == score.value and decoded[LABEL] == "hallucinated"
