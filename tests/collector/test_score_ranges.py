"""Scores keep their documented range on the pages (issue 25): each chart's value axis is its metric's range
(``ragtrace.metrics.score_range``: [0, 1], and [-1, 1] for ``answer_relevancy_embedding``, a mean cosine the contract
reports unclipped), a negative cosine is drawn where it is, and a value outside its range (a sender's bug: the store
keeps what came) is drawn at the range's edge with its real value in the hover and a word saying so."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes
from ragtrace_collector._store.schema import SCORE_COLUMNS
from ragtrace_collector._triage._layout import sparkline
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ragtrace.metrics import score_range
from tests.collector._stores import whole_row

NS = 1_000_000_000
NOW = 1_800_000_000 * NS


def _score(i: int, metric: str, value: float) -> dict[str, Any]:
    row = {"span_id": f"{i:016x}", "metric": metric, "value": value, "service": "shop", "time_ns": NOW - i * NS}
    return whole_row(row, SCORE_COLUMNS)


def _figures(page: str) -> dict[str, dict[str, Any]]:
    """The overview's charts by title: the JSON figures ``static/overview.js`` draws."""
    blocks = re.findall(r'<script type="application/json" class="figure" data-for="chart-\d+">(.*?)</script>', page)
    figures = [json.loads(b) for b in blocks]
    return {f["layout"]["title"]["text"]: f for f in figures if "title" in f["layout"]}


def _value_labels(chart: str) -> list[str]:
    """The value axis's labels, bottom to top (the time labels are under the axis, not at x=58)."""
    return re.findall(r'<text x="58" y="[\d.]+" text-anchor="end" font-size="11" fill="#444">([^<]+)</text>', chart)


def test_the_documented_ranges() -> None:
    assert score_range("answer_relevancy_embedding") == (-1.0, 1.0)
    assert score_range("faithfulness") == score_range("hallucination") == score_range("a_geval_name") == (0.0, 1.0)


def test_the_overview_draws_each_metric_on_its_range(open_store: Callable[[], Any]) -> None:
    store = open_store()
    rows = [_score(i, "answer_relevancy_embedding", -0.4) for i in range(3)]
    rows += [_score(10, "faithfulness", 1.7)]  # one bucket apart from the others: the charts' buckets are ~1 s here
    rows += [_score(i, "faithfulness", 0.8) for i in range(100, 103)]
    store.write(Batch(scores=rows))
    with TestClient(Starlette(routes=page_routes(store))) as client:
        figures = _figures(client.get("/?range=").text)
    cosine = figures["answer_relevancy_embedding over time (higher is better)"]
    (line,) = [t for t in cosine["data"] if t["mode"] == "lines+markers"]
    assert line["y"] and all(abs(y + 0.4) < 1e-9 for y in line["y"])  # drawn where it is, not at 0
    low, high = cosine["layout"]["yaxis"]["range"]
    assert low < -1.0 and high > 1.0  # the whole of [-1, 1], not [0, 1] with the line under the axis
    faith = figures["faithfulness over time (higher is better)"]
    (line,) = [t for t in faith["data"] if t["mode"] == "lines+markers"]
    low, high = faith["layout"]["yaxis"]["range"]
    assert -0.1 < low < 0.0 and 1.0 < high < 1.2
    assert max(line["y"]) == 1.0 and sorted(c[1] for c in line["customdata"])[-1] == 1.7
    (outside,) = [t for t in line["text"] if t]
    assert outside == " (outside [0, 1]: drawn at its edge)"
    assert "%{customdata[1]:.3f}" in line["hovertemplate"] and "%{text}" in line["hovertemplate"]


def test_an_alert_chart_keeps_the_metric_range() -> None:
    points = [(NOW, -0.5), (NOW + NS, 0.2)]
    chart = sparkline(points, label="mean answer_relevancy_embedding", bounds=(-1.0, 1.0))
    assert _value_labels(chart) == ["-1", "0", "1"]
    assert "<title>mean answer_relevancy_embedding</title>" in chart  # nothing outside: no word about it
    # A mean of 1.7 on [0, 1]: drawn at the top edge (y=10), its hover saying 1.7, the label saying why.
    chart = sparkline([(NOW, 0.5), (NOW + NS, 1.7)], label="mean faithfulness", bounds=(0.0, 1.0))
    assert re.search(r'<circle cx="[\d.]+" cy="10.0" r="3" fill="#1f5fbf"><title>[^<]*: 1.7</title>', chart)
    assert "(values outside [0, 1] drawn at its edge)" in chart
    # Without bounds (dollars, tokens) the axis still spans the values.
    chart = sparkline([(NOW, 3.0), (NOW + NS, 7.0)], label="dollars", unit="$")
    assert _value_labels(chart) == ["$0", "$3.5", "$7"]
