"""Alert rules in TOML: the packaged defaults, a full file, and errors that name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from ragtrace_collector._drift import bad_events, metric_direction
from ragtrace_collector._rule_table import parse_duration
from ragtrace_collector._rule_types import (
    DEFAULT_KEEP_FIRING_FOR_NS,
    DEFAULT_NO_DATA_AFTER_NS,
    DEFAULT_SPIKE,
    DriftParams,
    SpikeParams,
    ThresholdParams,
)
from ragtrace_collector._rules import load_rules, parse_rules

from ragtrace import semconv
from ragtrace.environment_variables import ConfigurationError

NS = 1_000_000_000


def test_default_rules_are_the_documented_ones() -> None:
    rules = load_rules()
    by_name = {rule.name: rule for rule in rules.rules}
    assert set(by_name) == {"faithfulness-low", "hallucination-spike", "faithfulness-drift"}
    low = by_name["faithfulness-low"]
    assert low.kind == "threshold" and low.metric == "faithfulness"
    assert low.params == ThresholdParams(threshold=0.5, warning=0.55, window_ns=15 * 60 * NS, min_records=20)
    spike = by_name["hallucination-spike"]
    assert spike.metric == semconv.HALLUCINATED_CLAIM  # the record-level signal, not the claim share
    # The benchmark measures DEFAULT_SPIKE: the packaged file must not drift away from it.
    assert spike.params == DEFAULT_SPIKE
    assert isinstance(by_name["faithfulness-drift"].params, DriftParams)
    assert all(rule.group_by == "service" for rule in rules.rules)
    # The file says what the code defaults to: a rules file without them behaves as the packaged one.
    assert all(rule.keep_firing_for_ns == DEFAULT_KEEP_FIRING_FOR_NS == 15 * 60 * NS for rule in rules.rules)
    assert all(rule.no_data_after_ns == DEFAULT_NO_DATA_AFTER_NS == 15 * 60 * NS for rule in rules.rules)
    assert rules.interval_ns == 60 * NS
    assert [sink.type for sink in rules.sinks] == ["log"]


def test_the_default_spike_counts_a_record_with_one_claim_below_the_cut() -> None:
    spike = {rule.name: rule for rule in load_rules().rules}["hallucination-spike"]
    assert isinstance(spike.params, SpikeParams)
    direction = metric_direction(spike.metric)
    # hallucinated_claim is 1 - the least-supported claim's support: 0.8 when one claim sits at 0.2
    # (however many right claims beside it), 0.3 when every claim is at 0.7 or more.
    assert bad_events([0.8, 0.3, 0.5], direction=direction, cutoff=spike.params.cutoff) == [True, False, False]


def test_a_full_rules_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_HOOK", "https://hooks.example.com/T000/B000")
    path = tmp_path / "rules.toml"
    path.write_text(
        """
interval = "30s"
renotify = "2h"

[[sinks]]
type = "webhook"
name = "slack"
url_env = "MY_HOOK"
timeout = 2
retries = 1
headers = { Authorization = "Bearer x" }

[[sinks]]
type = "stdout"

[[rules]]
name = "shop-hallucinations"
kind = "spike"
metric = "hallucination"
service = "shop"
group_by = "route"
window = "1h"
baseline = "1d"
baseline_rate = 0.05
h = 6
warning_h = 3
renotify = "30m"
sinks = ["slack"]

[[rules]]
name = "relevancy-drift"
kind = "drift"
metric = "answer_relevancy"
method = "ks"
warning = 0.05
alert = 0.001
group_by = "all"
""",
        encoding="utf-8",
    )
    rules = load_rules(path)
    assert rules.interval_ns == 30 * NS
    slack, stdout = rules.sinks
    assert (slack.name, slack.type, slack.url) == ("slack", "webhook", "https://hooks.example.com/T000/B000")
    assert slack.timeout == 2.0 and slack.retries == 1 and slack.headers == (("Authorization", "Bearer x"),)
    assert (stdout.name, stdout.type) == ("stdout", "stdout")
    spike, drift = rules.rules
    assert spike.service == "shop" and spike.group_by == "route" and spike.sinks == ("slack",)
    assert spike.renotify_ns == 30 * 60 * NS
    assert isinstance(spike.params, SpikeParams)
    assert spike.params.window_ns == 3600 * NS and spike.params.baseline_ns == 86400 * NS
    assert spike.params.baseline_rate == 0.05 and spike.params.h == 6.0
    assert drift.renotify_ns == 2 * 3600 * NS  # the file-wide default
    assert drift.sinks is None
    assert isinstance(drift.params, DriftParams) and drift.params.method == "ks"


def test_hold_timings_are_file_defaults_a_rule_may_override_and_zero_turns_them_off() -> None:
    rules = parse_rules(
        """
keep_firing_for = "30m"
no_data_after = 0

[[rules]]
name = "a"
kind = "threshold"
metric = "faithfulness"
threshold = 0.7

[[rules]]
name = "b"
kind = "spike"
metric = "hallucination"
keep_firing_for = "0s"
no_data_after = "5m"
"""
    )
    a, b = rules.rules
    assert (a.keep_firing_for_ns, a.no_data_after_ns) == (30 * 60 * NS, 0)
    assert (b.keep_firing_for_ns, b.no_data_after_ns) == (0, 5 * 60 * NS)
    with pytest.raises(ConfigurationError, match=r"`keep_firing_for`: -1 must be a positive duration"):
        parse_rules('keep_firing_for = -1\n[[rules]]\nname = "a"\nkind = "spike"\nmetric = "hallucination"\n')
    with pytest.raises(ConfigurationError, match=r"`interval`: 0 must be a positive duration"):
        parse_rules('interval = 0\n[[rules]]\nname = "a"\nkind = "spike"\nmetric = "hallucination"\n')


@pytest.mark.parametrize(
    ("value", "expected"),
    [("15m", 900 * NS), ("1h", 3600 * NS), ("30s", 30 * NS), ("7d", 7 * 86400 * NS), ("250ms", NS // 4), (90, 90 * NS)],
)
def test_durations(value: object, expected: int) -> None:
    assert parse_duration(value, where="x") == expected


@pytest.mark.parametrize("value", ["15", "fortnight", "-1m", 0, True, "0s"])
def test_bad_durations_say_how_to_write_one(value: object) -> None:
    with pytest.raises(ConfigurationError, match=r"x: .*(15m|duration)"):
        parse_duration(value, where="x")


RULE = '[[rules]]\nname = "r"\nkind = "threshold"\nmetric = "faithfulness"\nthreshold = 0.7\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (RULE + "treshold = 0.5\n", r"rules\[0\] \(r\): unknown key\(s\) treshold; allowed here: .*threshold"),
        (RULE.replace("threshold = 0.7\n", ""), r"missing `threshold`; give the level"),
        (RULE.replace('kind = "threshold"', 'kind = "average"'), r"`kind` = 'average'; use one of threshold, spike"),
        (RULE + 'window = "soon"\n', r"`window`: 'soon' is not a duration"),
        (RULE + RULE, r"rule names must be unique; rename r"),
        (RULE + 'sinks = ["pager"]\n', r"`sinks` names pager, not in \[\[sinks\]\] \(known: log\)"),
        (RULE + 'group_by = "host"\n', r"`group_by` = 'host'; use one of all, service, route, service_route"),
        ('[[sinks]]\ntype = "webhook"\n' + RULE, r"sinks\[0\]: a webhook needs `url`"),
        ('[[sinks]]\ntype = "webhook"\nurl = "ftp://x"\n' + RULE, r"must start with http:// or https://"),
        ('[[sinks]]\ntype = "email"\n' + RULE, r"`type` = 'email'; use one of webhook, log, stdout"),
        ('[[sinks]]\ntype = "log"\n[[sinks]]\ntype = "log"\n' + RULE, r"two sinks share a name"),
        ("interval = 5\n", r"missing `rules`; add at least one \[\[rules\]\]"),
        (RULE + "h = 2\n", r"unknown key\(s\) h"),
        (RULE.replace('"threshold"', '"spike"').replace("threshold = 0.7\n", "h = 4\nwarning_h = 5\n"), r"warning_h"),
        (RULE.replace("threshold = 0.7", "threshold = 'high'"), r"`threshold` must be a number"),
        ("[[rules]\n", r"not valid TOML"),
    ],
)
def test_mistakes_raise_configuration_errors_that_name_the_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        parse_rules(text, source="rules.toml")


def test_url_env_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGTRACE_TEST_UNSET_HOOK", raising=False)
    text = '[[sinks]]\ntype = "webhook"\nurl_env = "RAGTRACE_TEST_UNSET_HOOK"\n' + RULE
    with pytest.raises(ConfigurationError, match="RAGTRACE_TEST_UNSET_HOOK, which is not set; export it"):
        parse_rules(text)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"nope\.toml does not exist; check the path given with --rules"):
        load_rules(tmp_path / "nope.toml")
