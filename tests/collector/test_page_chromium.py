"""The live page in a real headless Chromium, served by a real uvicorn on 127.0.0.1 over a real SQLite store.

Chromium is Debian's package (``make system-deps`` installs it). The page must load offline (plotly.js
is the collector's own cached file), draw its charts (plotly's ``main-svg`` elements in the rendered DOM) and a
screenshot must not be blank.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes
from ragtrace_collector._store.schema import SCORE_COLUMNS
from starlette.applications import Starlette

from tests.collector._devtools import served
from tests.collector._stores import whole_row
from tests.collector._triage_seed import insert_alerts
from tests.collector.test_report import seed

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
HOUR = 3600 * NS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`")


def _history(store: Any) -> None:
    """Two days of hourly-ish records with a hallucination spike and its alert."""
    rows: list[dict[str, Any]] = []
    for i in range(240):
        time_ns = T0 + i * (HOUR // 5)
        spike = 150 <= i < 180
        for metric, value in (
            ("faithfulness", 0.55 if spike else 0.85 + 0.1 * ((i * 7) % 3) / 2),
            ("hallucination", 0.8 if spike else (0.9 if i % 20 == 0 else 0.2)),
        ):
            rows.append(
                {
                    "span_id": f"{i:016x}",
                    "metric": metric,
                    "value": value,
                    "trace_id": f"{i:032x}",
                    "service": "shop",
                    "route": "/ask",
                    "time_ns": time_ns,
                    "source": "app",
                }
            )
    store.write(Batch(scores=[whole_row(r, SCORE_COLUMNS) for r in rows]))
    insert_alerts(
        store,
        [
            {"time_ns": T0 + 155 * (HOUR // 5), "rule": "hallucination-spike", "kind": "spike",
             "metric": "hallucination", "service": "shop", "state": "ALERT", "previous_state": "OK",
             "value": 9.2, "threshold": 8.0, "message": "bad rate 100% vs baseline 5%", "sinks": "[]"},
            {"time_ns": T0 + 200 * (HOUR // 5), "rule": "hallucination-spike", "kind": "spike",
             "metric": "hallucination", "service": "shop", "state": "OK", "previous_state": "ALERT",
             "value": 0.0, "threshold": 8.0, "message": "back to baseline", "sinks": "[]"},
        ],
    )  # fmt: skip


@pytest.fixture
def page_url(open_store: Callable[[], Any]) -> Iterator[str]:
    """The live page over two days of history, on either engine (``open_store``'s parameter)."""
    store = open_store()
    seed(store, start=T0 + 48 * HOUR)
    _history(store)
    with served(Starlette(routes=page_routes(store))) as url:
        yield f"{url}/"


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        # Let the page's scripts run to completion before dumping or shooting.
        "--virtual-time-budget=15000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, timeout=180, check=False)


@pytest.mark.slow
def test_the_live_page_renders_its_charts_in_chromium(page_url: str, tmp_path: Path) -> None:
    dumped = _chromium(tmp_path, "--dump-dom", page_url)
    assert dumped.returncode == 0, dumped.stderr.decode(errors="replace")[-2000:]
    dom = dumped.stdout.decode("utf-8", errors="replace")
    assert "<h1>Overview</h1>" in dom
    # plotly drew every chart: one main-svg per chart (plotly adds a second layer per figure).
    charts = dom.count('class="plotly-graph-div')
    assert charts == 4  # faithfulness, hallucination, context_relevance, decision coverage
    assert dom.count('class="main-svg"') >= charts
    assert "hallucination over time (lower is better)" in dom
    assert 'class="scatterlayer' in dom and 'class="barlayer' in dom
    assert "Who &lt;b&gt;painted&lt;/b&gt; the Mona Lisa?" in dom

    shot = tmp_path / "page.png"
    taken = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1800", page_url)
    assert taken.returncode == 0 and shot.exists(), taken.stderr.decode(errors="replace")[-2000:]
    pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"), dtype=np.int16)
    assert pixels.shape[:2] == (1800, 1280)
    not_white = np.any(pixels < 235, axis=2)
    assert not_white.mean() > 0.02, "the screenshot is (nearly) blank"
    # Colour, not just text: plotly's blue line (#636efa) or the red alert marker shows somewhere.
    blue = (np.abs(pixels - np.array([99, 110, 250])).sum(axis=2) < 60).sum()
    assert blue > 200
