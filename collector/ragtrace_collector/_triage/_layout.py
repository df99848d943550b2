"""The pages' shared pieces besides the frame (``templates/layout.html``, rendered by ``_templates.render_page``):
the error pages (``error_page``), a claim verdict's class, and the small SVG chart (``sparkline``, drawn by
``templates/chart.html``).

Nothing comes from the network (no fonts, scripts or styles of another site), so the pages work on a machine
without internet; the stylesheet and the scripts are this collector's own files at versioned URLs (``_assets``),
kept by the browser, and no page holds a script of its own (the Content-Security-Policy forbids it). Colours are
paired with words and underline styles (a verdict is never told by colour alone) and meet WCAG AA contrast on
white.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace_collector._triage._scope import Scope
from ragtrace_collector._triage._templates import NAV, Markup, escape, render, render_page
from ragtrace_collector._triage._time import fmt_time

__all__ = ["NAV", "error_page", "fmt_time", "sparkline", "verdict_class"]


def verdict_class(verdict: str) -> str:
    """The CSS class of a claim verdict (``supported``, ``contradicted``, ``unsupported``)."""
    return f"v-{verdict}" if verdict in ("supported", "contradicted", "unsupported") else "v-unsupported"


def error_page(status: int, title: str, message: str, *, scope: Scope | None = None) -> str:
    """The page of an error (a 404, a 400, a 503...): what went wrong and the ways back, in the shared frame."""
    scope = scope or Scope()
    return render_page(
        "error.html",
        title=title,
        scope=scope,
        status=int(status),
        message=message,
        overview=scope.link("/"),
        records=scope.link("/records"),
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
        return render("chart.html", c={"label": label, "circles": []})
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

    ticks = [t0] if t1 == t0 else [t0, (t0 + t1) // 2, t1]

    def anchor(i: int) -> str:
        if len(ticks) == 1:
            return "middle"
        return "start" if i == 0 else "end" if i == len(ticks) - 1 else "middle"

    placed = [(f"{x(t):.1f}", f"{y(v):.1f}", f"{fmt_time(t)}: {shown(v)}") for t, v in points]
    # A point's circle has a radius of 3 px while the points are 9 px apart or more, then a third of their spacing
    # (1 px at least; a week of hours is 3.8 px apart), so the line stays a line of dots, not a band of discs.
    radius = f"{min(3.0, max(1.0, plot_w / max(1, len(points) - 1) / 3)):.2g}"
    chart = {
        "label": label,
        "width": width,
        "height": height,
        "left": left,
        "right": width - right,
        "top": top,
        "bottom": top + plot_h,
        "value_labels": [(y(v), shown(v)) for v in (v0, (v0 + v1) / 2, v1)],
        "time_labels": [(x(t), anchor(i), fmt_time(t)[:16]) for i, t in enumerate(ticks)],
        "level": None if level is None else y(level),
        "marks": [(x(t), text, fmt_time(t)) for t, text in marks],
        "line": " ".join(f"{cx},{cy}" for cx, cy, _ in placed) if len(points) > 1 else "",
        # One element a point, written here rather than by a loop in the template: a week's hourly chart has 169
        # of them and the costs page three charts, where the template's loop was most of the page's rendering.
        "circles": Markup(
            "\n".join(
                f'<circle cx="{cx}" cy="{cy}" r="{radius}" fill="#1f5fbf"><title>{escape(title)}</title></circle>'
                for cx, cy, title in placed
            )
        ),
    }
    return render("chart.html", c=chart)
