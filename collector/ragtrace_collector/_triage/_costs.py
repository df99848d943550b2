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
from ragtrace_collector._triage._layout import fmt_time, sparkline
from ragtrace_collector._triage._prices import Price, cost, money, price_table
from ragtrace_collector._triage._templates import Markup, render_page

__all__ = ["costs_page"]


def _spend(data: dict[str, Any], prices: dict[str, Price]) -> dict[str, Any] | None:
    """The dollars sections' figures: per day (app, judge, both), and per service and model with totals; None when
    no model call says its tokens and nothing was judged."""
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
        return None
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
    totals = {who: sum(v[who] for v in days.values()) for who in ("app", "judge")}
    return {
        "days": [
            {
                "date": fmt_time(day * _DAY_NS)[:10],
                "app": money(v["app"]),
                "judge": money(v["judge"]),
                "both": money(v["app"] + v["judge"]),
            }
            for day, v in sorted(days.items())
        ],
        "totals": {
            "app": money(totals["app"]),
            "judge": money(totals["judge"]),
            "both": money(totals["app"] + totals["judge"]),
        },
        "groups": [
            {
                "service": service,
                "who": who,
                "model": model,
                "calls": calls,
                "prompt": p,
                "completion": c,
                "usd": money(usd) if priced else money(None),
            }
            for (service, who, model), (calls, p, c, usd, priced) in sorted(groups.items())
        ],
        "unpriced": sorted(unpriced),
        "chart": [(day * _DAY_NS, v["app"] + v["judge"]) for day, v in sorted(days.items())],
    }


def _in_words(f: RecordFilter) -> str:
    """What narrows the page: its scope in words (not its query's nanoseconds), then any other condition."""
    if not f.query():
        return ""
    scoped = {key for key, _ in f.scope.params()}
    return "; ".join([f.scope.describe(), *(f"{key}={value}" for key, value in f.params() if key not in scoped)])


def costs_page(
    data: dict[str, Any], f: RecordFilter, prices: dict[str, Price] | None = None, *, services: Sequence[str] = ()
) -> str:
    """The cost and coverage page (``templates/costs.html``; ``prices``: the price table, by default
    ``price_table()``; ``services``: the scope picker's choices)."""
    hours = data["hours"]
    calls = [(h * _HOUR_NS, float(c or 0) / n) for h, c, _, _, n in hours if n]
    tokens = [(h * _HOUR_NS, float(t or 0) / n) for h, _, t, _, n in hours if n]
    seconds = [(h * _HOUR_NS, float(s or 0)) for h, _, _, s, n in hours if n]
    by_service: dict[str, dict[str, int]] = {}
    for service, decision, count in data["coverage"]:
        by_service.setdefault(service or "-", {})[decision or "-"] = count
    spend = _spend(data, price_table() if prices is None else prices)
    # The charts are SVG the chart template made (escaped there).
    charts = {
        "spend": Markup(
            sparkline(spend["chart"], label="US dollars a day, the app's model calls and the judge together", unit="$")
            if spend
            else ""
        ),
        "calls": Markup(sparkline(calls, label="judge calls per scored record by hour")),
        "tokens": Markup(sparkline(tokens, label="judge tokens per scored record by hour")),
        "seconds": Markup(sparkline(seconds, label="mean judge seconds per scored record by hour", unit=" s")),
    }
    return render_page(
        "costs.html",
        title="cost and coverage",
        scope=f.scope,
        services=services,
        here="/costs",
        since_ns=data.get("since_ns"),
        filtered=_in_words(f),
        default_days=DEFAULT_DAYS,
        spend=spend,
        charts=charts,
        decisions=sorted({d for counts in by_service.values() for d in counts}),
        coverage=sorted(by_service.items()),
    )
