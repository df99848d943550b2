"""What the costs page's default week costs by what it draws, not by what the store holds.

``bench/triage_page.py`` compares each page on 1,000,000 records with the same page on 10,000 built the same way,
a record a second: the small store's newest week is its 2.8 hours, three hourly points a chart, where the big
store's is a whole week, 169 of them. This measures the page over three stores, in one run: the 10,000 records a
second apart, 10,000 a minute apart (the same week as the big store, drawn the same), and ``--records`` a second
apart. The ratio of the big store to the second says what the store's size costs the page.

    .venv/bin/python bench/costs_week.py [--records 1000000] [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import triage_page  # the same stores as the triage benchmark (bench/ on the path above)
from ragtrace_collector._triage import triage_routes
from starlette.applications import Starlette
from starlette.testclient import TestClient


def costs_page(target: Path, runs: int) -> tuple[float, float, int]:
    """p50 and p95 ms of ``/costs`` (its default week) over ``target``, and the page's size in bytes."""
    with TestClient(Starlette(routes=triage_routes(target, query_seconds=60))) as client:
        client.get("/costs")
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            reply = client.get("/costs")
            times.append((time.perf_counter() - start) * 1e3)
            assert reply.status_code == 200
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))], len(reply.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    second = triage_page.NS
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        for name, n, spacing in (
            ("10,000, a second apart (2.8 hours)", 10_000, second),
            ("10,000, a minute apart (a week)", 10_000, 61 * second),
            (f"{args.records:,}, a second apart", args.records, second),
        ):
            triage_page.NS = spacing  # the records' spacing (``triage_page._rows`` reads it)
            stores[name] = Path(tmp) / f"{len(stores)}.db"
            triage_page.build(stores[name], n)
        triage_page.NS = second
        found = {name: costs_page(path, args.runs) for name, path in stores.items()}
    for name, (p50, p95, size) in found.items():
        print(f"{name:<36} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  {size:,} bytes")
    week, big = found["10,000, a minute apart (a week)"], found[f"{args.records:,}, a second apart"]
    print(f"p95 of {args.records:,} against 10,000 over the same week: {big[1] / week[1]:.2f}x")


if __name__ == "__main__":
    main()
