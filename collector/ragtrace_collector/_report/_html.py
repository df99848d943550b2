"""The report as a self-contained HTML page: plotly.js inlined once, so it renders offline with no CDN."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from ragtrace_collector._drift import metric_direction
from ragtrace_collector._report._format import chunk_label, cut, iso, num, scope
from ragtrace_collector._store.summaries import Problem, Summary


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
    import plotly.graph_objects as go

    def when(ns: int) -> datetime:
        return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)

    config = {"displaylogo": False, "responsive": True}
    divs = []
    for metric, points in series.items():
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(
                x=[when(t) for t, _, _ in points],
                y=[mean for _, mean, _ in points],
                customdata=[count for _, _, count in points],
                mode="lines+markers",
                name=_text(f"mean {metric}"),
                hovertemplate="%{x}<br>mean %{y:.3f} over %{customdata} records<extra></extra>",
            )
        )
        fired = [m for m in marks if m["metric"] == metric]
        for state, symbol, color in (("ALERT", "triangle-down", "#d62728"), ("OK", "circle-open", "#2ca02c")):
            these = [m for m in fired if m["state"] == state]
            if these:
                fig.add_trace(
                    go.Scatter(
                        x=[when(m["time_ns"]) for m in these],
                        y=[1.05] * len(these),
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
            yaxis={"range": [-0.05, 1.12]},
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        )
        divs.append(fig.to_html(full_html=False, include_plotlyjs=False, config=config, default_height="320px"))
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
        divs.append(fig.to_html(full_html=False, include_plotlyjs=False, config=config, default_height="320px"))
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


_FRESH_SCRIPT = """
(function () {
  const note = document.getElementById('fresh');
  async function poll() {
    try {
      const reply = await fetch('/api/records?limit=500&after_row=' + note.dataset.afterRow);
      if (reply.ok) {
        const data = await reply.json();
        const n = data.records.length;
        if (n) { note.innerHTML = (data.more ? '500+' : n) + ' new record(s) since this page loaded: ' +
                 '<a href="">reload</a> or <a href="/records">see them in the records list</a>'; }
      }
    } catch (err) { /* the next poll tries again */ }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
})();
"""


def _fresh(last_row: int, refresh_seconds: int | None) -> str:
    """The live page's notice of new records (polled, never a reload that would lose the reader's place):
    the records the store received after row ``last_row``, the newest when the page was read."""
    script = _FRESH_SCRIPT.replace("POLL_MS", str(int(refresh_seconds or 60) * 1000))
    return (
        f'<p id="fresh" class="muted" role="status" aria-live="polite" data-after-row="{int(last_row)}"></p>'
        f"<script>{script}</script>"
    )


def html_page(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    series: dict[str, list[tuple[int, float, int]]],
    marks: list[dict[str, Any]],
    recent: list[dict[str, Any]],
    refresh_seconds: int | None,
    alert_panel: str = "",
    record_links: bool = False,
    last_row: int = 0,
) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>ragtrace report</title>',
        # The live page does not reload itself (that lost the reader's place and closed what was open): it
        # says when new records have come, and the reader reloads. A written report may still refresh.
        f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">' if refresh_seconds and not record_links else "",
        f"<style>{_CSS}</style>",
        f"<script>{_plotly_js()}</script>",
        "</head><body>",
        "<h1>ragtrace</h1>",
        f'<p class="muted">{e(iso(head.first_ns))} to {e(iso(head.last_ns))}</p>',
        _fresh(last_row, refresh_seconds) if record_links else "",
        '<div class="cards">',
        f'<div class="card">records<b id="records">{head.records}</b></div>',
        f'<div class="card">scored<b id="scored">{head.scored}</b></div>',
        f'<div class="card">overall mean<b>{num(head.overall_mean)}</b></div>',
        f'<div class="card">alerts firing<b id="firing">{len(head.firing)}</b></div>',
        "</div>",
    ]
    for alert in head.firing:
        where = ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None)
        parts.append(
            f'<div class="firing"><b>{e(alert["rule"])}</b> {e(alert["metric"])} {e(where)}: '
            f"{e(alert['message'])}</div>"
        )
    if alert_panel:
        parts.append(alert_panel)
    parts += ["<h2>Metrics</h2>", "<table><tr><th>metric</th><th>mean</th><th>scored</th><th>better</th></tr>"]
    parts += [
        f"<tr><td>{e(m.metric)}</td><td>{m.mean:.3f}</td><td>{m.count}</td><td>{m.direction}</td></tr>"
        for m in head.metrics
    ]
    parts.append("</table>")
    figures = _figures(series, marks, head)
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
            + (f' · <a href="/records/{e(p.span_id)}">open the record and its claims</a>' if record_links else "")
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
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
