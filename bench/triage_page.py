"""How fast are the triage pages on a 1,000,000-record store?

Builds a store with the collector's own schema and indexes (``ragtrace_collector._store.Store``): N RAG
records a second apart over two services, each with a faithfulness and a hallucination score (one in five
hallucinated, with claims) and its span's attributes (``metadata`` with a user), plus an alert. Then
loads each page through the real Starlette app (``page_routes``, in process: routing, the SQL on a
read-only connection, rendering) ``--runs`` times and prints the p50 and p95 of each, for the big store
and for a 10,000-record store built the same way in the same run: the ratio says how the page scales
(1.0: it does not grow with the store; a query riding its index reads a page's worth of rows whatever
the store holds).

    python bench/triage_page.py                  # 1,000,000 records (about 2 minutes to build)
    python bench/triage_page.py --records 200000 --runs 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ragtrace_collector._report import page_routes
from ragtrace_collector._store import Store
from starlette.applications import Starlette
from starlette.testclient import TestClient

NS = 1_000_000_000
T0 = 1_800_000_000 * NS
CLAIMS = json.dumps(
    [
        {"claim": "The Eiffel Tower is in Paris.", "verdict": "supported", "chunk": 0, "support": 0.93},
        {"claim": "It was completed in 1923.", "verdict": "contradicted", "chunk": 0, "support": 0.04},
    ]
)
CHUNKS = json.dumps(
    [{"id": "doc-1", "content": "The Eiffel Tower is in Paris. It was completed in 1889.", "score": 0.9}]
)


def _rows(n: int) -> Iterator[tuple[tuple[object, ...], list[tuple[object, ...]], tuple[object, ...]]]:
    for i in range(n):
        sid, t = f"{i:016x}", T0 + i * NS
        service = "docs" if i % 4 == 3 else "shop"
        bad = i % 5 == 0
        faith = 0.3 if bad else 0.85
        rag = (sid, sid * 2, service, "/ask", t, f"Question {i}: where is the Eiffel Tower?",
               "It is in Paris." if not bad else "It is in Rome.", CHUNKS, "evaluated", "offline:minilm-int8",
               1, 0, 0, 0.01)  # fmt: skip
        scores = [
            (sid, "faithfulness", faith, "faithful" if not bad else "unfaithful", sid * 2, service, "/ask", t, "app",
             CLAIMS if bad else None),
            (sid, "hallucination", 1 - faith, "grounded" if not bad else "hallucinated", sid * 2, service, "/ask", t,
             "app", CLAIMS if bad else None),
        ]  # fmt: skip
        metadata = json.dumps({"user": f"user{i % 1000}"})
        span = (sid, sid * 2, "answer", service, t, t, json.dumps({"metadata": metadata}))
        yield rag, scores, span


def build(path: Path, n: int) -> None:
    """A store of ``n`` records at ``path``, written in batches in one transaction per batch."""
    store = Store(path)
    conn = store.db.conn
    rag_sql = (
        "INSERT INTO rag_records (span_id, trace_id, service, route, time_ns, query, answer, chunks, decision, judge, "
        "calls, prompt_tokens, completion_tokens, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    score_sql = (
        "INSERT INTO scores (span_id, metric, value, label, trace_id, service, route, time_ns, source, claims) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    span_sql = (
        "INSERT INTO spans (span_id, trace_id, name, service, start_ns, end_ns, attributes) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    batch: list[tuple[tuple[object, ...], list[tuple[object, ...]], tuple[object, ...]]] = []
    for item in _rows(n):
        batch.append(item)
        if len(batch) == 50_000:
            _write(conn, batch, rag_sql, score_sql, span_sql)
            batch = []
    _write(conn, batch, rag_sql, score_sql, span_sql)
    conn.execute(
        "INSERT INTO alerts (time_ns, rule, kind, metric, service, state, previous_state, value, threshold, "
        "message, sinks) VALUES (?, 'hallucination-spike', 'spike', 'hallucination', 'shop', 'ALERT', 'OK', "
        "9.0, 8.0, 'x', '[]')",
        (T0 + (n - 100) * NS,),
    )
    conn.commit()
    store.close()


def _write(conn: object, batch: list, rag_sql: str, score_sql: str, span_sql: str) -> None:  # type: ignore[type-arg]
    with conn:  # type: ignore[attr-defined]
        conn.executemany(rag_sql, [b[0] for b in batch])  # type: ignore[attr-defined]
        conn.executemany(score_sql, [s for b in batch for s in b[1]])  # type: ignore[attr-defined]
        conn.executemany(span_sql, [b[2] for b in batch])  # type: ignore[attr-defined]


def pages(n: int) -> dict[str, str]:
    """The page loads measured: every filter of the list, deep paging, a record, an alert, a live poll."""
    middle = T0 + (n // 2) * NS
    return {
        "list, newest first": "/records",
        "list, one service": "/records?service=docs",
        "list, hallucination>0.5 (20 %)": "/records?score=hallucination%3E0.5",
        "list, two score bounds": "/records?score=hallucination%3E0.5,faithfulness%3C0.5&service=shop",
        "list, metadata user": "/records?meta=user%3Auser7",
        "list, a time window": f"/records?since={middle}&until={middle + 3600 * NS}",
        "list, a page half way back": f"/records?before={middle}:{'f' * 16}",
        "record view": f"/records/{n - 5:016x}",
        "alert view": "/alerts/1",
        "live poll": f"/api/records?after={T0 + (n - 3) * NS}:{n - 3:016x}",
        "list, text search (scan)": "/records?q=Question%2012",
    }


def measure(path: Path, n: int, runs: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 seconds of each page of ``pages(n)``."""
    store = Store(path)
    out: dict[str, tuple[float, float]] = {}
    with TestClient(Starlette(routes=page_routes(store))) as client:
        for name, url in pages(n).items():
            assert client.get(url).status_code == 200, url  # warm: the page cache and the connection path
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                reply = client.get(url)
                times.append(time.perf_counter() - start)
                assert reply.status_code == 200
            times.sort()
            out[name] = (statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))])
    store.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for n in (args.baseline, args.records):
            path = Path(tmp) / f"store-{n}.db"
            start = time.perf_counter()
            build(path, n)
            size = path.stat().st_size / 2**20
            print(f"built {n:,} records in {time.perf_counter() - start:.0f} s ({size:,.0f} MiB)", flush=True)
            results[n] = measure(path, n, args.runs)
    big, small = results[args.records], results[args.baseline]
    print(f"\n{'page':<38}{'p50 ms':>9}{'p95 ms':>9}   {f'p95 at {args.baseline:,}':>14}{'ratio':>8}")
    for name in big:
        p50, p95 = big[name]
        print(
            f"{name:<38}{p50 * 1e3:>9.1f}{p95 * 1e3:>9.1f}   {small[name][1] * 1e3:>14.1f}{p95 / small[name][1]:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
