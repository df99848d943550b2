"""The report as HTML: a self-contained file (``html_page``: plotly.js inlined once, so it renders offline with no
CDN and no collector), and the live overview (``overview_page``: in the pages' shared frame, plotly.js loaded from
the collector's own cached URL and each chart's figure in a JSON data block that ``static/overview.js`` draws, so
the page holds no script of its own)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from ragtrace.metrics import score_range
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._report._format import chunk_label, cut, iso, num, period, scope
from ragtrace_collector._store.summaries import Problem, Summary
from ragtrace_collector._triage._alert_panel import AlertPanel, alert_panel_html, describe
from ragtrace_collector._triage._assets import PLOTLY
from ragtrace_collector._triage._layout import page
from ragtrace_collector._triage._scope import Scope


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _text(value: object) -> str:
    """``value`` as Plotly text: Plotly renders a subset of HTML in titles, labels, legends and hover text (an
    ``<a href>`` from a span became a live link in a chart), and decodes entities, so escaped text shows as it
    was sent and nothing of it becomes markup."""
    return html.escape(str(value), quote=False)


def _figures(series: dict[str, list[tuple[int, float, int]]], marks: list[dict[str, Any]], head: Summary) -> list[str]:
    """Each chart as HTML with its inline script (the self-contained file)."""
    config = {"displaylogo": False, "responsive": True}
    return [
        fig.to_html(full_html=False, include_plotlyjs=False, config=config, default_height="320px")
        for fig in _figure_objects(series, marks, head)
    ]


def _figure_blocks(
    series: dict[str, list[tuple[int, float, int]]], marks: list[dict[str, Any]], head: Summary
) -> list[str]:
    """Each chart as an empty ``div`` and its figure in a JSON data block beside it (the live page: no inline
    script). ``<``, ``>`` and ``&`` are written as JSON escapes, so no value can end the block."""
    blocks = []
    for i, fig in enumerate(_figure_objects(series, marks, head)):
        text = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        blocks.append(
            f'<div id="chart-{i}" class="plotly-graph-div plot"></div>'
            f'<script type="application/json" class="figure" data-for="chart-{i}">{text}</script>'
        )
    return blocks


def _figure_objects(
    series: dict[str, list[tuple[int, float, int]]], marks: list[dict[str, Any]], head: Summary
) -> list[Any]:
    import plotly.graph_objects as go

    def when(ns: int) -> datetime:
        return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)

    divs = []
    for metric, points in series.items():
        # The axis is the metric's documented range (a cosine's goes below 0); a mean outside it (a sender's bug:
        # the store keeps what came) is drawn at the range's edge, and its hover says the value and that.
        low, high = score_range(metric)
        pad = high - low
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(
                x=[when(t) for t, _, _ in points],
                y=[min(high, max(low, mean)) for _, mean, _ in points],
                customdata=[[count, mean] for _, mean, count in points],
                text=[
                    "" if low <= mean <= high else f" (outside [{low:g}, {high:g}]: drawn at its edge)"
                    for _, mean, _ in points
                ],
                mode="lines+markers",
                name=_text(f"mean {metric}"),
                hovertemplate="%{x}<br>mean %{customdata[1]:.3f} over %{customdata[0]} records%{text}<extra></extra>",
            )
        )
        fired = [m for m in marks if m["metric"] == metric]
        for state, symbol, color in (("ALERT", "triangle-down", "#d62728"), ("OK", "circle-open", "#2ca02c")):
            these = [m for m in fired if m["state"] == state]
            if these:
                fig.add_trace(
                    go.Scatter(
                        x=[when(m["time_ns"]) for m in these],
                        y=[high + 0.05 * pad] * len(these),
                        mode="markers",
                        marker={"symbol": symbol, "size": 13, "color": color},
                        name="alert" if state == "ALERT" else "resolved",
                        text=[_text(f"{m['rule']} [{m['service'] or '*'}]: {m['message']}") for m in these],
                        hovertemplate="%{x}<br>%{text}<extra></extra>",
                    )
                )
        better = "lower" if metric_direction(metric) == "lower" else "higher"
        fig.update_layout(
            title=_text(f"{metric} over time ({better} is better)"),
            height=320,
            margin={"l": 50, "r": 20, "t": 50, "b": 40},
            yaxis={"range": [low - 0.05 * pad, high + 0.12 * pad]},
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        )
        divs.append(fig)
    if head.decisions:
        names = [_text(d) for d, _ in head.decisions]
        counts = [c for _, c in head.decisions]
        total = sum(counts) or 1
        fig = go.Figure(
            go.Bar(x=names, y=counts, text=[f"{c / total:.0%}" for c in counts], textposition="auto", name="records")
        )
        fig.update_layout(
            title="Decision coverage (what happened to each RAG span's scoring)",
            height=320,
            margin={"l": 50, "r": 20, "t": 50, "b": 40},
        )
        divs.append(fig)
    return divs


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: .2rem; } .muted { color: #666; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { background: #f5f7fa; border-radius: 8px; padding: .7rem 1rem; min-width: 9rem; }
.card b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
td, th { padding: .25rem .6rem; border-bottom: 1px solid #ddd; }
.firing { background: #fde8e8; border-left: 4px solid #d62728; padding: .4rem .8rem; margin: .3rem 0; }
details { border: 1px solid #ddd; border-radius: 6px; padding: .5rem .8rem; margin: .5rem 0; }
summary { cursor: pointer; } .issue { color: #b00020; }
pre { white-space: pre-wrap; background: #fafafa; padding: .4rem; }
.alert-group { border-left: 4px solid #999; padding: .4rem .8rem; margin: .4rem 0; background: #f5f7fa; }
.alert-group.state-ALERT { border-color: #d62728; } .alert-group.state-WARNING { border-color: #e0a100; }
.alert-group button { margin-top: .3rem; }
"""


def _metrics_and_alerts(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    figures: list[str],
    recent: list[dict[str, Any]],
    record_links: bool,
    link: Any = None,
) -> list[str]:
    """The part both the file and the live page show: the metrics table, the charts, the recent transitions and
    the worst records (each linked to its record page when ``record_links``; ``link(path)`` adds the scope)."""
    e = html.escape
    link = link or (lambda path: path)
    parts = ["<h2>Metrics</h2>", "<table><tr><th>metric</th><th>mean</th><th>scored</th><th>better</th></tr>"]
    parts += [
        f"<tr><td>{e(m.metric)}</td><td>{m.mean:.3f}</td><td>{m.count}</td><td>{m.direction}</td></tr>"
        for m in head.metrics
    ]
    parts.append("</table>")
    parts.append('<h2>Scores over time</h2><div id="charts">')
    parts += figures or ['<p class="muted">No scores stored yet.</p>']
    parts.append("</div>")
    if recent:
        parts.append('<h2>Recent alert transitions</h2><table id="transitions">')
        parts.append("<tr><th>time</th><th>rule</th><th>metric</th><th>scope</th><th>change</th><th>message</th></tr>")
        parts += [
            f"<tr><td>{e(iso(a['time_ns']))}</td><td>{e(a['rule'])}</td><td>{e(a['metric'])}</td>"
            f"<td>{e(scope(a))}</td><td>{e(a['previous_state'] or '-')} &rarr; {e(a['state'])}</td>"
            f"<td>{e(a['message'] or '')}</td></tr>"
            for a in recent
        ]
        parts.append("</table>")
    parts.append(f"<h2>Worst traces (threshold {threshold:g})</h2>")
    if not worst:
        parts.append('<p class="muted">No record below the threshold.</p>')
    for p in worst:
        issues = ", ".join(str(i) for i in p.issues)
        parts.append(
            f'<details class="problem"><summary><b>{p.overall:.2f}</b> {e(cut(p.query, 120) or p.span_id)} '
            f'<span class="issue">{e(issues)}</span></summary>'
        )
        parts.append(
            f'<p class="muted">service {e(p.service or "-")}, route {e(p.route or "-")}, {e(iso(p.time_ns))}, '
            f"trace {e(p.trace_id or '-')}, span {e(p.span_id)}"
            + (
                f' · <a href="{e(link(f"/records/{p.span_id}"))}">open the record and its claims</a>'
                if record_links
                else ""
            )
            + "</p>"
        )
        parts.append(f"<p>Scores: {e(', '.join(f'{m} {v:.2f}' for m, v in p.scores.items()))}</p>")
        parts.append(f"<h4>Query</h4><pre>{e(p.query or '')}</pre><h4>Answer</h4><pre>{e(p.answer or '')}</pre>")
        if p.chunks:
            parts.append("<h4>Chunks</h4><ol start=0>")
            for chunk in p.chunks:
                label = chunk_label(chunk, score=True)
                title = f"<b>{e(label)}</b>" if label else ""
                parts.append(f"<li>{title}<pre>{e(str(chunk.get('content', '')))}</pre></li>")
            parts.append("</ol>")
        parts.append("</details>")
    return parts


def _cards(head: Summary, firing: int) -> list[str]:
    """The counts: the period's records, those of them scored (never more than the records), the overall mean and
    the alerts firing; and, under them, the scored spans whose record is not in the period, when there are any."""
    cards = [
        '<div class="cards">',
        f'<div class="card">records<b id="records">{head.records}</b></div>',
        f'<div class="card">of them scored<b id="scored">{head.scored}</b></div>',
        f'<div class="card">overall mean<b>{num(head.overall_mean)}</b></div>',
        f'<div class="card">alerts firing<b id="firing">{firing}</b></div>',
        "</div>",
    ]
    if head.scored_elsewhere:
        cards.append(
            f'<p class="muted" id="scored-elsewhere">{head.scored_elsewhere} more scored '
            f"span{'s' if head.scored_elsewhere != 1 else ''} whose record is not in this period (a late score, or "
            "a score-only export): the metrics and the overall mean count their scores.</p>"
        )
    return cards


def _firing_banners(head: Summary) -> list[str]:
    """A banner per firing alert of the alerts table (where no watcher keeps group states to describe them)."""
    e = html.escape
    banners = []
    for alert in head.firing:
        where = ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None)
        banners.append(
            f'<div class="firing"><b>{e(alert["rule"])}</b> {e(alert["metric"])} {e(where)}: '
            f"{e(alert['message'])}</div>"
        )
    return banners


def html_page(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    series: dict[str, list[tuple[int, float, int]]],
    marks: list[dict[str, Any]],
    recent: list[dict[str, Any]],
    refresh_seconds: int | None,
) -> str:
    """The report as one self-contained file (``ragtrace-collector report``): plotly.js inlined, no collector
    behind it; ``refresh_seconds`` makes it reload itself."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>ragtrace report</title>',
        f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">' if refresh_seconds else "",
        f"<style>{_CSS}</style>",
        f"<script>{_plotly_js()}</script>",
        "</head><body>",
        "<h1>ragtrace</h1>",
        f'<p class="muted">{e(period(head.first_ns, head.last_ns))}</p>',
        *_cards(head, len(head.firing)),
    ]
    parts += _firing_banners(head)
    parts += _metrics_and_alerts(head, worst, threshold, _figures(series, marks, head), recent, record_links=False)
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


def empty_store(endpoint: str) -> str:
    """What an empty store's overview says: where to send spans (the OTLP endpoints of this collector) and how."""
    e = html.escape
    base = endpoint.rstrip("/")
    host = base.split("://", 1)[-1].rsplit(":", 1)[0]
    return (
        '<section class="empty" id="empty"><h2>No spans yet</h2>'
        "<p>This collector has stored nothing yet. Send it your RAG app's spans over OTLP:</p><ul>"
        f"<li>OTLP/HTTP: <code>{e(base)}/v1/traces</code> (and <code>/v1/logs</code> for late scores)</li>"
        f"<li>OTLP/gRPC: <code>{e(host)}:4317</code> (the port <code>serve --grpc-port</code> set; 4317 by "
        "default)</li></ul>"
        "<p>From an app with ragtrace:</p>"
        f'<pre>import ragtrace\nragtrace.configure(service_name="support-bot", endpoint="{e(base)}", '
        "sample_rate=1.0)</pre>"
        "<p>Or any OpenTelemetry SDK or OpenInference instrumentation:</p>"
        f"<pre>export OTEL_EXPORTER_OTLP_ENDPOINT={e(base)}\nexport OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf</pre>"
        "<p>With <code>--ingest-token</code> (or <code>--token</code>) set, senders add "
        "<code>Authorization: Bearer &lt;token&gt;</code> (<code>OTEL_EXPORTER_OTLP_HEADERS</code>). Records show "
        "here, and in the records list, as they arrive.</p></section>"
    )


def overview_page(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    series: dict[str, list[tuple[int, float, int]]],
    marks: list[dict[str, Any]],
    recent: list[dict[str, Any]],
    panel: AlertPanel,
    *,
    last_row: int,
    poll_seconds: int,
    scope: Scope,
    services: Sequence[str],
    endpoint: str,
) -> str:
    """The live overview (``/``) in the pages' shared frame: the counts, the alert banners and panel (one reading of
    the alert groups, so they agree), the charts, the transitions and the worst records of ``scope``; an empty
    store says where to send spans (``endpoint``: this collector's base URL). It polls for new records by arrival
    order (``poll_seconds``) and never reloads itself."""
    e = html.escape
    firing = [g for g in panel.groups if g.state == "ALERT"]
    parts = [
        "<h1>Overview</h1>",
        f'<p class="muted">{e(scope.describe())}: {e(period(head.first_ns, head.last_ns))}'
        + " · "
        + f'<a href="{e(scope.link("/records"))}">records</a> · <a href="{e(scope.link("/costs"))}">cost and '
        "coverage</a></p>",
        f'<p id="fresh" class="muted" role="status" aria-live="polite" data-after-row="{int(last_row)}" '
        f'data-poll-ms="{int(poll_seconds) * 1000}" data-scope="{e(scope.query())}"></p>',
    ]
    if head.records == 0 and not head.metrics and not scope.params():
        parts.append(empty_store(endpoint))
    parts += _cards(head, len(firing) if panel.watched else len(head.firing))
    if panel.watched:
        parts += [f'<div class="firing"><b>ALERT</b> {describe(g, panel)}</div>' for g in firing]
    else:
        parts += _firing_banners(head)
    parts.append(alert_panel_html(panel))
    parts += _metrics_and_alerts(
        head, worst, threshold, _figure_blocks(series, marks, head), recent, record_links=True, link=scope.link
    )
    return page(
        "overview",
        "\n".join(p for p in parts if p),
        scope=scope,
        services=services,
        here="/",
        scripts=(PLOTLY, "overview.js", "alerts.js"),
    )
