"""The report as HTML: a self-contained file (``html_page``, ``templates/report_file.html``: plotly.js inlined once,
so it renders offline with no CDN and no collector), and the live overview (``overview_page``,
``templates/overview.html``: in the pages' shared frame, plotly.js loaded from the collector's own cached URL and
each chart's figure in a JSON data block that ``static/overview.js`` draws, so the page holds no script of its
own). Both are templates with autoescape (the pages' ``_triage._templates``); their shared parts are
``templates/report_parts.html``."""

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
from ragtrace_collector._triage._scope import Scope
from ragtrace_collector._triage._templates import Markup, render, render_page


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


def _helpers() -> dict[str, Any]:
    """What the report's templates (``report_parts.html``) call to write a value."""
    return {
        "num": num,
        "iso": iso,
        "cut": cut,
        "chunk_label": lambda chunk: chunk_label(chunk, score=True),
        "scope_of": scope,
        "where": lambda alert: ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None),
    }


def html_page(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    series: dict[str, list[tuple[int, float, int]]],
    marks: list[dict[str, Any]],
    recent: list[dict[str, Any]],
    refresh_seconds: int | None,
) -> str:
    """The report as one self-contained file (``ragtrace-collector report``; ``templates/report_file.html``):
    plotly.js inlined, no collector behind it; ``refresh_seconds`` makes it reload itself."""
    return render(
        "report_file.html",
        head=head,
        worst=worst,
        threshold=threshold,
        # plotly's own HTML and script: made by plotly from values it escapes (``_text``), not by a span.
        figures=[Markup(f) for f in _figures(series, marks, head)],
        plotly=Markup(_plotly_js()),
        css=Markup(_CSS),
        recent=recent,
        refresh_seconds=int(refresh_seconds) if refresh_seconds else None,
        period=period(head.first_ns, head.last_ns),
        **_helpers(),
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
    last_row: str,
    poll_seconds: int,
    scope: Scope,
    services: Sequence[str],
    endpoint: str,
) -> str:
    """The live overview (``/``; ``templates/overview.html``) in the pages' shared frame: the counts, the alert
    banners and panel (one reading of the alert groups, so they agree), the charts, the transitions and the worst
    records of ``scope``; an empty store says where to send spans (``endpoint``: this collector's base URL). It
    polls for new records by arrival order (``poll_seconds``) and never reloads itself."""
    firing = [g for g in panel.groups if g.state == "ALERT"]
    base = endpoint.rstrip("/")
    return render_page(
        "overview.html",
        title="overview",
        scope=scope,
        services=services,
        here="/",
        scripts=(PLOTLY, "overview.js", "alerts.js"),
        head=head,
        worst=worst,
        threshold=threshold,
        figures=[Markup(f) for f in _figure_blocks(series, marks, head)],  # JSON blocks, "<" written as \u003c
        recent=recent,
        period=period(head.first_ns, head.last_ns),
        last_row=last_row,
        poll_ms=int(poll_seconds) * 1000,
        empty=head.records == 0 and not head.metrics and not scope.params(),
        base=base,
        host=base.split("://", 1)[-1].rsplit(":", 1)[0],
        firing=len(firing) if panel.watched else len(head.firing),
        # The groups' words and the panel: the alert controls' templates' HTML. Without a watcher's groups, the
        # alerts table's firing rows are the banners.
        banners=[Markup(describe(g, panel)) for g in firing] if panel.watched else None,
        panel=Markup(alert_panel_html(panel)),
        **_helpers(),
    )
