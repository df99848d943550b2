"""Sampler: deterministic by trace id, dense per-metric rates, rules, throttle, daily budget, configuration."""

from __future__ import annotations

import logging
import random
import subprocess
import sys
from collections.abc import Callable

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan

from ragtrace import semconv
from ragtrace._record import RagRecord
from ragtrace._sampling import Price, Rule, Sampler, draw
from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._base import Cost

METRICS = ("faithfulness", "context_relevance", "answer_relevancy_embedding")


EMPTY = Resource.get_empty()


def span(name: str = "rag", **attributes: object) -> ReadableSpan:
    # An explicit resource: ReadableSpan's default runs the resource detectors on every call.
    return ReadableSpan(name=name, attributes={semconv.RAGTRACE_ROLE: semconv.ROLE_RAG, **attributes}, resource=EMPTY)


def ids(n: int, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(128) for _ in range(n)]


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_draw_is_the_same_in_another_process() -> None:
    sample = ids(20)
    code = "import sys; from ragtrace import Sampler; print([Sampler.draw(int(a)) for a in sys.argv[1:]])"
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, sample)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == str([draw(t) for t in sample])
    assert all(0.0 <= draw(t) < 1.0 for t in sample)


def test_a_trace_is_sampled_exactly_when_its_public_draw_is_below_the_rate() -> None:
    sampler = Sampler(0.3, metric_rates={}, always=[], never=[])
    for t in ids(2_000):
        assert sampler.decide(t, span()).selected == (Sampler.draw(t) < 0.3)


def test_rate_selects_that_fraction_of_traces() -> None:
    sampler = Sampler(0.2, metric_rates={}, always=[], never=[])
    picked = sum(sampler.decide(t, span()).selected for t in ids(20_000))
    assert 0.18 < picked / 20_000 < 0.22


@pytest.mark.parametrize(("rate", "expected"), [(0.0, 0), (1.0, 500)])
def test_rate_zero_and_one(rate: float, expected: int) -> None:
    sampler = Sampler(rate, metric_rates={}, always=[], never=[])
    assert sum(sampler.decide(t, span()).selected for t in ids(500)) == expected


def test_same_trace_same_decision() -> None:
    a, b = Sampler(0.3, metric_rates={}), Sampler(0.3, metric_rates={})
    for t in ids(1000):
        assert a.decide(t, span()) == b.decide(t, span())


def test_per_metric_rates_are_dense() -> None:
    sampler = Sampler(0.5, metric_rates={"faithfulness": 0.1, "context_relevance": 0.3})
    counts = dict.fromkeys(METRICS, 0)
    for t in ids(10_000):
        chosen = set(sampler.decide(t, span(), metrics=METRICS).metrics)
        for m in chosen:
            counts[m] += 1
        # Selected for a low-rate metric -> selected for every higher-rate metric too.
        if "faithfulness" in chosen:
            assert {"context_relevance", "answer_relevancy_embedding"} <= chosen
        if "context_relevance" in chosen:
            assert "answer_relevancy_embedding" in chosen
    assert 0.08 < counts["faithfulness"] / 10_000 < 0.12
    assert 0.27 < counts["context_relevance"] / 10_000 < 0.33
    assert 0.47 < counts["answer_relevancy_embedding"] / 10_000 < 0.53


def test_never_rule_wins_over_always_and_rate() -> None:
    sampler = Sampler(1.0, always=[Rule.empty_answer()], never=[Rule.name_matches("*health*")])
    result = sampler.decide(1, span("GET /healthz"), RagRecord.of("q", answer=""))
    assert (result.selected, result.decision, result.rule) == (False, semconv.DECISION_NOT_SAMPLED, "name:*health*")


def test_always_rules_score_whatever_the_rate() -> None:
    sampler = Sampler(0.0, always=[Rule.empty_answer(), Rule.attribute("user.feedback", "bad")])
    empty = sampler.decide(1, span(), RagRecord.of("q", answer="  "), METRICS)
    assert empty.selected and empty.metrics == METRICS and empty.rule == "empty_answer"
    assert sampler.decide(1, span(**{"user.feedback": "bad"}), RagRecord.of("q", answer="a")).selected
    assert not sampler.decide(1, span(**{"user.feedback": "good"}), RagRecord.of("q", answer="a")).selected
    # Without a record, the answer is read from output.value (absent: empty).
    assert sampler.decide(1, span(), None).selected


def test_plain_callable_is_a_rule_and_a_raising_rule_never_matches(caplog: pytest.LogCaptureFixture) -> None:
    def boom(_s: ReadableSpan) -> bool:
        raise KeyError("nope")

    sampler = Sampler(0.0, always=[lambda s: s.name == "vip", boom])
    assert sampler.decide(1, span("vip")).selected
    with caplog.at_level(logging.ERROR):
        assert not sampler.decide(1, span("other")).selected
        assert not sampler.decide(2, span("other")).selected
    assert sum("boom" in r.getMessage() for r in caplog.records) == 1  # logged once


def test_throttle_per_minute() -> None:
    clock = Clock(600.0)
    sampler = Sampler(1.0, throttle_per_minute=3, clock=clock)
    decisions = [sampler.decide(t, span()).decision for t in range(5)]
    assert decisions == [semconv.DECISION_EVALUATED] * 3 + [semconv.DECISION_THROTTLED] * 2
    clock.now += 60
    assert sampler.decide(9, span()).selected


def test_token_budget_per_utc_day() -> None:
    wall = Clock(86_400 * 100 + 10)
    sampler = Sampler(1.0, budget_tokens_per_day=1000, wall_clock=wall)
    assert sampler.decide(1, span()).selected
    sampler.charge("openai:gpt-4o-mini", Cost(chat_calls=2, prompt_tokens=900, completion_tokens=100))
    assert sampler.decide(2, span()).decision == semconv.DECISION_OVER_BUDGET
    assert sampler.spent_today()[0] == 1000
    wall.now += 86_400  # the next UTC day starts afresh
    assert sampler.decide(3, span()).selected
    assert sampler.spent_today()[0] == 0


def test_dollar_budget_uses_the_price_table() -> None:
    sampler = Sampler(1.0, budget_usd_per_day=1.0, prices={"my-model": (10.0, 30.0)})
    sampler.check_judge("openai:my-model")
    sampler.charge("openai:my-model", Cost(prompt_tokens=50_000, completion_tokens=10_000))  # 0.5 + 0.3
    assert sampler.decide(1, span()).selected
    sampler.charge("openai:my-model", Cost(prompt_tokens=20_000))  # + 0.2 -> 1.0
    assert sampler.decide(2, span()).decision == semconv.DECISION_OVER_BUDGET
    assert sampler.spent_today()[1] == pytest.approx(1.0)
    assert sampler.price_for("offline:minilm-int8") == Price(0.0, 0.0)
    assert sampler.price_for("gpt-4o-mini") == Price(0.15, 0.60)


def test_dollar_budget_with_an_unpriced_model_raises_with_the_fix() -> None:
    sampler = Sampler(1.0, budget_usd_per_day=5.0)
    with pytest.raises(ConfigurationError, match="RAGTRACE_JUDGE_PRICES"):
        sampler.check_judge("openai:mystery-model")


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "0.25")
    monkeypatch.setenv("RAGTRACE_METRIC_RATES", "faithfulness=0.05, context_relevance=1")
    monkeypatch.setenv("RAGTRACE_SAMPLE_ALWAYS", "empty_answer,attr:user.feedback=bad")
    monkeypatch.setenv("RAGTRACE_SAMPLE_NEVER", "name:*health*")
    monkeypatch.setenv("RAGTRACE_THROTTLE_PER_MINUTE", "60")
    monkeypatch.setenv("RAGTRACE_BUDGET_TOKENS_PER_DAY", "100000")
    monkeypatch.setenv("RAGTRACE_BUDGET_USD_PER_DAY", "2.5")
    monkeypatch.setenv("RAGTRACE_JUDGE_PRICES", "local-llm=0/0,big=5/15")
    sampler = Sampler()
    assert sampler.rate == 0.25
    assert sampler.metric_rates == {"faithfulness": 0.05, "context_relevance": 1.0}
    assert [r.name for r in sampler.always] == ["empty_answer", "attr:user.feedback=bad"]
    assert [r.name for r in sampler.never] == ["name:*health*"]
    assert (sampler.throttle_per_minute, sampler.budget_tokens_per_day, sampler.budget_usd_per_day) == (
        60,
        100_000,
        2.5,
    )
    assert sampler.price_for("openai:big") == Price(5.0, 15.0)
    # Constructor arguments win over variables.
    assert Sampler(0.9).rate == 0.9


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("RAGTRACE_SAMPLE_RATE", "2"),
        ("RAGTRACE_SAMPLE_RATE", "often"),
        ("RAGTRACE_METRIC_RATES", "faithfulness"),
        ("RAGTRACE_SAMPLE_ALWAYS", "when_it_rains"),
        ("RAGTRACE_JUDGE_PRICES", "gpt=cheap"),
    ],
)
def test_invalid_variables_warn_naming_the_variable_and_keep_the_defaults(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv(variable, value)
    sampler = Sampler()
    assert len(warned(variable)) == 1
    assert sampler.rate == 0.1
    assert sampler.metric_rates == {}
    assert (sampler.always, sampler.never) == ((), ())
    assert sampler.throttle_per_minute is None
    assert (sampler.budget_tokens_per_day, sampler.budget_usd_per_day) == (None, None)


@pytest.mark.parametrize(
    ("variable", "value", "attribute", "safe"),
    [
        ("RAGTRACE_THROTTLE_PER_MINUTE", "-1", "throttle_per_minute", 0),
        ("RAGTRACE_THROTTLE_PER_MINUTE", "lots", "throttle_per_minute", 0),
        ("RAGTRACE_BUDGET_TOKENS_PER_DAY", "1e6x", "budget_tokens_per_day", 0),
        ("RAGTRACE_BUDGET_USD_PER_DAY", "-3", "budget_usd_per_day", 0.0),
        ("RAGTRACE_BUDGET_USD_PER_DAY", "$5", "budget_usd_per_day", 0.0),
        ("RAGTRACE_METRIC_RATES", "faithfulness=lots", "metric_rates", {"faithfulness": 0.0}),
    ],
)
def test_an_invalid_spending_variable_falls_to_the_safe_side(
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    attribute: str,
    safe: object,
    warned: Callable[[str], list[str]],
) -> None:
    # A mistyped limit stops spending rather than lifting the limit.
    monkeypatch.setenv(variable, value)
    sampler = Sampler()
    assert getattr(sampler, attribute) == safe
    assert len(warned(variable)) == 1


def test_a_never_rule_that_does_not_parse_keeps_every_span_out_of_scoring(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_SAMPLE_NEVER", "attr:novalue")
    sampler = Sampler(1.0)
    (rule,) = sampler.never
    assert rule.predicate(None, None)  # type: ignore[arg-type]
    (message,) = warned("RAGTRACE_SAMPLE_NEVER")
    assert "no span is scored until it is fixed" in message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 1.5},
        {"rate": -0.1},
        {"rate": True},
        {"metric_rates": {"faithfulness": 2}},
        {"throttle_per_minute": -5},
        {"budget_tokens_per_day": 1.5},
        {"budget_usd_per_day": -1.0},
        {"always": ["not a rule"]},
    ],
)
def test_invalid_arguments_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match=r"set it|pass"):
        Sampler(**kwargs)  # type: ignore[arg-type]


def test_an_argument_wins_and_its_variable_is_not_even_read(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "10%")
    assert Sampler(0.5).rate == 0.5
    assert warned("RAGTRACE_SAMPLE_RATE") == []
    assert Sampler().rate == 0.1
    assert len(warned("RAGTRACE_SAMPLE_RATE")) == 1


@pytest.mark.parametrize(
    ("prices", "fix"),
    [
        ({"my-model": 0.2}, r"pass \(input_usd_per_million, output_usd_per_million\)"),
        ({"my-model": (0.2,)}, r"pass \(input_usd_per_million, output_usd_per_million\)"),
        ({"my-model": (-1.0, 0.5)}, "number >= 0"),
        ({"my-model": ("0.2", "0.8")}, "number >= 0"),
        ({"my-model": (float("nan"), 0.8)}, "number >= 0"),
        ({"my-model": (float("inf"), 0.8)}, "number >= 0"),
        ({"my-model": (True, 0.8)}, "number >= 0"),
        ([("my-model", (0.2, 0.8))], "not a mapping"),
    ],
)
def test_a_wrong_price_is_a_configuration_error_naming_the_fix(prices: object, fix: str) -> None:
    with pytest.raises(ConfigurationError, match=fix):
        Sampler(1.0, budget_usd_per_day=5.0, prices=prices)  # type: ignore[arg-type]


def test_a_wrong_price_object_is_refused_when_built() -> None:
    with pytest.raises(ConfigurationError, match="Price"):
        Price("0.2", 0.8)  # type: ignore[arg-type]
    assert Price(0, 1).cost(1_000_000, 1_000_000) == 1.0


@pytest.mark.parametrize("value", ["nan/nan", "inf/1", "0.2/-1"])
def test_a_price_variable_that_is_not_a_finite_price_is_left_out(
    monkeypatch: pytest.MonkeyPatch, value: str, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE_PRICES", f"my-model={value}")
    sampler = Sampler(1.0, budget_usd_per_day=1.0)
    assert len(warned("RAGTRACE_JUDGE_PRICES")) == 1
    with pytest.raises(ConfigurationError, match="no price"):
        sampler.check_judge("openai:my-model")


@pytest.mark.parametrize("budget", ["5", float("nan"), float("inf"), True])
def test_a_dollar_budget_that_is_not_a_finite_number_is_refused(budget: object) -> None:
    with pytest.raises(ConfigurationError, match="budget_usd_per_day"):
        Sampler(1.0, budget_usd_per_day=budget)  # type: ignore[arg-type]


def test_records_not_yet_charged_count_against_the_budget_at_the_mean_cost() -> None:
    sampler = Sampler(1.0, budget_tokens_per_day=1000)
    assert sampler.decide(1, span(), in_flight=0).selected
    # Nothing charged yet, so no cost is known: one record at a time.
    assert sampler.decide(2, span(), in_flight=1).decision == semconv.DECISION_OVER_BUDGET
    sampler.charge("fake:judge", Cost(prompt_tokens=80, completion_tokens=20))  # 100 a record
    # 100 spent + 8 in flight x 100 < 1000; with 9 in flight the estimate reaches the budget.
    assert sampler.decide(3, span(), in_flight=8).selected
    assert sampler.decide(4, span(), in_flight=9).decision == semconv.DECISION_OVER_BUDGET
    # Without a budget nothing in flight matters.
    assert Sampler(1.0).decide(5, span(), in_flight=10_000).selected


def test_refund_gives_back_the_throttle_slot_of_the_same_minute_only() -> None:
    clock = Clock(600.0)
    sampler = Sampler(1.0, throttle_per_minute=1, clock=clock)
    picked = sampler.decide(1, span())
    assert picked.selected
    assert sampler.decide(2, span()).decision == semconv.DECISION_THROTTLED
    sampler.refund(picked)
    again = sampler.decide(3, span())
    assert again.selected
    clock.now += 60
    assert sampler.decide(4, span()).selected
    sampler.refund(again)  # from the minute before: the new minute's count is not touched
    assert sampler.decide(5, span()).decision == semconv.DECISION_THROTTLED
    sampler.refund(Sampler(1.0).decide(6, span()))  # no throttle: nothing to give back
