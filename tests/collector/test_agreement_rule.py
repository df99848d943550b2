"""An alert rule on the judge's agreement with people (``kind = "agreement"``): parsed with its checks, its pure
detector, and the watcher raising it from reviews stored on either engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ragtrace_collector._agreement import agreement_state
from ragtrace_collector._alerts import Watcher
from ragtrace_collector._otlp import Batch
from ragtrace_collector._rule_types import AgreementParams
from ragtrace_collector._rules import parse_rules
from ragtrace_collector._store.reviews import ANSWER, Agreeing, save_review
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS

from ragtrace import ConfigurationError
from tests.collector._stores import dict_rows, whole_row

NS = 1_000_000_000
DAY = 86_400 * NS
NOW = 1_800_000_000 * NS
RULE = """
[[rules]]
name = "judge-agreement"
kind = "agreement"
threshold = 0.7
warning = 0.8
min_reviews = 10
window = "7d"
"""


def test_an_agreement_rule_parses_with_its_defaults_and_checks() -> None:
    (rule,) = parse_rules(RULE).rules
    assert (rule.kind, rule.metric) == ("agreement", "faithfulness")
    assert rule.params == AgreementParams(threshold=0.7, warning=0.8, min_reviews=10, window_ns=7 * DAY)
    (plain,) = parse_rules('[[rules]]\nname = "a"\nkind = "agreement"\nthreshold = 0.6\n').rules
    assert plain.params == AgreementParams(threshold=0.6)  # balanced accuracy, a week, 20 reviews
    with pytest.raises(ConfigurationError, match="leave `metric` out"):
        parse_rules('[[rules]]\nname = "a"\nkind = "agreement"\nthreshold = 0.6\nmetric = "hallucination"\n')
    with pytest.raises(ConfigurationError, match="make warning >= threshold"):
        parse_rules('[[rules]]\nname = "a"\nkind = "agreement"\nthreshold = 0.6\nwarning = 0.5\n')
    with pytest.raises(ConfigurationError, match="threshold"):
        parse_rules('[[rules]]\nname = "a"\nkind = "agreement"\n')
    with pytest.raises(ConfigurationError, match="statistic"):
        parse_rules('[[rules]]\nname = "a"\nkind = "agreement"\nthreshold = 0.6\nstatistic = "f1"\n')


def _rows(pairs: list[tuple[float, bool]]) -> list[Agreeing]:
    return [Agreeing(f"{i:016x}", "j", "shop", i, score, grounded) for i, (score, grounded) in enumerate(pairs)]


def test_the_detector_says_no_data_until_it_can_measure_then_compares() -> None:
    params = AgreementParams(threshold=0.7, warning=0.8, min_reviews=4)
    few = agreement_state(_rows([(0.9, True)] * 3), params)
    assert (few.state, few.message) == ("NO_DATA", "3 reviews, need 4")
    one_kind = agreement_state(_rows([(0.9, True)] * 6), params)
    assert one_kind.state == "NO_DATA" and "both kinds" in one_kind.message
    # The judge calls every answer grounded; people call half of them wrong: balanced accuracy 0.5.
    wrong = agreement_state(_rows([(0.9, True), (0.9, False)] * 3), params)
    assert (wrong.state, wrong.value) == ("ALERT", 0.5)
    assert wrong.message == "judge balanced accuracy 0.500 over 6 reviews is below 0.7"
    right = agreement_state(_rows([(0.9, True), (0.1, False)] * 3), params)
    assert (right.state, right.value) == ("OK", 1.0)
    # Between the threshold and the warning: WARNING; an ALERT holds there until it is back at the warning.
    mixed = _rows([(0.9, True)] * 4 + [(0.1, False)] * 3 + [(0.9, False)])  # recalls 1.0 and 0.75
    state = agreement_state(mixed, AgreementParams(threshold=0.8, warning=0.9, min_reviews=4))
    assert state.state == "WARNING" and state.value == pytest.approx(0.875)
    held = agreement_state(mixed, AgreementParams(threshold=0.8, warning=0.9, min_reviews=4), previous="ALERT")
    assert held.state == "ALERT" and "not back at 0.9" in held.message


def test_the_watcher_fires_when_people_disagree_with_the_judge(
    store_target: str, open_store: Callable[[], Any]
) -> None:
    store = open_store()
    records, scores = [], []
    for i in range(12):
        sid = f"{i:016x}"
        t = NOW - DAY + i * NS
        records.append({"span_id": sid, "trace_id": sid * 2, "service": "shop", "time_ns": t, "decision": "evaluated"})
        scores.append({"span_id": sid, "metric": "faithfulness", "value": 0.9, "service": "shop", "time_ns": t})
    store.write(
        Batch(
            rag_records=[whole_row(r, RAG_COLUMNS) for r in records],
            scores=[whole_row(s, SCORE_COLUMNS) for s in scores],
        )
    )
    # The judge said every answer is grounded; people say half of them are not.
    for i in range(12):
        store.change(
            lambda conn, i=i: save_review(
                conn, f"{i:016x}", claim=ANSWER, grounded=i % 2 == 0, note=None, author="ana", now_ns=NOW - 3600 * NS
            )
        )
    watcher = Watcher(store_target, rules=parse_rules(RULE), sinks=[])
    try:
        (fired,) = watcher.evaluate_once(NOW)
    finally:
        watcher.stop()
    assert (fired.rule, fired.state, fired.service) == ("judge-agreement", "ALERT", "shop")
    assert fired.message == "judge balanced accuracy 0.500 over 12 reviews is below 0.7"
    (row,) = dict_rows(store_target, "SELECT kind, metric, state, value FROM alerts")
    assert row == {"kind": "agreement", "metric": "faithfulness", "state": "ALERT", "value": 0.5}
