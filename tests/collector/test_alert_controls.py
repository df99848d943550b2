"""Acknowledge and silence alerts through a real collector's alert API, from the CLI and over HTTP, kept across a
restart (issue 16): a silenced alert still changes state and is stored, but nothing is sent."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from ragtrace_collector.__main__ import main

from tests.collector._spans import SpanFactory, otlp_bytes, start_collector
from tests.collector._stores import rows
from tests.collector._webhook import Receiver

NS = 1_000_000_000
MINUTE = 60 * NS
HOUR = 60 * MINUTE
RULES = """
interval = "1h"   # the test evaluates by hand
renotify = "30m"
keep_firing_for = "0s"

[[sinks]]
type = "webhook"
name = "hook"
url = "{url}"
retries = 0

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
min_baseline = 200
min_records = 20
"""


def _send(port: int, start_ns: int, end_ns: int, count: int, every: int) -> None:
    """``count`` scored RAG spans of service shop spread over [start, end), one in ``every`` hallucinated."""
    factory = SpanFactory(service="shop")
    step = (end_ns - start_ns) // count
    for i in range(count):
        value = 0.9 if i % every == 0 else 0.2
        factory.rag(scores={"hallucination": value}, decision="evaluated", end_ns=start_ns + i * step, events=False)
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/traces",
        data=otlp_bytes(factory.all()),
        headers={"Content-Type": "application/x-protobuf"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def _cli(capsys: pytest.CaptureFixture[str], port: int, *argv: str) -> tuple[int, str, str]:
    status = main(["alerts", "--url", f"http://127.0.0.1:{port}", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def _sent(receiver: Receiver, watcher: Any) -> list[tuple[str | None, str]]:
    for sink in watcher.sinks:
        sink.flush(10)
    out = []
    while not receiver.bodies.empty():
        alert = receiver.bodies.get_nowait()["alert"]
        out.append((alert["previous_state"], alert["state"]))
    return out


@pytest.mark.slow
def test_ack_and_silence_from_the_cli_are_kept_across_a_restart(
    tmp_path: Path,
    store_target: str,
    open_store: Callable[[], Any],
    receiver: Receiver,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(url=receiver.url), encoding="utf-8")
    db = store_target  # on either engine
    # Silences run on the wall clock, so the scene is set just before now.
    now = time.time_ns() - 5 * MINUTE
    collector = start_collector(db, watch=True, rules=rules)
    try:
        port, watcher = collector.http_port, collector.watcher
        assert port is not None and watcher is not None
        _send(port, now - 25 * HOUR, now - HOUR, 400, 20)  # a day at 5 %
        _send(port, now - HOUR + 1, now, 80, 4)  # the last hour at 25 %
        watcher.evaluate_once(now)
        assert _sent(receiver, watcher) == [(None, "ALERT")]

        status, out, _ = _cli(capsys, port, "list")
        assert status == 0 and out.startswith("ALERT    hallucination-spike (service=shop) since ")
        status, out, _ = _cli(capsys, port, "ack", "hallucination-spike", "--service", "shop", "--author", "ana")
        assert status == 0 and out.startswith("acknowledged hallucination-spike (service=shop)")
        assert "[acknowledged by ana at " in _cli(capsys, port, "list")[1]
        # Acknowledged: past the renotify interval, no reminder.
        assert watcher.evaluate_once(now + 31 * MINUTE) == []

        status, out, _ = _cli(capsys, port, "silence", "hallucination-spike", "--service", "shop", "--for", "2h",
                              "--comment", "prompt rollback under way")  # fmt: skip
        assert status == 0 and out.startswith("silenced #1: hallucination-spike (service=shop) until ")
        # The spike leaves the window and a clean hour follows: resolved, recorded, not sent.
        _send(port, now + HOUR + 1, now + 90 * MINUTE, 60, 20)
        (resolved,) = watcher.evaluate_once(now + 90 * MINUTE)
        assert (resolved.previous_state, resolved.state, resolved.silenced) == ("ALERT", "OK", True)
        assert _sent(receiver, watcher) == []
    finally:
        collector.stop()
    assert rows(open_store(), "SELECT state, sinks, silenced FROM alerts ORDER BY id") == [
        ("ALERT", '["hook"]', 0),
        ("OK", "[]", 1),
    ]

    # Restarted with the page and the API only: a watcher would evaluate the wall clock's now, before the
    # scene's last evaluation.
    again = start_collector(db, page=True)
    try:
        port = again.http_port
        assert port is not None
        listing = httpx.get(f"http://127.0.0.1:{port}/api/alerts", timeout=30).json()
        (group,) = listing["groups"]
        assert (group["rule"], group["service"], group["state"], group["silenced_by"]) == (
            "hallucination-spike",
            "shop",
            "OK",
            [1],
        )
        (silence,) = listing["silences"]
        assert silence["comment"] == "prompt rollback under way" and silence["ends_ns"] > time.time_ns()
        status, out, _ = _cli(capsys, port, "unsilence", "1")
        assert status == 0 and out.startswith("ended silence #1")
        assert httpx.get(f"http://127.0.0.1:{port}/api/alerts", timeout=30).json()["silences"] == []
    finally:
        again.stop()


def test_the_api_refuses_what_it_cannot_do_and_names_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(url="http://127.0.0.1:9/unused"), encoding="utf-8")
    collector = start_collector(tmp_path / "ragtrace.db", watch=True, rules=rules, page=True)
    try:
        base = f"http://127.0.0.1:{collector.http_port}"
        refused = httpx.post(f"{base}/api/alerts/ack", json={"rule": "hallucination-spike", "service": "shop"})
        assert refused.status_code == 404 and "no alert group hallucination-spike" in refused.json()["error"]
        typo = httpx.post(f"{base}/api/silences", json={"rule": "halucination-spike", "duration": "1h"})
        assert typo.status_code == 400 and "no rule is named 'halucination-spike'" in typo.json()["error"]
        no_duration = httpx.post(f"{base}/api/silences", json={"rule": "hallucination-spike"})
        assert no_duration.status_code == 400 and "`duration` is required" in no_duration.json()["error"]
        bad = httpx.post(f"{base}/api/silences", json={"duration": "soon"})
        assert bad.status_code == 400 and "is not a duration" in bad.json()["error"]
        # A form, as another site could make a browser send: refused, so no other page can silence alerts.
        form = httpx.post(f"{base}/api/silences", data={"duration": "1h"})
        assert form.status_code == 415
        assert httpx.delete(f"{base}/api/silences/7").status_code == 404
        # No matcher and no "all": refused (a silence of everything is said so, not left to a missing field).
        unscoped = httpx.post(f"{base}/api/silences", json={"duration": 3600})
        assert unscoped.status_code == 400 and '"all": true' in unscoped.json()["error"]
        # Longer than the maximum (30 days by default): refused.
        endless = httpx.post(f"{base}/api/silences", json={"rule": "hallucination-spike", "duration": "31d"})
        assert endless.status_code == 400 and "at most 30 days" in endless.json()["error"]
        # Silence everything for an hour: the page lists it with a button to end it.
        made = httpx.post(f"{base}/api/silences", json={"duration": 3600, "author": "<b>ana</b>", "all": True})
        assert made.status_code == 201 and made.json()["silence"]["rule"] is None
        page = httpx.get(base + "/", timeout=60).text
        assert '<section id="alerts">' in page and "every rule (all) until " in page
        assert "&lt;b&gt;ana&lt;/b&gt;" in page and "<b>ana</b>" not in page
        assert 'data-method="DELETE" data-api="/api/silences/1"' in page
        status, _, err = _cli(capsys, collector.http_port or 0, "silence", "--for", "30m")
        assert status == 1 and '"all": true' in err
        status, out, _ = _cli(capsys, collector.http_port or 0, "silence", "--all", "--for", "30m")
        assert status == 0 and out.startswith("silenced")
        status, _, err = _cli(capsys, collector.http_port or 0, "ack", "hallucination-spike", "--service", "x")
        assert status == 1 and "no alert group" in err and "(404)" in err
    finally:
        collector.stop()
    status, _, err = _cli(capsys, collector.http_port or 0, "list")
    assert status == 1 and "cannot reach" in err


def test_with_a_token_the_api_needs_it_and_the_cli_sends_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collector = start_collector(tmp_path / "ragtrace.db", watch=True, token="s3cret")
    try:
        port = collector.http_port or 0
        assert httpx.get(f"http://127.0.0.1:{port}/api/alerts").status_code == 401
        status, _, err = _cli(capsys, port, "list")
        assert status == 1 and "needs its token" in err
        status, out, _ = _cli(capsys, port, "--token", "s3cret", "--json", "list")
        assert status == 0 and json.loads(out)["groups"] == []
    finally:
        collector.stop()


def test_the_shared_options_are_taken_after_the_action_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 29: `alerts list --url X` failed with "unrecognized arguments: --url".
    collector = start_collector(tmp_path / "ragtrace.db", watch=True, token="s3cret")
    try:
        url = f"http://127.0.0.1:{collector.http_port or 0}"
        assert main(["alerts", "list", "--url", url, "--token", "s3cret", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["groups"] == []
        # Given on both sides, the one after the action wins; given before only, an action's default does not
        # overwrite it.
        assert main(["alerts", "--url", "http://127.0.0.1:1", "list", "--url", url, "--token", "s3cret"]) == 0
        assert "no alert groups yet" in capsys.readouterr().out
        assert main(["alerts", "--url", url, "--token", "s3cret", "--json", "list"]) == 0
        assert json.loads(capsys.readouterr().out)["silences"] == []
        assert main(["alerts", "unsilence", "7", "--url", url]) == 1  # the token is needed: --url was used
        assert "needs its token" in capsys.readouterr().err
    finally:
        collector.stop()
