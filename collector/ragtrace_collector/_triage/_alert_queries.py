"""The alert view's SQL: an alert of the ``alerts`` table, its group's transitions, the metric around it
and the records that made it fire (every query on an index: ``alerts`` by id and group, ``scores`` by
``(service, metric, time_ns)`` or ``(route, metric, time_ns)``)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from ragtrace_collector._drift import metric_direction
from ragtrace_collector._triage._queries import RAG_FIELDS, attach_scores

__all__ = ["AlertDetail", "AlertScope", "alert_detail", "alert_scope", "latest_alert_id"]

_BAD_CUTOFF = 0.5
"""A record beyond this on its metric's bad side "made the alert fire" (the spike rule's default cutoff)."""


@dataclass(frozen=True, slots=True)
class AlertScope:
    """An alert row and which records made it fire: its group's, from ``since_ns`` to the alert, beyond
    ``cutoff`` on the metric's bad side (``lower``: lower is better)."""

    alert: dict[str, Any]
    since_ns: int
    since_ok: bool
    """Whether ``since_ns`` is the group's last OK (else the hour before the alert: it never was)."""
    cutoff: float | None
    """None when they are all the period's records (a drift rule)."""
    lower: bool


@dataclass(frozen=True, slots=True)
class AlertDetail:
    """An alert's scope, its group's transitions, the metric around it, and the records that made it fire."""

    scope: AlertScope
    history: list[dict[str, Any]]
    records: list[dict[str, Any]]
    series: list[tuple[int, float]]
    """The metric's mean over time around the alert, ``(time_ns, mean)``, for the chart."""


_GROUP = "rule = ? AND IFNULL(service, '') = IFNULL(?, '') AND IFNULL(route, '') = IFNULL(?, '')"


def alert_scope(conn: sqlite3.Connection, alert_id: int) -> AlertScope | None:
    """An alert of the ``alerts`` table by id and the scope of the records that made it fire; None when there
    is none. They are its metric's records of its group (service and/or route) from the group's last OK (the
    hour before the alert, when it never was) to the alert, beyond a threshold rule's own threshold, else 0.5
    (the spike rule's default cutoff; a rule's own cutoff is in its rules file, not in the store); a drift
    rule's are all of them."""
    names = [d[1] for d in conn.execute("PRAGMA table_info(alerts)")]
    if not names:
        return None
    row = conn.execute(f"SELECT {', '.join(names)} FROM alerts WHERE id = ?", (alert_id,)).fetchone()
    if row is None:
        return None
    alert = dict(zip(names, row, strict=True))
    ok = conn.execute(
        f"SELECT MAX(time_ns) FROM alerts WHERE {_GROUP} AND state IN ('OK', 'NO_DATA') AND time_ns < ?",
        (alert["rule"], alert.get("service"), alert.get("route"), alert["time_ns"]),
    ).fetchone()[0]
    since = ok if ok is not None else alert["time_ns"] - 3600 * 1_000_000_000
    cutoff = alert.get("threshold") if alert.get("kind") == "threshold" else _BAD_CUTOFF
    if alert.get("kind") == "drift":
        cutoff = None
    lower = metric_direction(alert["metric"]) == "lower"
    return AlertScope(alert, since, ok is not None, None if cutoff is None else float(cutoff), lower)


def alert_detail(conn: sqlite3.Connection, alert_id: int, limit: int = 100) -> AlertDetail | None:
    """``alert_scope``, the group's transitions, the records that made it fire (worst first, at most
    ``limit``) and ``series``: the metric's mean over that period and as long again on each side, in 40 steps."""
    found = alert_scope(conn, alert_id)
    if found is None:
        return None
    alert, since = found.alert, found.since_ns
    history = [
        dict(zip(("time_ns", "state", "value", "threshold"), r, strict=True))
        for r in conn.execute(
            f"SELECT time_ns, state, value, threshold FROM alerts WHERE {_GROUP} ORDER BY time_ns",
            (alert["rule"], alert.get("service"), alert.get("route")),
        )
    ]
    scope, scope_args = "", []
    for column in ("service", "route"):
        if alert.get(column):
            scope += f" AND s.{column} = ?"
            scope_args.append(alert[column])
    bad = "" if found.cutoff is None else (" AND s.value > ?" if found.lower else " AND s.value < ?")
    args: list[Any] = [alert["metric"], since, alert["time_ns"], *([found.cutoff] if bad else []), *scope_args]
    cursor = conn.execute(
        f"SELECT {', '.join('r.' + c for c in RAG_FIELDS)}, s.value FROM scores s "
        "JOIN rag_records r ON r.span_id = s.span_id "
        f"WHERE s.metric = ? AND s.time_ns BETWEEN ? AND ?{bad}{scope} "
        f"ORDER BY s.value {'DESC' if found.lower else 'ASC'}, s.time_ns DESC LIMIT ?",
        [*args, limit],
    )
    records = [dict(zip((*RAG_FIELDS, "value"), r, strict=True)) for r in cursor]
    attach_scores(conn, records)
    span = max(alert["time_ns"] - since, 60 * 1_000_000_000)
    start, end = since - span, alert["time_ns"] + span
    step = max(1, (end - start) // 40)
    series = [
        (int(bucket) * step + step // 2, float(mean))
        for bucket, mean in conn.execute(
            f"SELECT s.time_ns / ? AS bucket, AVG(s.value) FROM scores s WHERE s.metric = ? "
            f"AND s.time_ns BETWEEN ? AND ? AND s.value IS NOT NULL{scope} GROUP BY bucket ORDER BY bucket",
            [step, alert["metric"], start, end, *scope_args],
        )
    ]
    return AlertDetail(found, history, records, series)


def latest_alert_id(conn: sqlite3.Connection, rule: str, service: str | None, route: str | None) -> int | None:
    """The id of a group's latest ALERT row (its latest row of any state when it never fired), or None."""
    if not any(True for _ in conn.execute("PRAGMA table_info(alerts)")):
        return None
    row = conn.execute(
        "SELECT id FROM alerts WHERE rule = ? AND IFNULL(service, '') = ? AND IFNULL(route, '') = ? "
        "ORDER BY state = 'ALERT' DESC, time_ns DESC LIMIT 1",
        (rule, service or "", route or ""),
    ).fetchone()
    return int(row[0]) if row else None
