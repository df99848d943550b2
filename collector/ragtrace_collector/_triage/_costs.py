"""Judge cost and latency over time, and scoring coverage (decisions) per service: the page that says
what judging costs and whether every sampled record got its scores."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from ragtrace_collector._triage._filters import RecordFilter
from ragtrace_collector._triage._layout import e, fmt_time, page, sparkline
from ragtrace_collector._triage._queries import where_clause

__all__ = ["costs_page", "read_costs"]

_HOUR_NS = 3600 * 1_000_000_000


DEFAULT_DAYS = 7
"""Without ``since``: the week before the store's newest record (an index lookup), not the whole store."""


def read_costs(conn: sqlite3.Connection, f: RecordFilter) -> dict[str, Any]:
    """Per hour: judge calls, tokens and mean seconds of the scored records; per service: decision counts.
    Over ``f``'s time range, by default the ``DEFAULT_DAYS`` before ``until`` (else the newest record)."""
    if f.since_ns is None:
        end = f.until_ns
        if end is None:
            end = conn.execute("SELECT MAX(time_ns) FROM rag_records").fetchone()[0]
        if end is not None:
            f = replace(f, since_ns=int(end) - DEFAULT_DAYS * 24 * _HOUR_NS)
    where, args = where_clause(f)
    scored = f"{where} AND r.calls IS NOT NULL" if where else " WHERE r.calls IS NOT NULL"
    hours = conn.execute(
        f"SELECT r.time_ns / {_HOUR_NS} AS hour, SUM(r.calls), SUM(r.prompt_tokens) + SUM(r.completion_tokens), "
        f"AVG(r.seconds), COUNT(*) FROM rag_records r{scored} GROUP BY hour ORDER BY hour",
        args,
    ).fetchall()
    coverage = conn.execute(
        f"SELECT r.service, r.decision, COUNT(*) FROM rag_records r{where} GROUP BY r.service, r.decision",
        args,
    ).fetchall()
    return {"hours": hours, "coverage": coverage, "since_ns": f.since_ns}


def costs_page(data: dict[str, Any], f: RecordFilter) -> str:
    """The cost and coverage page."""
    hours = data["hours"]
    calls = [(h * _HOUR_NS, float(c or 0) / n) for h, c, _, _, n in hours if n]
    tokens = [(h * _HOUR_NS, float(t or 0) / n) for h, _, t, _, n in hours if n]
    seconds = [(h * _HOUR_NS, float(s or 0)) for h, _, _, s, n in hours if n]
    by_service: dict[str, dict[str, int]] = {}
    for service, decision, count in data["coverage"]:
        by_service.setdefault(service or "-", {})[decision or "-"] = count
    decisions = sorted({d for counts in by_service.values() for d in counts})
    rows = "".join(
        f"<tr><td>{e(s)}</td>"
        + "".join(f"<td>{counts.get(d, 0)}</td>" for d in decisions)
        + f"<td>{sum(counts.values())}</td></tr>"
        for s, counts in sorted(by_service.items())
    )
    body = (
        "<h1>Judge cost and coverage</h1>"
        + f'<p class="muted">records since {e(fmt_time(data.get("since_ns")))}'
        + (f"; filtered: {e(f.query())}" if f.query() else "")
        + f" (by default the {DEFAULT_DAYS} days before the newest record; set since= for more)</p>"
        + "<h2>Judge calls per scored record, by hour</h2>"
        + sparkline(calls, label="judge calls per scored record by hour")
        + "<h2>Judge tokens per scored record, by hour</h2>"
        + sparkline(tokens, label="judge tokens per scored record by hour")
        + "<h2>Seconds of judging per scored record, by hour</h2>"
        + sparkline(seconds, label="mean judge seconds per scored record by hour")
        + "<h2>Coverage: decisions per service</h2><table><thead><tr><th>service</th>"
        + "".join(f"<th>{e(d)}</th>" for d in decisions)
        + f"<th>all</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return page("cost and coverage", body)
