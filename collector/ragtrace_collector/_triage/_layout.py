"""Every page's shared frame (``page``): the stylesheet, the navigation between the pages and the scope picker (a
time range and a service, kept in the URL: ``_scope``), each link carrying the scope; the error pages
(``error_page``); escaping; and the small SVG chart.

Nothing comes from the network (no fonts, scripts or styles of another site), so the pages work on a machine
without internet; the stylesheet and the scripts are this collector's own files at versioned URLs (``_assets``),
kept by the browser, and no page holds a script of its own (the Content-Security-Policy forbids it). Colours are
paired with words and underline styles (a verdict is never told by colour alone) and meet WCAG AA contrast on
white.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timezone

from ragtrace_collector._triage._assets import asset_url
from ragtrace_collector._triage._scope import RANGES, Scope

__all__ = ["NAV", "e", "error_page", "fmt_time", "page", "sparkline", "verdict_class"]

NAV = (
    ("/", "overview"),
    ("/records", "records"),
    ("/review", "review"),
    ("/agreement", "agreement"),
    ("/costs", "cost and coverage"),
)
"""The pages the navigation links, each with the scope of the page it is on."""


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


def page(
    title: str,
    body: str,
    *,
    scope: Scope | None = None,
    services: Sequence[str] = (),
    here: str | None = None,
    scripts: Sequence[str] = (),
) -> str:
    """A whole page: the frame around ``body``. ``scope``: the page's time range and service, which every link of
    the navigation carries and the picker shows (``services``: its choices); ``here``: the path of a page of the
    navigation (marked as the current one, and where the picker goes); ``scripts``: the static scripts it runs
    (``_assets`` names, loaded after the page is read, in order)."""
    scope = scope if scope is not None else Scope()
    current = ' aria-current="page"'
    links = " · ".join(
        f'<a href="{e(scope.link(path))}"{current if path == here else ""}>{e(name)}</a>' for path, name in NAV
    )
    loaded = "".join(f'<script src="{asset_url(name)}" defer></script>' for name in ("pages.js", *scripts))
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{e(title)} - ragtrace</title><link rel="stylesheet" href="{asset_url("pages.css")}">{loaded}'
        '</head><body><header class="top"><b><a href="/">ragtrace</a></b>'
        f'<nav aria-label="pages">{links}</nav>{_picker(scope, services, here)}</header>'
        f'<main id="main">{body}</main></body></html>'
    )


def _picker(scope: Scope, services: Sequence[str], here: str | None) -> str:
    """The scope picker: a time range and a service, applied to the page it is on (``here``); none on a page
    outside the navigation (a record, an alert, an error), whose links carry the scope it came with."""
    if here is None:
        return ""
    fixed = scope.range is None and (scope.since_ns is not None or scope.until_ns is not None)
    # A period the URL fixed (since=, until=) is the first choice, kept by hidden fields; else all time.
    first = f"{fmt_time(scope.since_ns) or 'start'} to {fmt_time(scope.until_ns) or 'now'}" if fixed else "all time"
    ranges = [("", first), *((key, f"last {key}") for key in RANGES)]
    range_options = "".join(
        f'<option value="{e(value)}"{" selected" if value == (scope.range or "") else ""}>{e(label)}</option>'
        for value, label in ranges
    )
    names = list(services)
    if scope.service and scope.service not in names:
        names.insert(0, scope.service)
    service_options = '<option value="">every service</option>' + "".join(
        f'<option value="{e(name)}"{" selected" if name == scope.service else ""}>{e(name)}</option>' for name in names
    )
    kept = "".join(
        f'<input type="hidden" name="{key}" value="{value}">'
        for key, value in (("since", scope.since_ns), ("until", scope.until_ns))
        if value is not None and fixed
    )
    return (
        f'<form class="scope" method="get" action="{e(here)}" aria-label="time range and service">{kept}'
        f'<label>time <select name="range">{range_options}</select></label>'
        f'<label>service <select name="service">{service_options}</select></label>'
        '<button type="submit">apply</button></form>'
    )


def error_page(status: int, title: str, message: str, *, scope: Scope | None = None) -> str:
    """The page of an error (a 404, a 400, a 503...): what went wrong and the ways back, in the shared frame."""
    back = (scope or Scope()).link("/")
    return page(
        title,
        f'<section class="error-page"><h1>{e(title)}</h1><p>{e(message)}</p>'
        f'<p><a href="{e(back)}">back to the overview</a> · <a href="{e((scope or Scope()).link("/records"))}">'
        f"the records</a> · HTTP {int(status)}</p></section>",
        scope=scope,
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
    bounds: tuple[float, float] | None = None,
) -> str:
    """An inline SVG line chart of ``(time_ns, value)`` points with its axes: values at the bottom, middle and top
    of the value axis (``unit`` after each, or a ``$`` before), the first, middle and last times under the time
    axis, each point's time and value on hover, a dashed line at ``level`` when given, and a labelled vertical line
    at each ``(time_ns, text)`` of ``marks`` (when an alert fired and resolved). ``label`` names it for screen
    readers. ``bounds``: the value axis, fixed (a score's documented range): a value outside it is drawn at its edge,
    its hover saying the value, and the label says so; without, the axis spans the values and 0."""
    if not points:
        return f'<p class="muted">{e(label)}: no data</p>'
    left, right, top, bottom = 64, 12, 10, 26  # room for the value labels and the time labels
    times = [t for t, _ in points] + [t for t, _ in marks]
    values = [v for _, v in points] + ([level] if level is not None else [])
    t0, t1 = min(times), max(times)
    if bounds is not None:
        v0, v1 = bounds
        if any(not v0 <= v <= v1 for v in values):
            label += f" (values outside [{v0:g}, {v1:g}] drawn at its edge)"
    else:
        v0, v1 = min(0.0, min(values)), max(max(values), 0.0)
    if v1 == v0:
        v1 = v0 + 1.0
    span_t, span_v = (t1 - t0) or 1, v1 - v0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(t: int) -> float:
        return left + plot_w * ((t - t0) / span_t if t1 > t0 else 0.5)

    def y(v: float) -> float:
        v = min(v1, max(v0, v))  # only a fixed axis has values beyond it
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
