"""Evaluation of one rule over the store: which groups it covers and the state each is in now."""

from __future__ import annotations

import sqlite3
from typing import Any

from ragtrace_collector import _drift
from ragtrace_collector._rule_types import (
    DriftParams,
    Rule,
    SpikeParams,
    ThresholdParams,
)

SCORES = "scores"

GroupKey = tuple[str | None, str | None]


def grouped_by(rule: Rule) -> tuple[bool, bool]:
    """Whether the rule is evaluated per service and per route."""
    return rule.group_by in ("service", "service_route"), rule.group_by in ("route", "service_route")


def group_key(rule: Rule, service: str | None, route: str | None) -> GroupKey:
    by_service, by_route = grouped_by(rule)
    return (service if by_service else rule.service, route if by_route else rule.route)


def _filters(key: GroupKey, grouped: tuple[bool, bool] = (False, False)) -> tuple[str, list[Any]]:
    """The SQL that keeps one group's rows.

    A grouped column always filters: its None is the group of rows without a service (or route), which must
    count its own rows only (``IS NULL``), not every row. An ungrouped column filters only when the rule
    restricts it (None there means any value).
    """
    clauses, args = [], []
    for column, value, by in zip(("service", "route"), key, grouped, strict=True):
        if by:
            clauses.append(f"{column} IS ?")  # IS: equal, or both NULL
            args.append(value)
        elif value is not None:
            clauses.append(f"{column} = ?")
            args.append(value)
    return "".join(f" AND {c}" for c in clauses), args


def _lookback_ns(rule: Rule) -> int:
    params = rule.params
    if isinstance(params, ThresholdParams):
        return params.window_ns
    return params.window_ns + params.baseline_ns


def _values(conn: sqlite3.Connection, rule: Rule, key: GroupKey, start: int, end: int, limit: int = -1) -> list[float]:
    # (start, end]: a record exactly on a boundary belongs to the later window. Newest first for LIMIT.
    metric = rule.metric
    where, args = _filters(key, grouped_by(rule))
    rows = conn.execute(
        f"SELECT value FROM {SCORES} WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?"
        f"{where} ORDER BY time_ns DESC, span_id DESC LIMIT ?",
        [metric, start, end, *args, limit],
    ).fetchall()
    return [float(row[0]) for row in reversed(rows)]


def baseline_end(rule: Rule, now_ns: int) -> int | None:
    """Where the rule's sliding baseline window ends at ``now_ns`` (where its recent window starts); None for a
    threshold rule, which has no baseline."""
    if isinstance(rule.params, ThresholdParams):
        return None
    return now_ns - rule.params.window_ns


def evaluate_rule(
    conn: sqlite3.Connection,
    rule: Rule,
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
    conn: sqlite3.Connection,
    rule: Rule,
    key: GroupKey,
    now_ns: int,
    previous: str | None,
    frozen_end: int | None,
) -> _drift.Evaluation:
    direction = _drift.metric_direction(rule.metric)
    params = rule.params
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
        where, args = _filters(key, grouped_by(rule))
        bad_sql = "value > ?" if direction == "lower" else "value < ?"
        total, bad = conn.execute(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END), 0) FROM {SCORES} "
            f"WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?{where}",
            [params.cutoff, rule.metric, end - params.baseline_ns, end, *args],
        ).fetchone()
        return _drift.spike_state(
            _drift.bad_events(recent, direction=direction, cutoff=params.cutoff),
            baseline_counts=(int(bad), int(total)),
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


def groups_of(conn: sqlite3.Connection, rule: Rule, now_ns: int) -> set[GroupKey]:
    where, args = _filters((rule.service, rule.route))
    rows = conn.execute(
        f"SELECT DISTINCT service, route FROM {SCORES} WHERE metric = ? AND value IS NOT NULL "
        f"AND time_ns > ? AND time_ns <= ?{where}",
        [rule.metric, now_ns - _lookback_ns(rule), now_ns, *args],
    ).fetchall()
    return {group_key(rule, service, route) for service, route in rows}
