"""How fast are the triage pages on a 1,000,000-record store?

Builds a store with the collector's own schema and indexes (``ragtrace_collector._store.Store``): N RAG
records a second apart over two services, each with a faithfulness and a hallucination score (one in five
hallucinated, with claims) and its span's attributes (``metadata`` with a user), plus an alert. Then
loads each page through the real Starlette app (``triage_routes``, in process: routing, the SQL on a
read-only connection, rendering) ``--runs`` times and prints the p50 and p95 of each, for the big store
and for a 10,000-record store built the same way in the same run (each record's metadata rows filled after, as
the receivers would have written them): the ratio says how the page scales
(1.0: it does not grow with the store; a query riding its index reads a page's worth of rows whatever
the store holds).

The text search's index (``schema.TEXT_SEARCH``, migration 5) is dropped while the big store is filled and
the text searches are measured without it first ("before": the scan of the previous collector), then it is built
over the records (timed: what the upgrade of such a store costs) and every page is measured with it.

On SQLite the text pages are measured again with the search's third step reading the matches by blocks of
arrival (``schema.RECORD_BLOCKS``, as shipped) and without (every match's record read and sorted, as before schema
version 12), the loads alternating, so their ratio is of one machine at one time.

The text and metadata pages' reads are measured apart too (``list_records`` in a snapshot of its own,
connection included), beside what opening and closing a snapshot alone costs. The pages read through the opened
store, as ``serve`` gives it to them: on PostgreSQL a pooled read connection (``PostgresStore.lend_reader``); the
reads are measured on a connection of their own too (a new server process each), the ratio saying what the pool
saves.

``--store postgresql``: the same on a throwaway local PostgreSQL (Debian's, ``tests/collector/_postgres.py``, with
its durable defaults), filled with ``COPY`` and vacuumed (``VACUUM (ANALYZE)``), through the same pages.

    python bench/triage_page.py                  # 1,000,000 records (about 2 minutes to build)
    python bench/triage_page.py --records 200000 --runs 20
    python bench/triage_page.py --store postgresql
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/collector/_postgres.py: the throwaway server

from machine import loop_ms  # noqa: E402
from ragtrace_collector._report import page_routes  # noqa: E402
from ragtrace_collector._store import LendsReaders, Store, metadata, open_store, rollups, triage  # noqa: E402
from ragtrace_collector._store.arrival import Arrival  # noqa: E402
from ragtrace_collector._store.connection import snapshot  # noqa: E402
from ragtrace_collector._store.dialect import dialect_of  # noqa: E402
from ragtrace_collector._store.schema import RAG_RECORDS, TEXT_SEARCH  # noqa: E402
from ragtrace_collector._store.triage import last_row, list_records  # noqa: E402
from ragtrace_collector._triage import triage_routes  # noqa: E402
from ragtrace_collector._triage._filters import parse_filter  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.datastructures import QueryParams  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from tests.collector._postgres import running_postgres  # noqa: E402

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


def drop_text_index(conn: Any) -> None:
    """The store as the previous collector had it: no index of the text search."""
    if dialect_of(conn).name == "sqlite":
        for suffix in ("_ai", "_ad", "_au"):
            conn.execute(f'DROP TRIGGER IF EXISTS "{TEXT_SEARCH.fts}{suffix}"')
        conn.execute(f'DROP TABLE IF EXISTS "{TEXT_SEARCH.fts}"')
    else:
        for column in TEXT_SEARCH.columns:
            conn.execute(f'DROP INDEX IF EXISTS "idx_{RAG_RECORDS}_{column}_trgm"')


def build_text_index(conn: Any) -> None:
    """Migration 3's index, built over the records the store holds."""
    for ddl in TEXT_SEARCH.ddl(dialect_of(conn)):
        conn.execute(ddl)
    if dialect_of(conn).name != "sqlite":
        conn.execute(f"ANALYZE {RAG_RECORDS}")


def build(path: Path, n: int) -> None:
    """A store of ``n`` records at ``path``, written in batches in one transaction per batch, without the text
    search index."""
    store = Store(path)
    conn = store.db.conn
    with conn:
        drop_text_index(conn)
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
    with conn:
        metadata.fill(conn)  # what the receivers write with each record (the rows above bypassed them)
        rollups.backfill(conn, dialect_of(conn))  # and what SQLite's ingest adds up with each batch
        rollups.backfill_quality_hours(conn)
    store.close()


def _write(conn: object, batch: list, rag_sql: str, score_sql: str, span_sql: str) -> None:  # type: ignore[type-arg]
    with conn:  # type: ignore[attr-defined]
        conn.executemany(rag_sql, [b[0] for b in batch])  # type: ignore[attr-defined]
        conn.executemany(score_sql, [s for b in batch for s in b[1]])  # type: ignore[attr-defined]
        conn.executemany(span_sql, [b[2] for b in batch])  # type: ignore[attr-defined]


_RAG = ("span_id", "trace_id", "service", "route", "time_ns", "query", "answer", "chunks", "decision", "judge",
        "calls", "prompt_tokens", "completion_tokens", "seconds")  # fmt: skip
_SCORE = ("span_id", "metric", "value", "label", "trace_id", "service", "route", "time_ns", "source", "claims")
_SPAN = ("span_id", "trace_id", "name", "service", "start_ns", "end_ns", "attributes")


def build_postgres(url: str, n: int) -> None:
    """A PostgreSQL store of ``n`` records at ``url`` (the collector's schema, migrated by opening it), filled by
    ``COPY`` in one transaction, without the text search index, then ``VACUUM (ANALYZE)``: the state autovacuum
    keeps a store in (its visibility map set, its statistics read), so autovacuum's first pass over a million fresh
    rows does not fall within the measurements, on the core the pages are loaded from."""
    store: Any = open_store(url)
    with store.connection() as conn:
        drop_text_index(conn)
        raw = conn.raw
        with raw.transaction(), raw.cursor() as cursor:
            with cursor.copy(f"COPY rag_records ({', '.join(_RAG)}) FROM STDIN") as copy:
                for rag, _, _ in _rows(n):
                    copy.write_row(rag)
            with cursor.copy(f"COPY scores ({', '.join(_SCORE)}) FROM STDIN") as copy:
                for _, scores, _ in _rows(n):
                    for score in scores:
                        copy.write_row(score)
            with cursor.copy(f"COPY spans ({', '.join(_SPAN)}) FROM STDIN") as copy:
                for _, _, span in _rows(n):
                    copy.write_row(span)
            cursor.execute(
                "INSERT INTO alerts (time_ns, rule, kind, metric, service, state, previous_state, value, threshold, "
                "message, sinks) VALUES (%s, 'hallucination-spike', 'spike', 'hallucination', 'shop', 'ALERT', 'OK', "
                "9.0, 8.0, 'x', '[]')",
                (T0 + (n - 100) * NS,),
            )
        with raw.transaction():
            metadata.fill(conn)  # what the receivers write with each record (the rows above bypassed them)
        raw.execute("VACUUM (ANALYZE)")
    store.close()


def pages(n: int, newest: Arrival) -> dict[str, str]:
    """The page loads measured: every filter and order of the list, deep paging, a record, an alert, a live poll
    (three records new since the page, ``newest`` being the store's newest row), the overview over all time and
    its last day, the costs page, the review queue and the agreement."""
    middle = T0 + (n // 2) * NS
    return {
        "list, newest first": "/records",
        "list, one service": "/records?service=docs",
        "list, hallucination>0.5 (20 %)": "/records?score=hallucination%3E0.5",
        "list, two score bounds": "/records?score=hallucination%3E0.5,faithfulness%3C0.5&service=shop",
        "list, metadata user": "/records?meta=user%3Auser7",
        "list, a time window": f"/records?since={middle}&until={middle + 3600 * NS}",
        "list, a page half way back": f"/records?before={middle}:{'f' * 16}",
        "list, oldest first": "/records?sort=time",
        "list, by service": "/records?sort=service",
        "list, by hallucination, highest first": "/records?sort=-hallucination",
        "list, by faithfulness, one service": "/records?sort=faithfulness&service=docs",
        "record view": f"/records/{n - 5:016x}",
        "alert view": "/alerts/1",
        "live poll": f"/api/records?after_row={Arrival(newest.xact, newest.row - 3).text()}",
        "overview, all time": "/",
        "overview, the last day": f"/?since={T0 + max(0, n - 86_400) * NS}",
        "costs, the default week": "/costs",
        "review queue": "/review",
        "agreement": "/agreement",
        **TEXT_PAGES,
    }


TEXT_PAGES = {
    "list, text search (rare, old)": "/records?q=Question%2012",
    "list, text search (common)": "/records?q=Paris",
    "list, text search (absent)": "/records?q=Lisbon",
}
"""The pages measured before the text index is built too."""


BUDGET_SECONDS = 120.0
"""A page's reads may take this long here (the collector stops them at 2 s): the scans measured before the index
would be stopped on a busy machine."""


def p50_p95(times: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile (the nearest rank at or below) of ``times``."""
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def measure(target: Any, wanted: dict[str, str], runs: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 seconds of each page of ``wanted`` (name: URL), served by the triage routes over ``target``."""
    out: dict[str, tuple[float, float]] = {}
    # The triage pages, then the overview (``page_routes``, at the collector's own 2 s budget: a page past it
    # answers 503 and fails the run, as a person would see it).
    routes = [*triage_routes(target, query_seconds=BUDGET_SECONDS), *page_routes(target)]
    with TestClient(Starlette(routes=routes)) as client:
        for name, url in wanted.items():
            assert client.get(url).status_code == 200, url  # warm: the page cache and the connection path
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                reply = client.get(url)
                times.append(time.perf_counter() - start)
                assert reply.status_code == 200
            out[name] = p50_p95(times)
    return out


SEARCH_PAGES = ("list, metadata user", *TEXT_PAGES)
"""The pages whose reads are measured apart too (the goal: 50 ms p95 at 1,000,000 records)."""


def measure_reads(target: Any, wanted: dict[str, str], runs: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 seconds of the list's reads alone for each page of ``wanted``: ``list_records`` in a snapshot of
    its own (connection included, as a page opens one), without the routes and the rendering; and under
    ``"connection"``, a snapshot opened and closed with nothing read (what each page pays for its connection)."""
    out: dict[str, tuple[float, float]] = {}
    works: dict[str, Callable[[Any], object]] = {"connection": lambda conn: None}
    for name, url in wanted.items():
        f = parse_filter(QueryParams(url.partition("?")[2]))
        works[name] = functools.partial(list_records, f=f)
    for name, work in works.items():
        times = []
        for i in range(runs + 1):
            start = time.perf_counter()
            with snapshot(target) as conn:
                work(conn)
            if i:  # the first warms the caches
                times.append(time.perf_counter() - start)
        out[name] = p50_p95(times)
    return out


def measure_blocks(target: Any, wanted: dict[str, str], runs: int) -> dict[str, tuple[float, float]]:
    """SQLite: p95 seconds of each page of ``wanted`` with the search's third step read by blocks of arrival
    (``schema.RECORD_BLOCKS``, schema version 12) and without them (every match's record read and sorted, as
    before), the two loads alternating so that both meet the same machine."""
    out: dict[str, tuple[float, float]] = {}
    kept = triage._blocks_kept
    with TestClient(Starlette(routes=triage_routes(target, query_seconds=BUDGET_SECONDS))) as client:
        for name, url in wanted.items():
            times: dict[bool, list[float]] = {True: [], False: []}
            for i in range(2 * runs + 2):
                blocks = i % 2 == 0
                triage._blocks_kept = kept if blocks else lambda conn: False  # type: ignore[assignment]
                try:
                    start = time.perf_counter()
                    assert client.get(url).status_code == 200, url
                    if i >= 2:  # the first of each warms the caches
                        times[blocks].append(time.perf_counter() - start)
                finally:
                    triage._blocks_kept = kept  # type: ignore[assignment]
            out[name] = (p50_p95(times[True])[1], p50_p95(times[False])[1])
    return out


def run(target: Any, n: int, runs: int, fill: Callable[[], None], *, before: bool) -> dict[str, Any]:
    """Fill the store ``target`` with ``n`` records; measure the text pages without the text index when
    ``before``, build it (timed), measure every page. Returns the figures by name."""
    start = time.perf_counter()
    fill()
    print(f"built {n:,} records in {time.perf_counter() - start:.0f} s", flush=True)
    store: Any = open_store(target)
    figures: dict[str, Any] = {}
    try:
        if before:
            figures["before"] = measure(target, TEXT_PAGES, runs)
        start = time.perf_counter()
        store.change(build_text_index)
        figures["index_seconds"] = time.perf_counter() - start
        print(f"text index built over {n:,} records in {figures['index_seconds']:.0f} s", flush=True)
        every = pages(n, store.read(last_row))
        figures["speed"] = [loop_ms()]
        # Through the store, as ``serve`` hands it to the pages: a PostgresStore lends pooled read connections.
        figures["after"] = measure(store, every, runs)
        searched = {name: every[name] for name in SEARCH_PAGES}
        figures["reads"] = measure_reads(store, searched, runs)
        if isinstance(store, LendsReaders):
            figures["reads_own"] = measure_reads(target, searched, runs)  # a connection of its own each time
        else:
            figures["blocks"] = measure_blocks(store, {name: every[name] for name in TEXT_PAGES}, runs)
        figures["speed"].append(loop_ms())
    finally:
        store.close()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--baseline", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        server = None
        if args.store == "postgresql":
            server = stack.enter_context(running_postgres(durable=True))
        for n in (args.baseline, args.records):
            if server is not None:
                target: Any = server.database()
                fill = functools.partial(build_postgres, target, n)
            else:
                target = Path(tmp) / f"store-{n}.db"
                fill = functools.partial(build, target, n)
            results[n] = run(target, n, args.runs, fill, before=n == args.records)
    big, small = results[args.records], results[args.baseline]
    print(f"\n{args.store}: {args.records:,} records vs {args.baseline:,}, {args.runs} loads a page")
    for n, figures in results.items():
        first, last = figures["speed"]
        print(f"the machine at {n:,} records: a fixed Python loop {first:.0f} ms before the pages, {last:.0f} ms after")
    print(f"{'page':<38}{'p50 ms':>9}{'p95 ms':>9}   {f'p95 at {args.baseline:,}':>14}{'ratio':>8}")
    for name, (p50, p95) in big["after"].items():
        base = small["after"][name][1]
        print(f"{name:<38}{p50 * 1e3:>9.1f}{p95 * 1e3:>9.1f}   {base * 1e3:>14.1f}{p95 / base:>8.2f}")
    print(f"\ntext search at {args.records:,}: p95 without the index (before) and with it (after), same run")
    for name, (_, p95_before) in big["before"].items():
        p95_after = big["after"][name][1]
        print(f"{name:<38}{p95_before * 1e3:>9.1f} ms -> {p95_after * 1e3:>7.1f} ms   {p95_before / p95_after:>7.1f}x")
    print(f"building the index over {args.records:,} records: {big['index_seconds']:.0f} s")
    print(f"\nthe list's reads alone (list_records in a snapshot of its own, connection included), {args.runs} loads")
    print(f"{'reads of':<38}{'p50 ms':>9}{'p95 ms':>9}   {f'p95 at {args.baseline:,}':>14}{'ratio':>8}{'page p95':>10}")
    for name, (p50, p95) in big["reads"].items():
        base = small["reads"][name][1]
        page = f"{big['after'][name][1] * 1e3:>10.1f}" if name in big["after"] else ""
        print(f"{name:<38}{p50 * 1e3:>9.1f}{p95 * 1e3:>9.1f}   {base * 1e3:>14.1f}{p95 / base:>8.2f}{page}")
    if "blocks" in big:
        print("\ntext search pages, p95 with the third step read by blocks of arrival and without, loads alternating")
        print(f"{'page':<38}{'blocks ms':>10}{'without ms':>11}{'ratio':>8}   at {args.baseline:,}: ratio")
        for name, (blocks, without) in big["blocks"].items():
            small_ratio = small["blocks"][name][0] / small["blocks"][name][1]
            ratio = blocks / without
            print(f"{name:<38}{blocks * 1e3:>10.1f}{without * 1e3:>11.1f}{ratio:>8.2f}   {small_ratio:>13.2f}")
    if "reads_own" in big:
        print(f"\nthe same reads on a pooled connection against a connection of their own, {args.runs} loads")
        print(f"{'reads of':<38}{'pooled p95':>11}{'own p95':>9}{'ratio':>8}   at {args.baseline:,}: ratio")
        for name, (_, p95) in big["reads"].items():
            own = big["reads_own"][name][1]
            small_ratio = small["reads"][name][1] / small["reads_own"][name][1]
            print(f"{name:<38}{p95 * 1e3:>11.1f}{own * 1e3:>9.1f}{p95 / own:>8.2f}   {small_ratio:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
