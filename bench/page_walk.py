"""A person's walk through the pages of a 1,000,000-record store, in Debian's headless Chromium:
``python bench/page_walk.py [--records 1000000] [--out /tmp/walk]``.

Builds a SQLite store as ``bench/triage_page.py`` does (records a second apart over two services, one in five
hallucinated, metadata with a user; the text search index built over them), raises an alert on it with the
collector's own watcher (mean faithfulness under 0.8 in the last 30 minutes), and serves it with a real collector
(``--token``). Then, as a person would, over the DevTools protocol: sign in with the link ``serve`` prints, fetch
the pages that aggregate the whole scope over all time (their status and time), open every page of the navigation
over the last day of the store, follow every link of every page reached from the records list (each must answer
200), pick a service, sort (oldest, by hallucination), page on, search text, filter by metadata, open a record and
mark a claim wrong, open the alert, acknowledge and silence it, and watch three new records arrive in the records
list while it is open. Each step's page load (navigation to the load event, in the browser) is printed; a
screenshot of each page goes to ``<out>/<step>.png`` for a person to look at. It fails (exit 1) on a link that does
not answer 200, a violation of the Content-Security-Policy, or a step that does not show what it should; it goes on
past each and lists them at the end.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ragtrace_collector._alerts import Watcher  # noqa: E402
from ragtrace_collector._otlp import Batch  # noqa: E402
from ragtrace_collector._rules import parse_rules  # noqa: E402
from ragtrace_collector._store import Store  # noqa: E402
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS  # noqa: E402
from triage_page import NS, T0, build, build_text_index  # noqa: E402

from tests.collector._devtools import CHROMIUM, WATCH_CSP, DevTools, crawl_script, devtools, launch  # noqa: E402
from tests.collector._spans import start_collector  # noqa: E402
from tests.collector._stores import whole_row  # noqa: E402

TOKEN = "walk-s3cret"
RULES = """
[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
threshold = 0.8
window = "30m"
min_records = 10
"""
NAV_PAGES = {"overview": "/", "records": "/records", "review": "/review", "agreement": "/agreement", "costs": "/costs"}


class Walk:
    """The browser's one tab: each step navigates or clicks, waits for the load, checks, and shoots."""

    def __init__(self, tools: DevTools, base: str, out: Path) -> None:
        self.tools, self.base, self.out = tools, base, out
        self.loads: dict[str, float] = {}

    def go(self, step: str, path: str) -> None:
        self._load(step, lambda: self.tools.call("Page.navigate", url=self.base + path))

    def click(self, step: str, script: str) -> None:
        """Run ``script`` (a click that loads a page) and wait for the page it loads."""
        self._load(step, lambda: self.tools.run(script))

    def _load(self, step: str, action: Callable[[], object]) -> None:
        # A mark on the old document: the new one has none, so a load event left over from an earlier page
        # (a button's reload) is not taken for this one.
        self.tools.run("window.__walk = true")
        start = time.perf_counter()
        action()
        self.tools.wait_for("Page.loadEventFired")
        wait(lambda: self.tools.run("!window.__walk && document.readyState === 'complete'"), f"{step}'s page")
        self.done(step, start)

    def done(self, step: str, start: float) -> None:
        self.loads[step] = time.perf_counter() - start
        violations = self.tools.run("window.__csp")
        check(violations == [], f"{step}: the page broke its Content-Security-Policy: {violations}")
        shot = self.tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        (self.out / f"{step}.png").write_bytes(base64.b64decode(shot["data"]))
        print(f"{step:<34} {self.loads[step] * 1000:8.0f} ms  {self.tools.run('location.pathname + location.search')}")

    def text(self, selector: str = "body") -> str:
        return str(self.tools.run(f"document.querySelector({json.dumps(selector)}).innerText"))


FAILURES: list[str] = []
"""What the walk found wrong; it goes on past each, and exits 1 at the end if any."""


def check(condition: bool, what: str) -> bool:
    if not condition:
        FAILURES.append(what)
        print(f"FAILED: {what}", flush=True)
    return condition


def wait(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if not check(time.monotonic() < deadline, f"timed out waiting for {what}"):
            return
        time.sleep(0.2)


def alert(db: Path, n: int) -> None:
    """The collector's watcher, run once at the newest record's time: faithfulness-low fires for each service."""
    watcher = Watcher(db, rules=parse_rules(RULES), sinks=[])
    try:
        watcher.evaluate_once(T0 + n * NS)
    finally:
        watcher.stop()


def new_records(n: int) -> Batch:
    """Three records that arrive while the list is open (ids past the store's), with their scores."""
    rows, scores = [], []
    for i in range(n, n + 3):
        sid, t = f"{i:016x}", T0 + i * NS
        rows.append(whole_row({"span_id": sid, "trace_id": sid * 2, "service": "shop", "route": "/ask",
                               "time_ns": t, "query": f"Live question {i}", "answer": "It is in Paris.",
                               "chunks": "[]", "decision": "evaluated"}, RAG_COLUMNS))  # fmt: skip
        scores.append(whole_row({"span_id": sid, "metric": "faithfulness", "value": 0.9, "trace_id": sid * 2,
                                 "service": "shop", "route": "/ask", "time_ns": t}, SCORE_COLUMNS))  # fmt: skip
    return Batch(rag_records=rows, scores=scores)


ALL_TIME = """
(async () => {
  const out = {};
  for (const path of PATHS) {
    const start = performance.now();
    const reply = await fetch(path, {headers: {'Accept': 'text/html'}});
    await reply.text();
    out[path] = [reply.status, Math.round(performance.now() - start)];
  }
  return out;
})()
"""
"""The pages whose reads cover the whole scope, fetched over all time: their status and milliseconds."""


def walk(walker: Walk, n: int, collector: Any) -> None:
    tools = walker.tools
    walker.go("sign-in", f"/records?token={TOKEN}")
    check(tools.run("location.search") == "", "the token left the address bar after sign-in")
    # Over all time the overview, the review queue and the costs aggregate every record: say what they answer.
    every = tools.run(ALL_TIME.replace("PATHS", json.dumps([p for p in NAV_PAGES.values() if p != "/records"])))
    for path, (status, ms) in every.items():
        print(f"{'all time ' + path:<34} {ms:8d} ms  HTTP {status}")
    # The rest of the walk looks at the last day of the store, as the picker's ranges do (the records are dated
    # from T0, not now, so the day is given as since=).
    day = f"since={T0 + (n - 86_400) * NS}"
    for step, path in NAV_PAGES.items():
        walker.go(step, f"{path}?{day}")
    walker.go("overview", f"/?{day}")
    crawl = tools.run(crawl_script(f"/records?{day}", max_pages=40))
    print(f"{'every link, 40 pages parsed':<34} {crawl['seen']:8d} URLs  not 200: {crawl['bad']}")
    check(crawl["bad"] == [] and crawl["parsed"] == 40, f"links that do not answer 200: {crawl}")

    walker.go("records", "/records")
    walker.click(
        "records-one-service",
        "const s = document.querySelector('form.scope select[name=service]'); s.value = 'docs';"
        "s.dispatchEvent(new Event('change'))",
    )
    services = tools.run(
        "Array.from(document.querySelectorAll('#records tr.row td:nth-child(2)')).map(t => t.innerText)"
    )
    check(bool(services) and set(services) == {"docs"}, f"the service picker kept other services: {set(services)}")
    walker.click(
        "records-oldest",
        "Array.from(document.querySelectorAll('#orders a')).find(a => a.innerText === 'oldest').click()",
    )
    walker.click("records-oldest-next-page", "document.querySelector('a[rel=next]').click()")
    walker.go("records-by-hallucination", "/records?sort=-hallucination")
    walker.go("records-text-search", "/records?q=Question%2012")
    check("Question 12" in walker.text("#records"), "the text search found no record")
    walker.go("records-metadata", "/records?meta=user%3Auser7")
    check(tools.run("document.querySelectorAll('#records tr.row').length") > 0, "the metadata filter found nothing")

    bad = f"{n - 5 - (n - 5) % 5:016x}"  # a hallucinated record (one in five)
    walker.go("record", f"/records/{bad}")
    check("Rome" in walker.text(), "the record page does not show the answer")
    walker.click(
        "record-claim-marked-wrong", "document.querySelector(\"button[data-grounded=false][data-claim='1']\").click()"
    )
    check("wrong" in walker.text().lower(), "the review did not show")

    walker.go("overview-alert", f"/?{day}")
    check("ALERT" in walker.text(), "the overview shows no firing alert")
    walker.go("alert", "/alert?rule=faithfulness-low&service=shop")  # the panel's link: redirects to /alerts/{id}
    check(tools.run("location.pathname").startswith("/alerts/"), "the alert's link did not open the alert")
    ack = 'button[data-api="/api/alerts/ack"]'
    if check(tools.run(f"!!document.querySelector({json.dumps(ack)})"), "the alert page has no Acknowledge button"):
        walker.click("alert-acknowledged", f"document.querySelector({json.dumps(ack)}).click()")
        check("acknowledged" in walker.text().lower(), "the acknowledgement did not show")
        walker.click("alert-silenced", "document.querySelector('button[data-api=\"/api/silences\"]').click()")
        check("silence" in walker.text().lower(), "the silence did not show")

    walker.go("records-live", "/records")
    written = time.perf_counter()
    collector.store.write(new_records(n))
    wait(lambda: walker.text("#records").count("Live question") == 3, "the new records in the open list")
    walker.done("records-live-arrived", written)  # its time: from the write to the rows shown (the list polls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/walk"))
    parser.add_argument("--db", type=Path, help="walk this store, built before by this script, instead of a new one")
    args = parser.parse_args(argv)
    if CHROMIUM is None:
        print("Debian's chromium is not installed: make system-deps", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragtrace-walk-") as tmp:
        db = args.db or Path(tmp) / "walk.db"
        if args.db is None:
            start = time.perf_counter()
            build(db, args.records)
            store = Store(db)
            store.change(build_text_index)
            store.close()
            alert(db, args.records)
            print(
                f"built {args.records:,} records, their text index and an alert in {time.perf_counter() - start:.0f} s"
            )
        collector = start_collector(db, page=True, token=TOKEN)
        try:
            with launch(Path(tmp) / "profile") as browser, devtools(browser, "about:blank") as tools:
                tools.call("Page.addScriptToEvaluateOnNewDocument", source=WATCH_CSP)
                walk(Walk(tools, f"http://127.0.0.1:{collector.http_port}", args.out), args.records, collector)
        finally:
            collector.stop()
    print(f"screenshots in {args.out}")
    if FAILURES:
        print(f"{len(FAILURES)} thing(s) wrong:\n" + "\n".join(f"- {f}" for f in FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
