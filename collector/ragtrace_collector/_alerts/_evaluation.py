"""Evaluation of one rule over the store: which groups it covers and the state each is in now. A score rule
(threshold, spike, drift) reads the group's scores; an agreement rule the reviews people gave the group's records
(``_agreement.agreement_state``)."""

from __future__ import annotations

from ragtrace_collector import _drift
from ragtrace_collector._agreement import agreement_state
from ragtrace_collector._rule_types import (
    AgreementParams,
    AlertRule,
    DriftParams,
    SpikeParams,
    ThresholdParams,
)
from ragtrace_collector._store import Connection, alerts, reviews
from ragtrace_collector._store.alerts import GroupKey


def grouped_by(rule: AlertRule) -> tuple[bool, bool]:
    """Whether the rule is evaluated per service and per route."""
    return rule.group_by in ("service", "service_route"), rule.group_by in ("route", "service_route")


def group_key(rule: AlertRule, service: str | None, route: str | None) -> GroupKey:
    by_service, by_route = grouped_by(rule)
    return (service if by_service else rule.service, route if by_route else rule.route)


def _lookback_ns(rule: AlertRule) -> int:
    params = rule.params
    if isinstance(params, ThresholdParams | AgreementParams):
        return params.window_ns
    return params.window_ns + params.baseline_ns


def _values(
    conn: Connection, rule: AlertRule, key: GroupKey, start: int, end: int, limit: int | None = None
) -> list[float]:
    return alerts.score_values(conn, rule.metric, key, grouped_by(rule), start, end, limit)


def baseline_end(rule: AlertRule, now_ns: int) -> int | None:
    """Where the rule's sliding baseline window ends at ``now_ns`` (where its recent window starts); None for a
    threshold rule, which has no baseline."""
    if isinstance(rule.params, ThresholdParams | AgreementParams):
        return None
    return now_ns - rule.params.window_ns


def evaluate_rule(
    conn: Connection,
    rule: AlertRule,
    key: GroupKey,
    now_ns: int,
    previous: str | None,
    *,
    baseline_end_ns: int | None = None,
) -> _drift.Evaluation:
    """Evaluate one rule for one group over the scores table, as of ``now_ns``.

    The recent window ends at ``now_ns``; the baseline window ends where the recent one starts, or at
    ``baseline_end_ns`` when given (frozen while an alert fires, so a long spike is not learnt as normal).
    """
    evaluation = _evaluate(conn, rule, key, now_ns, previous, baseline_end_ns)
    if baseline_end_ns is not None and evaluation.value is not None:
        frozen = f"{evaluation.message}; baseline frozen when the alert fired"
        return _drift.Evaluation(
            evaluation.state,
            evaluation.value,
            evaluation.threshold,
            evaluation.count,
            frozen,
            evaluation.baseline_count,
        )
    return evaluation


def _evaluate(
    conn: Connection,
    rule: AlertRule,
    key: GroupKey,
    now_ns: int,
    previous: str | None,
    frozen_end: int | None,
) -> _drift.Evaluation:
    direction = _drift.metric_direction(rule.metric)
    params = rule.params
    if isinstance(params, AgreementParams):
        rows = reviews.window_rows(conn, key, grouped_by(rule), now_ns - params.window_ns, now_ns)
        return agreement_state(rows, params, previous)
    if isinstance(params, ThresholdParams):
        values = _values(conn, rule, key, now_ns - params.window_ns, now_ns)
        return _drift.threshold_state(
            values,
            threshold=params.threshold,
            warning=params.warning,
            direction=direction,
            min_count=params.min_records,
            previous=previous,
        )
    if isinstance(params, SpikeParams):
        split = now_ns - params.window_ns
        end = split if frozen_end is None else frozen_end
        recent = _values(conn, rule, key, split, now_ns, params.max_records)
        bad, total = alerts.bad_counts(
            conn,
            rule.metric,
            key,
            grouped_by(rule),
            end - params.baseline_ns,
            end,
            cutoff=params.cutoff,
            higher_is_bad=direction == "lower",
        )
        return _drift.spike_state(
            _drift.bad_events(recent, direction=direction, cutoff=params.cutoff),
            baseline_counts=(bad, total),
            baseline_rate=params.baseline_rate,
            shift=params.shift,
            h=params.h,
            warning_h=params.warning_h,
            min_rate=params.min_rate,
            min_count=params.min_records,
            min_baseline=params.min_baseline,
            previous=previous,
        )
    assert isinstance(params, DriftParams)
    split = now_ns - params.window_ns
    end = split if frozen_end is None else frozen_end
    return _drift.drift_state(
        _values(conn, rule, key, split, now_ns),
        _values(conn, rule, key, end - params.baseline_ns, end),
        method=params.method,
        warning=params.warning,
        alert=params.alert,
        min_count=params.min_records,
        bins=params.bins,
    )


def groups_of(conn: Connection, rule: AlertRule, now_ns: int) -> set[GroupKey]:
    """The rule's groups that have scores in its look-back window as of ``now_ns``."""
    restrict = (rule.service, rule.route)
    if isinstance(rule.params, AgreementParams):
        found = reviews.groups_with_reviews(conn, restrict, now_ns - rule.params.window_ns, now_ns)
        return {group_key(rule, service, route) for service, route in found}
    found = alerts.groups_with_scores(conn, rule.metric, restrict, now_ns - _lookback_ns(rule), now_ns)
    return {group_key(rule, service, route) for service, route in found}
