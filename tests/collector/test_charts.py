"""The pages' small SVG chart (``_layout.sparkline``): one circle a point with its time and value on hover, read as
a line however many points it holds."""

from __future__ import annotations

import itertools
import re

from ragtrace_collector._triage._layout import sparkline
from ragtrace_collector._triage._time import fmt_time

NS = 1_000_000_000
HOUR = 3600 * NS
NOW = 1_800_000_000 * NS


def _circles(chart: str) -> list[tuple[float, float, str]]:
    """Each circle's x, radius and hover text."""
    found = re.findall(r'<circle cx="([\d.]+)" cy="[\d.]+" r="([\d.]+)" fill="#1f5fbf"><title>([^<]*)</title>', chart)
    return [(float(x), float(r), title) for x, r, title in found]


def test_each_point_says_its_time_and_value_on_hover() -> None:
    points = [(NOW + i * HOUR, float(i)) for i in range(4)]
    circles = _circles(sparkline(points, label="calls", unit=" s"))
    assert [title for _, _, title in circles] == [f"{fmt_time(t)}: {v:.3g} s" for t, v in points]
    assert all(r == 3 for _, r, _ in circles)  # few points: full size


def test_a_week_of_hours_is_a_line_of_dots_not_a_band_of_discs() -> None:
    points = [(NOW + i * HOUR, float(i % 5)) for i in range(169)]
    circles = _circles(sparkline(points, label="calls"))
    assert len(circles) == 169
    xs = [x for x, _, _ in circles]
    closest = min(b - a for a, b in itertools.pairwise(xs))
    assert all(2 * r <= closest + 0.1 for _, r, _ in circles)  # neighbours never overlap (0.1: the rounding)
    assert all(r >= 1 for _, r, _ in circles)  # still a target for the pointer


def test_a_hover_text_is_escaped() -> None:
    chart = sparkline([(NOW, 1.0), (NOW + HOUR, 2.0)], label="calls", unit=" <b>s</b>")
    assert "<b>" not in chart and "&lt;b&gt;s&lt;/b&gt;" in chart


def test_a_time_is_the_second_it_falls_in() -> None:
    assert fmt_time(NOW) == "2027-01-15 08:00:00 UTC"
    assert fmt_time(NOW + NS - 1) == "2027-01-15 08:00:00 UTC"  # not rounded up into the next second
    assert fmt_time(None) == ""
