"""What the app's model calls and the judge cost, in US dollars per day and per service and model with totals;
judge calls, tokens and latency over time; and scoring coverage (decisions) per service: the page that says
what the RAG app and its judging cost and whether every sampled record got its scores (read by
``_store.triage.read_costs``; priced by ``_prices``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace_collector._store.triage import COSTS_DEFAULT_DAYS as DEFAULT_DAYS
from ragtrace_collector._store.triage import DAY_NS as _DAY_NS
from ragtrace_collector._store.triage import HOUR_NS as _HOUR_NS
from ragtrace_collector._triage._filters import RecordFilter
from ragtrace_collector._triage._layout import e, fmt_time, page, sparkline
from ragtrace_collector._triage._prices import Price, cost, money, price_table

__all__ = ["costs_page"]


def _spend(data: dict[str, Any], prices: dict[str, Price]) -> str:
    """The dollars sections: per day (app, judge, both), and per service and model with totals."""
    lines: list[tuple[int, str, str, str, int, int, int, float | None]] = []  # day, service, who, model, ...
    for day, service, model, prompt, completion, calls in data["app_days"]:
        p, c = int(prompt or 0), int(completion or 0)
        lines.append((int(day), service or "-", "app", model or "-", int(calls), p, c, cost(model, p, c, prices)))
    for day, service, judge, prompt, completion, calls, _ in data["judge_days"]:
        p, c = int(prompt or 0), int(completion or 0)
        lines.append(
            (int(day), service or "-", "judge", judge or "-", int(calls or 0), p, c, cost(judge, p, c, prices))
        )
    if not lines:
        return (
            '<h2>Spend</h2><p class="muted">No model call in this range says its tokens (the app\'s spans carry '
            "gen_ai.usage.* or llm.token_count.*), and no record was judged.</p>"
        )
    days: dict[int, dict[str, float]] = {}
    groups: dict[tuple[str, str, str], list[Any]] = {}
    unpriced = set()
    for day, service, who, model, calls, p, c, usd in lines:
        per_day = days.setdefault(day, {"app": 0.0, "judge": 0.0})
        per_day[who] += usd or 0.0
        group = groups.setdefault((service, who, model), [0, 0, 0, 0.0, True])
        group[0] += calls
        group[1] += p
        group[2] += c
        group[3] += usd or 0.0
        if usd is None:
            group[4] = False
            unpriced.add(model)
    day_rows = "".join(
        f"<tr><td>{e(fmt_time(day * _DAY_NS)[:10])}</td><td>{money(v['app'])}</td><td>{money(v['judge'])}</td>"
        f"<td>{money(v['app'] + v['judge'])}</td></tr>"
        for day, v in sorted(days.items())
    )
    totals = {who: sum(v[who] for v in days.values()) for who in ("app", "judge")}
    group_rows = "".join(
        f"<tr><td>{e(service)}</td><td>{who}</td><td>{e(model)}</td><td>{calls}</td><td>{p}</td><td>{c}</td>"
        f"<td>{money(usd) if priced else money(None)}</td></tr>"
        for (service, who, model), (calls, p, c, usd, priced) in sorted(groups.items())
    )
    note = (
        f'<p class="muted">No price for {e(", ".join(sorted(unpriced)))}: not counted in the dollars; add it with '
        "RAGTRACE_JUDGE_PRICES=MODEL=IN/OUT (US dollars per million tokens).</p>"
        if unpriced
        else ""
    )
    chart = [(day * _DAY_NS, v["app"] + v["judge"]) for day, v in sorted(days.items())]
    return (
        "<h2>Spend per day (US dollars)</h2>"
        + sparkline(chart, label="US dollars a day, the app's model calls and the judge together", unit="$")
        + "<table><thead><tr><th>day (UTC)</th><th>the app's model calls</th><th>the judge</th><th>both</th></tr>"
        + f"</thead><tbody>{day_rows}<tr><th>all days</th><th>{money(totals['app'])}</th>"
        + f"<th>{money(totals['judge'])}</th><th>{money(totals['app'] + totals['judge'])}</th></tr></tbody></table>"
        + "<h2>Spend by service and model</h2><table><thead><tr><th>service</th><th>who</th><th>model</th>"
        + "<th>calls</th><th>prompt tokens</th><th>completion tokens</th><th>US dollars</th></tr></thead>"
        + f"<tbody>{group_rows}</tbody></table>{note}"
    )


def costs_page(
    data: dict[str, Any], f: RecordFilter, prices: dict[str, Price] | None = None, *, services: Sequence[str] = ()
) -> str:
    """The cost and coverage page (``prices``: the price table, by default ``price_table()``; ``services``: the
    scope picker's choices)."""
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
        "<h1>Cost and coverage</h1>"
        + f'<p class="muted">records since {e(fmt_time(data.get("since_ns")))}'
        + (f"; filtered: {e(f.query())}" if f.query() else "")
        + f" (by default the {DEFAULT_DAYS} days before the newest record; set since= for more)</p>"
        + _spend(data, price_table() if prices is None else prices)
        + "<h2>Judge calls per scored record, by hour</h2>"
        + sparkline(calls, label="judge calls per scored record by hour")
        + "<h2>Judge tokens per scored record, by hour</h2>"
        + sparkline(tokens, label="judge tokens per scored record by hour")
        + "<h2>Seconds of judging per scored record, by hour</h2>"
        + sparkline(seconds, label="mean judge seconds per scored record by hour", unit=" s")
        + "<h2>Coverage: decisions per service</h2><table><thead><tr><th>service</th>"
        + "".join(f"<th>{e(d)}</th>" for d in decisions)
        + f"<th>all</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return page("cost and coverage", body, scope=f.scope, services=services, here="/costs")
