"""One alert: its rule, group and message, the statistic over time (every evaluation of its group), the
period it covers, the records that made it fire, each a link to its record view, and its group's controls
(acknowledge, silence, end a silence: ``_alert_panel``, the buttons working through ``static/alerts.js``)."""

from __future__ import annotations

from ragtrace.metrics import score_range
from ragtrace_collector._store.triage import AlertDetail, AlertScope
from ragtrace_collector._triage._alert_panel import AlertPanel, group_controls_html
from ragtrace_collector._triage._filters import RecordFilter, ScoreBound
from ragtrace_collector._triage._layout import sparkline
from ragtrace_collector._triage._list_html import row_html
from ragtrace_collector._triage._templates import Markup, render_page

__all__ = ["alert_page", "alert_records_filter"]


def alert_records_filter(scope: AlertScope) -> RecordFilter:
    """The records list filtered as the alert's records are (the view's "all of them", and ``?alert=``)."""
    a = scope.alert
    bounds = () if scope.cutoff is None else (ScoreBound(str(a["metric"]), ">" if scope.lower else "<", scope.cutoff),)
    return RecordFilter(
        since_ns=scope.since_ns,
        until_ns=a["time_ns"],
        service=a.get("service") or None,
        route=a.get("route") or None,
        scores=bounds,
    )


def alert_page(detail: AlertDetail, controls: AlertPanel) -> str:
    """The alert view (``templates/alert.html``), with ``controls``: its group's (``_alert_panel.read_group_panel``)."""
    scope = detail.scope
    a, lower = scope.alert, scope.lower
    group = ", ".join(f"{k}={a[k]}" for k in ("service", "route") if a.get(k)) or "all services"
    level = float(a["threshold"]) if a.get("kind") == "threshold" and a.get("threshold") is not None else None
    # When the group's alert fired and when it resolved, on the chart itself.
    marks: list[tuple[int, str]] = []
    before = None
    for h in detail.history:
        if h["state"] == "ALERT" and before != "ALERT":
            marks.append((int(h["time_ns"]), "fired"))
        elif h["state"] == "OK" and before == "ALERT":
            marks.append((int(h["time_ns"]), "resolved"))
        before = h["state"]
    chart = sparkline(
        detail.series,
        level=level,
        marks=marks,
        bounds=score_range(str(a["metric"])),  # the score's documented range, whatever the values
        label=f"mean {a['metric']} of {group} over time"
        + (", the rule's threshold dashed" if level is not None else ""),
    )
    states = [
        {**h, "value": h.get("value") if isinstance(h.get("value"), float | int) else None}
        for h in detail.history[-12:]
    ]
    return render_page(
        "alert.html",
        title=f"alert {a['rule']}",
        scripts=("alerts.js",),
        a=a,
        group=group,
        # HTML made by templates (the controls, the chart, the rows): escaped there.
        controls=Markup(
            group_controls_html(
                controls, rule=str(a["rule"]), service=a.get("service") or None, route=a.get("route") or None
            )
        ),
        chart=Markup(chart),
        states=states,
        records=[Markup(row_html(r, "")) for r in detail.records],
        since_ns=scope.since_ns,
        since="the group was last OK" if scope.since_ok else "an hour before the alert: the group was never OK before",
        beyond=f"{a['metric']} {'above' if lower else 'below'} {scope.cutoff:g}" if scope.cutoff is not None else "all",
        listed=alert_records_filter(scope).query(),
    )
