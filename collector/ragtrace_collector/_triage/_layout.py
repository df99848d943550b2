"""The triage pages' shared frame: one stylesheet, the navigation, escaping and the small SVG chart.

Everything is inline (no fonts, scripts or styles from the network), so the pages work on a machine
without internet. Colours are paired with words and underline styles (a verdict is never told by colour
alone) and meet WCAG AA contrast on white.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timezone

__all__ = ["e", "fmt_time", "page", "sparkline", "verdict_class"]

_CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1a1a1a; background: #fff; }
header.top { background: #1f2a44; color: #fff; padding: .6rem 1rem; display: flex; gap: 1.2rem; align-items: baseline; }
header.top a { color: #fff; }
header.top b { font-size: 1.1rem; }
main { padding: 1rem; max-width: 1200px; }
a { color: #0645ad; }
a:focus, button:focus, input:focus, select:focus { outline: 3px solid #f0a30a; outline-offset: 1px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f3f4f7; }
tr.row:focus-within { background: #fff6dc; }
.muted { color: #555; }
.chip { display: inline-block; padding: 0 .35rem; margin: 0 .2rem .1rem 0; border-radius: 4px; background: #eef0f4;
        font-size: .85rem; white-space: nowrap; }
.chip.bad { background: #fbd9d9; color: #7a0c0c; }
form.filters { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: end; margin: .5rem 0 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; }
.claim { text-decoration-thickness: 2px; text-underline-offset: 3px; color: inherit; padding: 0 .1rem; }
.v-supported { background: #d9f2e0; text-decoration: underline solid #1b6b34; }
.v-contradicted { background: #fbd9d9; text-decoration: underline wavy #a11212; }
.v-unsupported { background: #fdf0c8; text-decoration: underline dashed #8a5a00; }
.verdict { font-weight: 600; }
.answer { font-size: 1.05rem; padding: .6rem .8rem; border: 1px solid #ddd; border-radius: 6px; }
ol.chunks li { margin: .4rem 0; padding: .4rem .6rem; border: 1px solid #ddd; border-radius: 6px; }
ol.chunks li:target { border: 3px solid #f0a30a; background: #fffaf0; }
.notice { background: #e8f0fe; padding: .3rem .6rem; border-radius: 4px; }
svg.chart { background: #fafbfc; border: 1px solid #ddd; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
kbd { border: 1px solid #bbb; border-radius: 3px; padding: 0 .25rem; font-size: .8rem; }
.waterfall details.span { border-bottom: 1px solid #eee; }
.waterfall summary { display: grid; grid-template-columns: minmax(12rem, 30%) 8rem 1fr 5.5rem; gap: .5rem;
                     align-items: center; cursor: pointer; padding: .15rem 0; }
.waterfall .sname { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.waterfall .skind { font-size: .8rem; color: #555; }
.waterfall .sbar { position: relative; height: .8rem; background: #f3f4f7; }
.waterfall .bar { display: block; height: 100%; background: #3b6fb6; min-width: 2px; }
.waterfall .bar.err { background: #a11212; }
.waterfall b.err { color: #a11212; }
.waterfall .sdur { text-align: right; font-variant-numeric: tabular-nums; }
.waterfall details.focus > summary { background: #fff6dc; }
table.attrs th { width: 30%; font-weight: normal; color: #555; background: none; }
"""


def e(value: object) -> str:
    """HTML-escaped text of ``value`` (None is empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def fmt_time(time_ns: int | None) -> str:
    """``2026-11-24 10:03:04Z`` for ns since the epoch."""
    if time_ns is None:
        return ""
    return datetime.fromtimestamp(time_ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def verdict_class(verdict: str) -> str:
    """The CSS class of a claim verdict (``supported``, ``contradicted``, ``unsupported``)."""
    return f"v-{verdict}" if verdict in ("supported", "contradicted", "unsupported") else "v-unsupported"


def page(title: str, body: str, *, script: str = "") -> str:
    """A whole page: the frame around ``body``, with ``script`` inline at the end."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} - ragtrace</title><style>{_CSS}</style></head><body>"
        '<header class="top"><b>ragtrace</b><nav aria-label="pages"><a href="/">overview</a> · '
        '<a href="/records">records</a> · <a href="/review">review</a> · <a href="/agreement">agreement</a> · '
        '<a href="/costs">cost and coverage</a></nav></header>'
        f'<main id="main">{body}</main>' + (f"<script>{script}</script>" if script else "") + "</body></html>"
    )


def sparkline(
    points: Sequence[tuple[int, float]],
    *,
    width: int = 720,
    height: int = 180,
    level: float | None = None,
    label: str,
    unit: str = "",
    marks: Sequence[tuple[int, str]] = (),
) -> str:
    """An inline SVG line chart of ``(time_ns, value)`` points with its axes: values at the bottom, middle and top
    of the value axis (``unit`` after each, or a ``$`` before), the first, middle and last times under the time
    axis, each point's time and value on hover, a dashed line at ``level`` when given, and a labelled vertical line
    at each ``(time_ns, text)`` of ``marks`` (when an alert fired and resolved). ``label`` names it for screen
    readers."""
    if not points:
        return f'<p class="muted">{e(label)}: no data</p>'
    left, right, top, bottom = 64, 12, 10, 26  # room for the value labels and the time labels
    times = [t for t, _ in points] + [t for t, _ in marks]
    values = [v for _, v in points] + ([level] if level is not None else [])
    t0, t1 = min(times), max(times)
    v0, v1 = min(0.0, min(values)), max(max(values), 0.0)
    if v1 == v0:
        v1 = v0 + 1.0
    span_t, span_v = (t1 - t0) or 1, v1 - v0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(t: int) -> float:
        return left + plot_w * ((t - t0) / span_t if t1 > t0 else 0.5)

    def y(v: float) -> float:
        return top + plot_h - plot_h * (v - v0) / span_v

    def shown(v: float) -> str:
        return f"${v:.4g}" if unit == "$" else f"{v:.3g}{unit}"

    parts = [
        f'<svg class="chart" role="img" aria-label="{e(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><title>{e(label)}</title>',
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#888"/>',
        f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#888"/>',
    ]
    for v in (v0, (v0 + v1) / 2, v1):
        parts.append(
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" font-size="11" fill="#444">{e(shown(v))}</text>'
            f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e5ea"/>'
        )
    ticks = [t0] if t1 == t0 else [t0, (t0 + t1) // 2, t1]
    for i, t in enumerate(ticks):
        anchor = "start" if i == 0 and len(ticks) > 1 else "end" if i == len(ticks) - 1 and len(ticks) > 1 else "middle"
        parts.append(
            f'<text x="{x(t):.1f}" y="{height - 8}" text-anchor="{anchor}" font-size="11" fill="#444">'
            f"{e(fmt_time(t)[:16])}</text>"
        )
    if level is not None:
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(level):.1f}" y2="{y(level):.1f}" stroke="#a11212" '
            'stroke-dasharray="6 4"/>'
        )
    for t, text in marks:
        parts.append(
            f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#8a5a00" '
            f'stroke-dasharray="3 3"><title>{e(text)} {e(fmt_time(t))}</title></line>'
            f'<text x="{x(t) + 3:.1f}" y="{top + 11}" font-size="11" fill="#8a5a00">{e(text)}</text>'
        )
    if len(points) > 1:
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
        parts.append(f'<polyline fill="none" stroke="#1f5fbf" stroke-width="2" points="{line}"/>')
    parts += [
        f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" fill="#1f5fbf"><title>{e(fmt_time(t))}: {e(shown(v))}'
        "</title></circle>"
        for t, v in points
    ]
    parts.append("</svg>")
    return "".join(parts)
