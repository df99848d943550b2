"""Screenshots of every page of the collector, for a person to look at: ``python bench/page_screenshots.py
[--out /tmp/pages]``.

A real collector over a SQLite store in a temporary folder, seeded as the triage tests seed it (a day of records
of two services with claims and a hallucination spike), its watcher run on a threshold rule and an agreement rule
(so the overview has a firing alert whose window has since gone quiet, groups with no data, and the agreement page
people's reviews), then each page shot by Debian's headless Chromium at 1280 px wide: the overview, the records
list (newest first, and sorted by hallucination), a record, an alert, the costs, the review queue, the agreement,
a 404, and an empty store's overview. It writes ``<out>/<name>.png`` and prints each path.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragtrace_collector._alerts import Watcher  # noqa: E402
from ragtrace_collector._otlp import Batch  # noqa: E402
from ragtrace_collector._rules import parse_rules  # noqa: E402
from ragtrace_collector._server import Collector, CollectorConfig  # noqa: E402
from ragtrace_collector._store.reviews import ANSWER, save_review  # noqa: E402
from ragtrace_collector._store.schema import SCORE_COLUMNS  # noqa: E402

from tests.collector._stores import whole_row  # noqa: E402
from tests.collector._triage_seed import N_RECORDS, SPIKE_FROM, T0, seed_triage, span_id  # noqa: E402

MINUTE = 60 * 1_000_000_000
RULES = """
[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
threshold = 0.6
window = "30m"
min_records = 10

[[rules]]
name = "judge-agreement"
kind = "agreement"
threshold = 0.7
min_reviews = 10
"""


def _shoot(chromium: str, url: str, out: Path, profile: Path) -> None:
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={profile}", "--window-size=1280,1600", "--virtual-time-budget=8000",
         f"--screenshot={out}", url],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    print(out)


def _seeded(folder: Path) -> Path:
    db = folder / "pages.db"
    from ragtrace_collector._store import Store

    store = Store(db)
    seed_triage(store)
    # A third service whose scores stopped: its group goes quiet (no data).
    quiet = [
        whole_row({"span_id": f"q{i:015x}", "metric": "faithfulness", "value": 0.9, "service": "billing",
                   "time_ns": T0 + i * MINUTE}, SCORE_COLUMNS)
        for i in range(12)
    ]  # fmt: skip
    store.write(Batch(scores=quiet))
    for i in range(SPIKE_FROM - 20, N_RECORDS):  # people review the latest records; they disagree on some
        store.change(
            lambda conn, i=i: save_review(
                conn, span_id(i), claim=ANSWER, grounded=i % 3 == 0 or i < SPIKE_FROM, note=None,
                author="ana", now_ns=T0 + N_RECORDS * MINUTE,
            )
        )  # fmt: skip
    store.close()
    watcher = Watcher(db, rules=parse_rules(RULES), sinks=[])
    try:
        watcher.evaluate_once(T0 + 20 * MINUTE)
        watcher.evaluate_once(T0 + N_RECORDS * MINUTE)
        watcher.evaluate_once(T0 + (N_RECORDS + 20) * MINUTE)  # the window has gone quiet; the alert holds
    finally:
        watcher.stop()
    return db


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/pages"))
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("Debian's chromium is not installed: make system-deps", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ragtrace-pages-") as tmp:
        folder = Path(tmp)
        pages = {
            "overview": "/",
            "records": "/records",
            "records-sorted": "/records?service=shop&sort=-hallucination",
            "record": f"/records/{span_id(101)}?service=shop",
            "alert": "/alert?rule=hallucination-spike&service=shop",
            "costs": "/costs?since=0",
            "review": "/review",
            "agreement": "/agreement",
            "not-found": "/no/such/page",
        }
        for db, shots in ((_seeded(folder), pages), (folder / "empty.db", {"empty-overview": "/"})):
            collector = Collector(CollectorConfig(db=db, port=0, grpc_port=None, score=False, watch=False))
            collector.start_in_thread()
            try:
                for name, path in shots.items():
                    url = f"http://127.0.0.1:{collector.http_port}{path}"
                    _shoot(chromium, url, args.out / f"{name}.png", folder / "profile")
            finally:
                collector.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
