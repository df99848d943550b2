"""The live page's alert panel in a real headless Chromium (driven over the DevTools protocol): a person clicks
Acknowledge, then Silence (4h), then End silence, on a real collector whose watcher raised a spike alert from
real OTLP; each click lands in the store through the alert API, and the page reloads showing it.

Chromium is Debian's package (``make system-deps``); the test skips without it. A screenshot of the panel is
written to the test's directory (``alert-panel.png``) for a person to look at.
"""

from __future__ import annotations

import base64
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ragtrace_collector._server import Collector

from tests.collector._devtools import CHROMIUM, browser, devtools
from tests.collector._spans import SpanFactory, otlp_bytes, start_collector

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`")
__all__ = ["browser"]  # the fixture, imported for pytest
NS = 1_000_000_000
HOUR = 3600 * NS
RULES = """
interval = "1h"   # the test evaluates by hand

[[sinks]]
type = "log"

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
"""


def _send_spike(port: int, now: int) -> None:
    shop = SpanFactory(service="shop")
    for i in range(400):  # a day at 5 %, then the last hour at 25 %
        shop.rag(scores={"hallucination": 0.9 if i % 20 == 0 else 0.2}, decision="evaluated",
                 end_ns=now - 25 * HOUR + i * 200 * NS, events=False)  # fmt: skip
    for i in range(80):
        shop.rag(scores={"hallucination": 0.9 if i % 4 == 0 else 0.2}, decision="evaluated",
                 end_ns=now - HOUR + (i + 1) * 40 * NS, events=False)  # fmt: skip
    reply = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=otlp_bytes(shop.all()),
                       headers={"Content-Type": "application/x-protobuf", "Authorization": "Bearer s3cret"},
                       timeout=60)  # fmt: skip
    assert reply.status_code == 200


@pytest.fixture
def spiked(tmp_path: Path, store_target: str) -> Iterator[Collector]:
    """A real collector (watcher, pages, token ``s3cret``) whose watcher raised the spike alert from real OTLP."""
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    collector = start_collector(store_target, watch=True, page=True, rules=rules, token="s3cret")
    try:
        now = time.time_ns() - 60 * NS  # silences run on the wall clock
        _send_spike(collector.http_port or 0, now)
        collector.watcher.evaluate_once(now)
        yield collector
    finally:
        collector.stop()


AUTH = {"Authorization": "Bearer s3cret"}


@pytest.mark.slow
def test_acknowledge_silence_and_end_it_from_the_page(
    tmp_path: Path, browser: subprocess.Popen[bytes], spiked: Collector
) -> None:
    port = spiked.http_port or 0
    api, auth = f"http://127.0.0.1:{port}/api/alerts", AUTH
    with devtools(browser, f"http://127.0.0.1:{port}/?token=s3cret") as tools:
        # Signed in by the link, and the token gone from the address bar (and so from history and Referer).
        assert tools.run("location.href") == f"http://127.0.0.1:{port}/"
        assert "ragtrace_session" not in tools.run("document.cookie")  # HttpOnly: no script reads it
        panel = tools.run("document.getElementById('alerts').innerText")
        assert "ALERT hallucination-spike (hallucination, service=shop) since " in panel

        tools.click_and_reload('button[data-api="/api/alerts/ack"]')
        (group,) = httpx.get(api, headers=auth, timeout=60).json()["groups"]
        assert group["ack"] is not None and group["ack"]["rule"] == "hallucination-spike"
        assert "[acknowledged at " in tools.run("document.getElementById('alerts').innerText")
        assert tools.run("document.querySelector('button[data-api=\"/api/alerts/ack\"]')") is None

        tools.run("document.querySelector('select[name=duration]').value = '4h'")
        tools.click_and_reload('button[data-api="/api/silences"]')
        (silence,) = httpx.get(api, headers=auth, timeout=60).json()["silences"]
        assert (silence["rule"], silence["service"]) == ("hallucination-spike", "shop")
        assert silence["ends_ns"] - silence["starts_ns"] == 4 * HOUR
        text = tools.run("document.getElementById('alerts').innerText")
        assert f"silenced (#{silence['id']})" in text and f"#{silence['id']} hallucination-spike (service=shop)" in text

        shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        (tmp_path / "alert-panel.png").write_bytes(base64.b64decode(shot["data"]))

        tools.click_and_reload(f'button[data-api="/api/silences/{silence["id"]}"]')
        assert httpx.get(api, headers=auth, timeout=60).json()["silences"] == []
        assert "Silences" not in tools.run("document.getElementById('alerts').innerText")


@pytest.mark.slow
def test_acknowledge_silence_and_end_it_from_the_alert_page(
    browser: subprocess.Popen[bytes], spiked: Collector
) -> None:
    """The same from the alert's own page (issue 25: its controls were on the overview only)."""
    port = spiked.http_port or 0
    api, auth = f"http://127.0.0.1:{port}/api/alerts", AUTH
    opened = httpx.get(f"http://127.0.0.1:{port}/alert?rule=hallucination-spike&service=shop", headers=auth)
    alert_path = opened.headers["location"]  # the group's latest alert
    assert opened.status_code == 303 and alert_path.startswith("/alerts/"), opened
    with devtools(browser, f"http://127.0.0.1:{port}{alert_path}?token=s3cret") as tools:
        assert tools.run("location.href") == f"http://127.0.0.1:{port}{alert_path}"
        tools.click_and_reload('button[data-api="/api/alerts/ack"]')
        (group,) = httpx.get(api, headers=auth, timeout=60).json()["groups"]
        assert group["ack"] is not None and (group["ack"]["rule"], group["ack"]["service"]) == (
            "hallucination-spike",
            "shop",
        )
        assert tools.run("location.pathname") == alert_path  # the page it was on, reloaded
        assert "[acknowledged at " in tools.run("document.getElementById('alerts').innerText")
        assert tools.run("document.querySelector('button[data-api=\"/api/alerts/ack\"]')") is None

        tools.run("document.querySelector('select[name=duration]').value = '24h'")
        tools.click_and_reload('button[data-api="/api/silences"]')
        (silence,) = httpx.get(api, headers=auth, timeout=60).json()["silences"]
        assert (silence["rule"], silence["service"], silence["route"]) == ("hallucination-spike", "shop", None)
        assert silence["ends_ns"] - silence["starts_ns"] == 24 * HOUR
        assert f"silenced (#{silence['id']})" in tools.run("document.getElementById('alerts').innerText")

        tools.click_and_reload(f'button[data-api="/api/silences/{silence["id"]}"]')
        assert httpx.get(api, headers=auth, timeout=60).json()["silences"] == []
        assert "Silences" not in tools.run("document.getElementById('alerts').innerText")
