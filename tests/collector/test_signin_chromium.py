"""A person on a collector with a token, in a real headless Chromium (issue 25): the link ``serve`` prints signs
the browser in, the token leaves the address bar, the records list's live updates (``/api/records``, polled)
bring a record sent afterwards, and a link on the page opens its record rather than a 401.

Chromium is Debian's package (``make system-deps``); the test skips without it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.collector._devtools import CHROMIUM, browser, devtools
from tests.collector._spans import SpanFactory, otlp_bytes, start_collector

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`")
__all__ = ["browser"]  # the fixture, imported for pytest
SEND = {"content-type": "application/x-protobuf", "authorization": "Bearer s3cret"}


def _send(port: int, query: str) -> None:
    factory = SpanFactory(service="shop")
    factory.rag(query=query, scores={"faithfulness": 0.9}, decision="evaluated")
    reply = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=otlp_bytes(factory.all()), headers=SEND)
    assert reply.status_code == 200


def test_signed_in_by_the_link_the_live_list_and_its_links_work(
    tmp_path: Path, browser: subprocess.Popen[bytes]
) -> None:
    collector = start_collector(tmp_path / "c.db", page=True, token="s3cret")
    port = collector.http_port or 0
    try:
        _send(port, "what was there before?")
        with devtools(browser, f"http://127.0.0.1:{port}/records?token=s3cret") as tools:
            assert tools.run("location.href") == f"http://127.0.0.1:{port}/records"
            assert "what was there before?" in tools.run("document.querySelector('tbody').innerText")
            _send(port, "what arrived later?")
            deadline = time.monotonic() + 120  # the list polls every 10 s: a bound, not a timing check
            while "what arrived later?" not in tools.run("document.querySelector('tbody').innerText"):
                assert time.monotonic() < deadline, "the live update never brought the new record"
                time.sleep(0.2)
            tools.run("document.querySelector('tbody a').click()")
            tools.wait_for("Page.loadEventFired")
            assert "/records/" in tools.run("location.pathname")
            assert "what arrived later?" in tools.run("document.body.innerText")
    finally:
        collector.stop()
