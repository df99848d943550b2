"""The overview's alerts, on both engines, from a real watcher: a firing alert's banner and its panel say the same
thing (the message that fired it, and the latest evaluation when that differs: issue 25 saw "mean 0.454 over 37
records is below 0.5" in the banner beside "0 scored records, need 10" in the panel); groups without data fold
under one line with the reason; a store the watcher never ran on says so."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

from markupsafe import escape
from ragtrace_collector._alerts import Watcher
from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes
from ragtrace_collector._rules import parse_rules
from ragtrace_collector._store.schema import SCORE_COLUMNS
from ragtrace_collector._triage._assets import asset_url
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.collector._stores import whole_row

NS = 1_000_000_000
MINUTE = 60 * NS
NOW = 1_800_000_000 * NS
RULES = """
[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
threshold = 0.5
window = "10m"
min_records = 10
"""
FIRED = "mean 0.454 over 37 records is below 0.5"


def _scores(service: str, values: list[float], end_ns: int) -> list[dict[str, Any]]:
    return [
        whole_row(
            {"span_id": f"{service}{i:012x}", "metric": "faithfulness", "value": v, "service": service,
             "time_ns": end_ns - (i + 1) * NS},
            SCORE_COLUMNS,
        )
        for i, v in enumerate(values)
    ]  # fmt: skip


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_the_banner_and_the_panel_agree_and_quiet_groups_fold(store_target: str, open_store: Callable[[], Any]) -> None:
    store = open_store()
    # shop: 37 scores with mean 0.454 (fires); docs and help: a few scores each, then nothing (no data).
    values = [0.4] * 20 + [0.5176470588235294] * 17
    store.write(Batch(scores=_scores("shop", values, NOW)))
    earlier = NOW - 30 * MINUTE
    store.write(Batch(scores=_scores("docs", [0.9] * 12, earlier) + _scores("help", [0.9] * 12, earlier)))
    watcher = Watcher(store_target, rules=parse_rules(RULES), sinks=[])
    try:
        watcher.evaluate_once(earlier)  # docs and help measured OK
        watcher.evaluate_once(NOW)  # shop fires; docs and help have had no data for longer than no_data_after
        # Eleven minutes on, shop's window is empty: the detector says NO_DATA, the alert holds (no_data_after 15m).
        watcher.evaluate_once(NOW + 11 * MINUTE)
    finally:
        watcher.stop()
    with TestClient(Starlette(routes=page_routes(store))) as client:
        page = client.get("/").text
    banners = [_text(b) for b in re.findall(r'<div class="firing">(.*?)</div>', page, flags=re.S)]
    panel = [_text(g) for g in re.findall(r'<form class="alert-group state-ALERT">(.*?)</form>', page, flags=re.S)]
    (banner,) = [b for b in banners if "faithfulness-low" in b]
    (group,) = panel
    for said in (banner, group):
        assert FIRED in said, said
        assert "latest evaluation" in said and "NO_DATA, 0 scored records, need 10" in said, said
    # The banner's words are the panel's (the panel adds its buttons and links).
    assert group.startswith("ALERT " + banner.removeprefix("ALERT "))
    # The quiet groups: folded under one summary with the reason, each saying what it lacked.
    folded = re.findall(r'<details class="quiet" id="no-data"><summary>(.*?)</summary>(.*?)</details>', page, re.S)
    assert len(folded) == 1 and folded[0][0] == "2 groups with no data"
    assert "fewer scored records than its rule needs" in _text(folded[0][1])
    assert _text(folded[0][1]).count("0 scored records, need 10") == 2


def test_a_store_without_a_watcher_says_no_rule_ran(open_store: Callable[[], Any]) -> None:
    store = open_store()
    store.write(Batch(scores=_scores("shop", [0.9] * 3, NOW)))
    with TestClient(Starlette(routes=page_routes(store))) as client:
        page = client.get("/").text
    assert "No alert rule has been evaluated in this store yet" in page
    assert "Every alert group is OK" not in page


def test_an_alert_page_acknowledges_and_silences_its_own_group(
    store_target: str, open_store: Callable[[], Any]
) -> None:
    """The alert page has its group's controls (issue 25: they were on the overview only): the Acknowledge button
    while the group's ALERT is not acknowledged, Silence, and the silences covering the group with their End
    buttons; each sends the group it acts on, and the page shows who acknowledged."""
    from ragtrace_collector._store import writing
    from ragtrace_collector._store.alerts import add_ack, add_silence, group_state

    store = open_store()
    store.write(Batch(scores=_scores("shop", [0.4] * 37, NOW) + _scores("docs", [0.9] * 12, NOW)))
    watcher = Watcher(store_target, rules=parse_rules(RULES), sinks=[])
    try:
        watcher.evaluate_once(NOW)
    finally:
        watcher.stop()
    with TestClient(Starlette(routes=page_routes(store))) as client:
        redirect = client.get("/alert?rule=faithfulness-low&service=shop", follow_redirects=False)
        url = redirect.headers["location"]
        page = client.get(url).text
        (controls,) = re.findall(r'<section id="alerts">(.*?)</section>', page, flags=re.S)
        target = escape('{"rule": "faithfulness-low", "service": "shop", "route": null}')
        assert f'data-api="/api/alerts/ack" data-body="{target}"' in controls
        assert f'data-api="/api/silences" data-body="{target}"' in controls
        assert "docs" not in controls  # its own group's, no other
        assert f'<script src="{asset_url("alerts.js")}" defer>' in page and '<p id="alert-error"' in controls
        assert "the alert and its records" not in controls  # no link to the page it is on

        with writing(store_target) as conn:
            state = group_state(conn, "faithfulness-low", "shop", None)
            assert state is not None and state[0] == "ALERT"
            add_ack(conn, rule="faithfulness-low", service="shop", route=None, episode_ns=state[1], now_ns=NOW,
                    author="ana")  # fmt: skip
            silence = add_silence(conn, rule="faithfulness-low", service=None, route=None, starts_ns=NOW,
                                  ends_ns=NOW + 60 * MINUTE, author="bo")  # fmt: skip
        page = client.get(url).text
        (controls,) = re.findall(r'<section id="alerts">(.*?)</section>', page, flags=re.S)
    assert 'data-api="/api/alerts/ack"' not in controls
    assert "acknowledged by ana at " in _text(controls)
    assert f'data-method="DELETE" data-api="/api/silences/{silence.id}"' in controls
    assert f"#{silence.id} faithfulness-low (all) until " in _text(controls) and "by bo" in _text(controls)
