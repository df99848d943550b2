"""One alert: its rule, group and message, the statistic over time (every evaluation of its group), the
period it covers, and the records that made it fire, each a link to its record view."""

from __future__ import annotations

from ragtrace_collector._triage._filters import RecordFilter, ScoreBound
from ragtrace_collector._triage._layout import e, fmt_time, page, sparkline
from ragtrace_collector._triage._list_html import row_html
from ragtrace_collector._triage._queries import AlertDetail

__all__ = ["alert_page", "alert_records_filter"]


def alert_records_filter(detail: AlertDetail, lower: bool) -> RecordFilter:
    """The records list filtered as the alert view's records are (for "all of them" and bookmarking)."""
    a = detail.alert
    bound = ScoreBound(str(a["metric"]), ">" if lower else "<", 0.5)
    return RecordFilter(
        since_ns=detail.since_ns, until_ns=a["time_ns"], service=a.get("service") or None, scores=(bound,)
    )


def alert_page(detail: AlertDetail, *, lower: bool) -> str:
    """The alert view; ``lower`` when the alert's metric is lower-is-better (hallucination)."""
    a = detail.alert
    group = f"service={a.get('service')}" if a.get("service") else "all services"
    points = [(h["time_ns"], float(h["value"])) for h in detail.history if h.get("value") is not None]
    level = next((float(h["threshold"]) for h in reversed(detail.history) if h.get("threshold") is not None), None)
    statistic = sparkline(points, level=level, label=f"{a['rule']} statistic over time, alert level dashed")
    states = "".join(
        f"<li>{e(fmt_time(h['time_ns']))}: {e(h['state'])}"
        + (f" ({h['value']:.2f})" if isinstance(h.get("value"), float | int) else "")
        + "</li>"
        for h in detail.history[-12:]
    )
    listed = alert_records_filter(detail, lower)
    rows = "".join(row_html(r, "") for r in detail.records)
    body = (
        f"<h1>Alert: {e(a['rule'])} ({e(a['metric'])}, {e(group)})</h1>"
        f'<p><span class="chip bad">{e(a["state"])}</span> at {e(fmt_time(a["time_ns"]))}: {e(a.get("message"))}</p>'
        f"<h2>The statistic over time</h2>{statistic}"
        f"<details><summary>state changes</summary><ul>{states}</ul></details>"
        f"<h2>Records that made it fire</h2>"
        f'<p class="muted">{e(a["metric"])} {"above" if lower else "below"} 0.5 in {e(group)}, from '
        f"{e(fmt_time(detail.since_ns))} (the group was last OK) to the alert, worst first. "
        f'<a href="/records?{e(listed.query())}">all of them in the records list</a></p>'
        '<table id="alert-records"><thead><tr><th>time</th><th>service</th><th>query</th><th>answer</th>'
        f"<th>decision</th><th>scores</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return page(f"alert {a['rule']}", body)
