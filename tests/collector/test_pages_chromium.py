"""The pages as one app, as a person uses them, in a real headless Chromium (Debian's, over the DevTools protocol)
against a real collector with an admin token, on both store engines:

* signed in by the link ``serve`` prints, every page shares one frame and navigation, loads its scripts and
  plotly.js from the collector's own versioned, cached files, and raises no Content-Security-Policy violation;
* every ``href`` (and stylesheet and script) of every page reached from the overview answers 200 signed in;
* the time range and service picker narrows a page and every link carries it; the list sorts and pages on;
* a claim reviewed on a record page shows on the agreement page;
* an empty store says where to send spans, an unknown page is a 404 in the frame with a way back;
* hostile text in spans and rule names renders as text under the policy, and nothing of it runs.

Screenshots of each page go to the test's directory.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._server import Collector
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS, SPAN_COLUMNS

from tests.collector._devtools import CHROMIUM, WATCH_CSP, DevTools, browser, crawl_script, devtools
from tests.collector._spans import start_collector
from tests.collector._stores import whole_row
from tests.collector._triage_seed import insert_alerts, seed_triage, span_id

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed: run `make system-deps`"),
    pytest.mark.slow,  # a collector and a browser each: 5 to 30 s a test on the 2-core machine
]
__all__ = ["browser"]  # the fixture, imported for pytest

TOKEN = "s3cret"
NAV_PAGES = ["/", "/records", "/review", "/agreement", "/costs"]


def _go(tools: DevTools, url: str) -> None:
    tools.call("Page.navigate", url=url)
    tools.wait_for("Page.loadEventFired")


def _open(browser: subprocess.Popen[bytes], url: str) -> Any:
    """``devtools`` on a blank page with the CSP watch installed for every page after it, then ``url``."""
    cm = devtools(browser, "about:blank")
    tools = cm.__enter__()
    tools.call("Page.addScriptToEvaluateOnNewDocument", source=WATCH_CSP)
    _go(tools, url)
    return cm, tools


def _shot(tools: DevTools, path: Path) -> None:
    shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def _checks_of_the_frame(tools: DevTools) -> None:
    """What every page shares: the navigation, no CSP violation, no script of its own, nothing inlined."""
    assert tools.run("window.__csp") == [], tools.run("location.href")
    assert tools.run("document.querySelectorAll('header.top nav a').length") == len(NAV_PAGES)
    inline = "Array.from(document.scripts).filter(s => !s.src && s.type !== 'application/json').length"
    assert tools.run(inline) == 0
    sources = tools.run("Array.from(document.scripts).filter(s => s.src).map(s => new URL(s.src).pathname)")
    assert all(s.startswith("/static/") for s in sources), sources


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, page=True, token=TOKEN)
    yield running
    running.stop()


def _seed(collector: Collector) -> None:
    assert collector.store is not None
    seed_triage(collector.store)


def test_one_app_signed_in_every_link_answers_and_no_page_breaks_the_policy(
    collector: Collector, browser: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _seed(collector)
    base = f"http://127.0.0.1:{collector.http_port}"
    cm, tools = _open(browser, f"{base}/?token={TOKEN}")
    try:
        assert tools.run("location.href") == f"{base}/"  # signed in, the token gone from the address bar
        for path in NAV_PAGES:
            _go(tools, base + path)
            _checks_of_the_frame(tools)
            current = tools.run("document.querySelector('header.top nav a[aria-current=page]').getAttribute('href')")
            assert current == path
            _shot(tools, tmp_path / f"page{path.replace('/', '-') or '-overview'}.png")
        _go(tools, f"{base}/")
        # plotly.js comes once, from its own cached file, and draws every chart.
        assert tools.run("document.querySelectorAll('.plotly-graph-div .main-svg').length") >= 2
        cache = tools.run(
            "fetch(Array.from(document.scripts).map(s => s.src).find(s => s.includes('/static/plotly.')))"
            ".then(r => r.status + ' ' + r.headers.get('cache-control'))"
        )
        assert cache == "200 public, max-age=31536000, immutable"
        size = tools.run("fetch('/').then(r => r.text()).then(t => t.length)")
        assert size < 300_000, size  # the overview is its own text, not 4.8 MB of plotly.js

        # Every link of every page reached from the overview answers 200 to the signed-in browser.
        crawl = tools.run(crawl_script("/", max_pages=40))
        assert crawl["bad"] == [] and crawl["parsed"] == 40 and crawl["seen"] > 100, crawl
    finally:
        cm.__exit__(None, None, None)


def test_pick_a_service_sort_page_on_and_review_a_claim(
    collector: Collector, browser: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    _seed(collector)
    base = f"http://127.0.0.1:{collector.http_port}"
    cm, tools = _open(browser, f"{base}/records?token={TOKEN}")
    try:
        # The picker: choose a service; the page narrows to it and every link of the navigation carries it.
        tools.run("const s = document.querySelector('form.scope select[name=service]'); s.value = 'docs';"
                  "s.dispatchEvent(new Event('change'))")  # fmt: skip
        tools.wait_for("Page.loadEventFired")
        assert "service=docs" in tools.run("location.search")
        services = tools.run(
            "Array.from(document.querySelectorAll('#records tr.row td:nth-child(2)')).map(t => t.innerText)"
        )
        assert services and set(services) == {"docs"}
        hrefs = tools.run("Array.from(document.querySelectorAll('header.top nav a')).map(a => a.getAttribute('href'))")
        assert all("service=docs" in h for h in hrefs), hrefs
        tools.run("document.querySelector('header.top nav a[href^=\"/costs\"]').click()")
        tools.wait_for("Page.loadEventFired")
        assert tools.run("location.pathname") == "/costs" and "service=docs" in tools.run("location.search")
        assert tools.run("document.querySelector('form.scope select[name=service]').value") == "docs"
        _checks_of_the_frame(tools)

        # Sorted oldest first, page after page: in order, no record twice.
        _go(tools, f"{base}/records?service=shop&limit=20")
        tools.run("Array.from(document.querySelectorAll('#orders a')).find(a => a.innerText === 'oldest').click()")
        tools.wait_for("Page.loadEventFired")
        ids: list[str] = []
        while True:
            ids += tools.run("Array.from(document.querySelectorAll('#records tr.row')).map(r => r.dataset.span)")
            if not tools.run("!!document.querySelector('a[rel=next]')"):
                break
            tools.run("document.querySelector('a[rel=next]').click()")
            tools.wait_for("Page.loadEventFired")
        assert len(ids) == len(set(ids)) == 112 and ids == sorted(ids)  # the seed's shop records, ids by time
        _checks_of_the_frame(tools)

        # By a score, highest first.
        tools.run(
            "Array.from(document.querySelectorAll('#orders a')).find(a => a.innerText === 'highest' && "
            "a.getAttribute('href').includes('sort=-hallucination')).click()"
        )
        tools.wait_for("Page.loadEventFired")
        chips = tools.run(
            "Array.from(document.querySelectorAll('#records tr.row')).map(r => "
            "Number(Array.from(r.querySelectorAll('.chip')).find(c => c.innerText.startsWith('hallucination'))"
            ".innerText.split(' ')[1]))"
        )
        assert chips == sorted(chips, reverse=True) and chips[0] > 0.5
        _shot(tools, tmp_path / "records-sorted.png")

        # Review: the answer of a hallucinated record is wrong, and so is its contradicted claim.
        _go(tools, f"{base}/records/{span_id(101)}?service=shop")
        _checks_of_the_frame(tools)
        tools.click_and_reload("button[data-grounded=false][data-claim='']")
        tools.click_and_reload("button[data-grounded=false][data-claim='1']")
        assert "Reviewed: wrong" in tools.run("document.body.innerText")
        _go(tools, f"{base}/agreement")
        assert "Per judge and service" in tools.run("document.body.innerText")
        _checks_of_the_frame(tools)
    finally:
        cm.__exit__(None, None, None)


def test_an_empty_store_says_where_to_send_spans_and_errors_lead_back(
    store_target: str, browser: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    collector = start_collector(store_target, page=True)
    base = f"http://127.0.0.1:{collector.http_port}"
    try:
        cm, tools = _open(browser, f"{base}/")
        try:
            text = tools.run("document.getElementById('empty').innerText")
            assert f"{base}/v1/traces" in text and "OTEL_EXPORTER_OTLP_ENDPOINT" in text
            assert "ragtrace.configure" in text
            _shot(tools, tmp_path / "empty-overview.png")
            _checks_of_the_frame(tools)
            for path, says in (
                ("/records", "No record matches"),
                ("/review", "Nothing to review"),
                ("/agreement", "No review yet."),
                ("/costs", "No model call"),
            ):
                _go(tools, base + path)
                assert says in tools.run("document.body.innerText"), path
                _checks_of_the_frame(tools)
            for path, status in (("/no/such/page", 404), ("/records/ffff", 404), ("/records?limit=0", 400)):
                assert httpx.get(base + path, timeout=30).status_code == status
                _go(tools, base + path)
                _checks_of_the_frame(tools)
                tools.run(
                    "Array.from(document.querySelectorAll('main a')).find(a => a.innerText.startsWith('back')).click()"
                )
                tools.wait_for("Page.loadEventFired")
                assert tools.run("location.pathname") == "/"
            _go(tools, f"{base}/no/such/page")
            _shot(tools, tmp_path / "not-found.png")
        finally:
            cm.__exit__(None, None, None)
    finally:
        collector.stop()


HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"\'&<b>'


def test_hostile_text_renders_as_text_under_the_policy(
    collector: Collector, browser: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    store = collector.store
    assert store is not None
    sid, t = "feedfacecafebeef", 1_800_000_000 * 10**9
    metadata = json.dumps({HOSTILE: HOSTILE})
    record = {"span_id": sid, "trace_id": sid * 2, "service": HOSTILE, "route": HOSTILE, "time_ns": t,
              "query": HOSTILE, "answer": HOSTILE, "chunks": json.dumps([{"id": HOSTILE, "content": HOSTILE}]),
              "decision": "evaluated", "judge": HOSTILE}  # fmt: skip
    claims = json.dumps([{"claim": HOSTILE, "verdict": "contradicted", "chunk": 0, "support": 0.1}])
    scores = [{"span_id": sid, "metric": m, "value": v, "label": HOSTILE, "explanation": HOSTILE,
               "service": HOSTILE, "time_ns": t, "claims": claims}
              for m, v in (("faithfulness", 0.1), ("hallucination", 0.9))]  # fmt: skip
    span = {"span_id": sid, "trace_id": sid * 2, "name": HOSTILE, "service": HOSTILE, "start_ns": t, "end_ns": t,
            "attributes": json.dumps({"metadata": metadata, HOSTILE: HOSTILE})}  # fmt: skip
    store.write(
        Batch(
            spans=[whole_row(span, SPAN_COLUMNS)],
            rag_records=[whole_row(record, RAG_COLUMNS)],
            scores=[whole_row(s, SCORE_COLUMNS) for s in scores],
        )
    )
    insert_alerts(store, [{"time_ns": t, "rule": HOSTILE, "kind": "spike", "metric": "hallucination",
                           "service": HOSTILE, "state": "ALERT", "value": 9.0, "threshold": 8.0,
                           "message": HOSTILE, "sinks": "[]"}])  # fmt: skip
    base = f"http://127.0.0.1:{collector.http_port}"
    cm, tools = _open(browser, f"{base}/?token={TOKEN}")
    try:
        alert = urlencode({"rule": HOSTILE, "service": HOSTILE})
        pages = ["/", f"/records/{sid}", "/records", "/costs", "/review", f"/alert?{alert}"]
        for path in pages:
            _go(tools, base + path)
            assert tools.run("window.__csp") == [], path  # nothing tried to run
            assert tools.run("window.__pwned") is None, path
            assert tools.run("document.querySelectorAll('main img, main script:not([type]), main b b').length") == 0
        _go(tools, f"{base}/records/{sid}")
        text = tools.run("document.body.innerText")
        assert text.count("<script>window.__pwned=1</script>") >= 3  # the query, the answer, the chunk, the claim
        _shot(tools, tmp_path / "hostile-record.png")
    finally:
        cm.__exit__(None, None, None)
