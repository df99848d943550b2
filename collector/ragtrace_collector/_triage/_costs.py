"""Judge cost and latency over time, and scoring coverage (decisions) per service: the page that says
what judging costs and whether every sampled record got its scores (read by ``_store.triage.read_costs``)."""

from __future__ import annotations

from typing import Any

from ragtrace_collector._store.triage import COSTS_DEFAULT_DAYS as DEFAULT_DAYS
from ragtrace_collector._store.triage import HOUR_NS as _HOUR_NS
from ragtrace_collector._triage._filters import RecordFilter
from ragtrace_collector._triage._layout import e, fmt_time, page, sparkline

__all__ = ["costs_page"]


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
