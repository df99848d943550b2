"""Clickjacking, as a security review did it (issue 25): another site frames the overview invisibly over a
button of its own, and the person's click lands on the collector's Silence button. In a real headless Chromium:
the collector's pages refuse to be framed (``X-Frame-Options: DENY``, CSP ``frame-ancestors 'none'``), so the
click reaches nothing and no silence is made. (Were a frame to load, its script would still lack the CSRF cookie,
which a browser keeps from a frame on another site: two defences, each enough. Before both, the click silenced.)

Chromium is Debian's package (``make system-deps``); the test skips without it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.collector._devtools import CHROMIUM, browser, devtools, served
from tests.collector._spans import start_collector
from tests.collector.test_alert_panel_chromium import NS, RULES, _send_spike

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`")
__all__ = ["browser"]  # the fixture, imported for pytest


@pytest.mark.slow
def test_an_invisible_frame_cannot_take_a_click_on_the_silence_button(
    tmp_path: Path, browser: subprocess.Popen[bytes]
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    # No token, on loopback: the set-up the review attacked (the person's browser is the way in).
    collector = start_collector(tmp_path / "c.db", watch=True, page=True, rules=rules)
    port = collector.http_port or 0
    try:
        now = time.time_ns() - 60 * NS
        _send_spike(port, now)
        collector.watcher.evaluate_once(now)
        overview = f"http://127.0.0.1:{port}/"
        with devtools(browser, overview) as tools:
            box = tools.run(
                "(() => { const r = document.querySelector('button[data-api=\"/api/silences\"]')"
                ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2, scrollY]; })()"
            )
            assert box is not None
            x, y, _ = box

            # Another site (localhost is another site than 127.0.0.1): the overview framed, invisible, on top.
            attack = (
                "<!doctype html><body style='margin:0'><button style='position:absolute;left:0;top:0'>Win</button>"
                f"<iframe id=f src='{overview}' style='opacity:0;position:absolute;left:0;top:0;"
                "width:1280px;height:4000px;border:0'></iframe></body>"
            )

            async def page(request: object) -> HTMLResponse:
                return HTMLResponse(attack)

            with served(Starlette(routes=[Route("/", page)])) as evil:
                tools.call("Page.navigate", url=evil.replace("127.0.0.1", "localhost") + "/")
                tools.wait_for("Page.loadEventFired")
                for kind in ("mousePressed", "mouseReleased"):
                    tools.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
                # The click's request, had there been one, is made before the page's next load: wait for one.
                tools.call("Page.navigate", url=evil.replace("127.0.0.1", "localhost") + "/")
                tools.wait_for("Page.loadEventFired")
        assert httpx.get(f"{overview}api/alerts", timeout=60).json()["silences"] == []
    finally:
        collector.stop()
