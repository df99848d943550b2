"""The triage path in a real headless Chromium (over the DevTools protocol), served by a real uvicorn on
127.0.0.1 over a real SQLite store: a person opens the alert, clicks a record that made it fire, and
follows a contradicted claim to the chunk that contradicts it; on the records list the keyboard moves
between records. Screenshots of each step are written to the test's directory (``alert.png``,
``record.png``, ``claim.png``) for a person to look at; their colours are checked here.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from ragtrace_collector._report import page_routes
from starlette.applications import Starlette

from tests.collector._devtools import CHROMIUM, DevTools, browser, devtools, served
from tests.collector._triage_seed import seed_triage

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`")
__all__ = ["browser"]  # the fixture, imported for pytest


@pytest.fixture
def site(open_store: Callable[[], Any]) -> Iterator[str]:
    """The triage pages over the seeded store, on either engine (``open_store``'s parameter)."""
    store = open_store()
    seed_triage(store)
    with served(Starlette(routes=page_routes(store))) as url:
        yield url


def _shot(tools: DevTools, path: Path) -> Any:
    shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
    data = base64.b64decode(shot["data"])
    path.write_bytes(data)
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def _pixels_of(image: Any, rgb: tuple[int, int, int]) -> int:
    return int((np.abs(image - np.array(rgb)).sum(axis=2) < 12).sum())


@pytest.mark.slow
def test_from_the_alert_to_the_record_to_the_claims_chunk(site: str, browser: Any, tmp_path: Path) -> None:
    with devtools(browser, f"{site}/alert?rule=hallucination-spike&service=shop") as tools:
        assert tools.run("document.querySelector('h1').innerText") == (
            "Alert: hallucination-spike (hallucination, service=shop)"
        )
        assert tools.run("document.querySelectorAll('svg.chart polyline').length") == 1
        records = tools.run("document.querySelectorAll('#alert-records tr.row').length")
        assert records > 5
        alert = _shot(tools, tmp_path / "alert.png")
        assert _pixels_of(alert, (0x1F, 0x5F, 0xBF)) > 100  # the statistic's blue line

        # The first record that made it fire (the worst first): open it.
        href = tools.run("document.querySelector('#alert-records a.open').getAttribute('href')")
        tools.run("document.querySelector('#alert-records a.open').click()")
        tools.wait_for("Page.loadEventFired")
        assert tools.run("location.pathname") == href.split("?")[0]
        verdicts = tools.run("Array.from(document.querySelectorAll('#answer a.claim')).map(a => a.className)")
        assert verdicts == ["claim v-supported", "claim v-contradicted", "claim v-unsupported"]
        record = _shot(tools, tmp_path / "record.png")
        assert _pixels_of(record, (0xFB, 0xD9, 0xD9)) > 200  # the contradicted claim's red background
        assert _pixels_of(record, (0xD9, 0xF2, 0xE0)) > 200  # the supported claim's green

        # Follow the contradicted claim to the chunk that contradicts it.
        tools.run("document.querySelector('#answer a.v-contradicted').click()")
        assert tools.run("location.hash") == "#chunk-0"
        assert tools.run("document.querySelector(':target').innerText").startswith("chunk 1")
        claim = _shot(tools, tmp_path / "claim.png")
        assert _pixels_of(claim, (0xF0, 0xA3, 0x0A)) > 100  # the targeted chunk's amber frame


def test_the_records_list_answers_the_keyboard(site: str, browser: Any) -> None:
    with devtools(browser, f"{site}/records?service=shop&score=hallucination%3E0.5") as tools:
        first = tools.run("document.querySelector('tr.row a.open').getAttribute('href')")
        for key in ("j", "j", "k"):
            tools.call("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
            tools.call("Input.dispatchKeyEvent", type="keyUp", key=key)
        assert tools.run("document.activeElement.getAttribute('href')") == first
        tools.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13)
        tools.wait_for("Page.loadEventFired")
        assert tools.run("location.pathname + location.search") == first
        # The way back keeps the filters.
        assert tools.run("document.querySelector('main a').getAttribute('href')") == (
            "/records?service=shop&score=hallucination%3E0.5"
        )
