"""The store's write path: spans per second committed by the SQLite engine and by the PostgreSQL engine, in one
run, on the same batches.

Workload: batches of 512 RAG spans as a ragtrace app exports them (5 chunks of 1 KB, query, answer, four scores
as flat attributes and evaluation events), decoded once up front (decoding is the receivers' work, measured by
``bench/ingest.py``), then written with ``write(batch)``: one transaction a batch, returning after the commit,
as a receiver does before it acknowledges. Every batch has fresh ids.

* SQLite: ``Store`` on a file in a temp dir (WAL, ``synchronous=NORMAL``): one writer at a time, as the engine
  allows; ``--writers`` threads still take turns.
* PostgreSQL: ``PostgresStore`` on a local Debian PostgreSQL started for the run with its durable defaults
  (``fsync=on``, ``synchronous_commit=on``: every commit is flushed), ``--writers`` threads on its pool, as
  that many receiving requests of one replica.

Prints spans/s of each and the ratio PostgreSQL / SQLite (the goal: >= 0.5x), best of ``--rounds``.

``--index-cost``: instead, what the text search index (``schema.TEXT_SEARCH``, migration 5) costs each engine's
writes: the same batches into stores with it as shipped (query and answer), with the query's only, and without
it (dropped after the store opened), interleaved in each round; spans/s of each and its ratio to none. On
PostgreSQL also the index as migration 5 built it, in the database's collation (migration 10 builds it in "C").

    .venv/bin/python bench/store_write.py [--batches 24] [--writers 1 4] [--rounds 3]
    .venv/bin/python bench/store_write.py --index-cost [--writers 1]

``--arrival-cost``: what the order of arrival (``xact`` and its index on ``rag_records`` and ``scores``,
migration 8, ``_store/arrival.py``) costs PostgreSQL's writes: the same batches into stores with it as shipped
and without it (dropped after the store opened), interleaved in each round; spans/s of each and the ratio.

    .venv/bin/python bench/store_write.py --arrival-cost [--writers 1 4]

``--rollup-cost``: what keeping the rollups (``_store/rollups.py``, migration 9: ``score_hours``, ``record_hours``,
``record_quality``; migration 11: ``quality_hours``) costs each engine's writes: the same batches into stores with
them as shipped, without ``quality_hours`` alone (its triggers dropped after the store opened) and without any
(PostgreSQL: its triggers dropped; SQLite: ingest's difference turned off), interleaved in each round.

    .venv/bin/python bench/store_write.py --rollup-cost [--writers 1 4] [--engines sqlite postgresql]

``--blocks-cost``: what bounding the records' times by blocks of arrival (``schema.RECORD_BLOCKS``, migration 12,
which the text search's third step reads by) costs SQLite's writes: the same batches into stores with its triggers
as shipped and without them (dropped after the store opened), interleaved in each round.

    .venv/bin/python bench/store_write.py --blocks-cost [--writers 1]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest import SPANS_PER_BATCH, otlp_bodies  # noqa: E402  (bench/ingest.py: the same workload)
from ragtrace_collector._otlp import Batch, decode_protobuf  # noqa: E402
from ragtrace_collector._store import ingest as store_ingest  # noqa: E402
from ragtrace_collector._store import open_store  # noqa: E402
from ragtrace_collector._store.dialect import SQLITE, dialect_of  # noqa: E402
from ragtrace_collector._store.schema import (  # noqa: E402
    RAG_RECORDS,
    RECORD_BLOCKS,
    RECORD_QUALITY,
    TABLES,
    TEXT_SEARCH,
    XACT,
    TextSearch,
)

from tests.collector._postgres import running_postgres  # noqa: E402


def batches(count: int) -> list[Batch]:
    """``count`` decoded batches of ``bench/ingest.py``'s bodies (fresh ids: no batch overwrites another's rows)."""
    return [decode_protobuf(body, time.time_ns()) for body in otlp_bodies(count)]


def spans_per_second(
    open_target: Callable[[], Any], work: Sequence[Batch], writers: int, prepare: Callable[[Any], None] | None = None
) -> float:
    """Write every batch from ``writers`` threads into a freshly opened store (``prepare``d first); spans committed
    per second."""
    store = open_target()
    if prepare is not None:
        store.change(prepare)
    queue = list(work)
    lock = threading.Lock()

    def writer() -> None:
        while True:
            with lock:
                if not queue:
                    return
                batch = queue.pop()
            store.write(batch)

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    stored = store.read(lambda conn: conn.execute("SELECT count(*) FROM spans").fetchone()[0])
    store.close()
    assert stored == sum(len(b.spans) for b in work), f"stored {stored} spans"
    return sum(len(b.spans) for b in work) / elapsed


def text_index(columns: tuple[str, ...], *, collated: bool = True) -> Callable[[Any], None]:
    """A ``prepare`` that leaves the store with the text index of ``columns`` only (none for ``()``); on
    PostgreSQL, ``collated=False``: the index as migration 5 built it, of the columns in the database's collation
    (migration 10 builds it in the "C" collation)."""

    def prepare(conn: Any) -> None:
        if dialect_of(conn).name == "sqlite":
            for suffix in ("_ai", "_ad", "_au", ""):
                kind = "TABLE" if not suffix else "TRIGGER"
                conn.execute(f'DROP {kind} IF EXISTS "{TEXT_SEARCH.fts}{suffix}"')
        else:
            for column in TEXT_SEARCH.columns:
                conn.execute(f'DROP INDEX IF EXISTS "idx_{RAG_RECORDS}_{column}_trgm"')
        if columns:
            for ddl in TextSearch(RAG_RECORDS, columns).ddl(dialect_of(conn)):
                conn.execute(ddl if collated else ddl.replace(f" COLLATE {TEXT_SEARCH.COLLATION}", ""))

    return prepare


INDEXES = {
    "none": (),
    "query": ("query",),
    "query+answer (shipped)": TEXT_SEARCH.columns,
    "query+answer, db collation": TEXT_SEARCH.columns,
}
"""The variant "db collation" is PostgreSQL's index before migration 10 (SQLite has one index, measured once)."""


def index_cost(work: Sequence[Batch], writers: Sequence[int], rounds: int) -> None:
    """Spans/s of each engine with each of ``INDEXES``, best of ``rounds``, and the ratio to none."""
    with tempfile.TemporaryDirectory() as tmp, running_postgres(durable=True) as server:
        for n in writers:
            best: dict[tuple[str, str], float] = {}
            for round_ in range(rounds):
                variants = list(INDEXES) if round_ % 2 == 0 else list(reversed(INDEXES))
                for engine in ("sqlite", "postgresql"):
                    for name in variants:
                        collated = name != "query+answer, db collation"
                        if engine == "sqlite" and not collated:
                            continue
                        if engine == "sqlite":
                            path = Path(tmp) / f"i{n}-{round_}-{len(INDEXES[name])}.db"
                            target: Callable[[], Any] = lambda p=path: open_store(p)  # noqa: E731
                        else:
                            url = server.database()
                            target = lambda u=url: open_store(u)  # noqa: E731
                        rate = spans_per_second(target, work, n, text_index(INDEXES[name], collated=collated))
                        best[engine, name] = max(best.get((engine, name), 0.0), rate)
            for engine in ("sqlite", "postgresql"):
                for name in INDEXES:
                    if (engine, name) not in best:
                        continue
                    rate, none = best[engine, name], best[engine, "none"]
                    print(
                        f"writers={n} {engine:<10} text index {name:<24} {rate:>9,.0f} spans/s "
                        f"{rate / none:>6.2f}x of none",
                        flush=True,
                    )


def without_arrival(conn: Any) -> None:
    """A ``prepare`` that drops ``xact`` and its index from the arrival tables (the store before migration 8)."""
    for table in TABLES:
        if table.arrival:
            conn.execute(f'DROP INDEX IF EXISTS "idx_{table.name}_{XACT}_rowid"')
            conn.execute(f'ALTER TABLE "{table.name}" DROP COLUMN IF EXISTS "{XACT}"')


def arrival_cost(work: Sequence[Batch], writers: Sequence[int], rounds: int) -> None:
    """PostgreSQL's spans/s with and without the order of arrival, best of ``rounds``, and their ratio."""
    with running_postgres(durable=True) as server:
        shipped_or_not(
            "postgresql", "xact", lambda: functools.partial(open_store, server.database()), without_arrival, work,
            writers, rounds,
        )  # fmt: skip


def shipped_or_not(
    engine: str,
    feature: str,
    fresh: Callable[[], Callable[[], Any]],
    without: Callable[[Any], None],
    work: Sequence[Batch],
    writers: Sequence[int],
    rounds: int,
) -> None:
    """Spans/s of stores as shipped and of stores ``without`` ``feature`` (a ``prepare`` run after the store
    opened), each a ``fresh()`` store, the two interleaved in each round; prints the best of ``rounds`` of each and
    their ratio."""
    for n in writers:
        best = {"shipped": 0.0, "without": 0.0}
        for round_ in range(rounds):
            for name in list(best) if round_ % 2 == 0 else list(reversed(best)):
                prepare = without if name == "without" else None
                best[name] = max(best[name], spans_per_second(fresh(), work, n, prepare))
        shipped, none = best["shipped"], best["without"]
        print(
            f"writers={n} {engine}: with {feature} {shipped:,.0f} spans/s, without {none:,.0f} spans/s, "
            f"with / without = {shipped / none:.2f}x",
            flush=True,
        )


def without_rollups(conn: Any) -> None:
    """A ``prepare`` that drops PostgreSQL's rollup triggers (its writes as before migration 9)."""
    for short, table in (("scores", "scores"), ("records", RAG_RECORDS)):
        for event in ("insert", "update", "delete"):
            conn.execute(f'DROP TRIGGER IF EXISTS rollup_{short}_{event} ON "{table}"')
    without_quality_hours(conn)


def without_quality_hours(conn: Any) -> None:
    """A ``prepare`` that drops the triggers of ``quality_hours`` (migration 11) on either engine."""
    if dialect_of(conn) is SQLITE:
        for event in ("ai", "ad", "au"):
            conn.execute(f"DROP TRIGGER IF EXISTS rollup_quality_{event}")
        return
    for event in ("insert", "update", "delete"):
        conn.execute(f'DROP TRIGGER IF EXISTS rollup_quality_{event} ON "{RECORD_QUALITY}"')


@contextlib.contextmanager
def sqlite_without_rollups() -> Iterator[None]:
    """SQLite's ingest adds the rollups' difference itself (``rollups.Snapshot``): with no span to follow it
    skips that, as before migration 9."""
    kept = store_ingest._rollup_spans
    store_ingest._rollup_spans = lambda batch: []
    try:
        yield
    finally:
        store_ingest._rollup_spans = kept


def rollup_cost(work: Sequence[Batch], writers: Sequence[int], rounds: int, engines: Sequence[str]) -> None:
    """Each engine's spans/s with and without the rollups' triggers, best of ``rounds``, and their ratio."""
    with tempfile.TemporaryDirectory() as tmp, running_postgres(durable=True) as server:
        for n in writers:
            best: dict[tuple[str, str], float] = {}
            for round_ in range(rounds):
                variants = ["with rollups (shipped)", "without quality_hours", "without"]
                variants = variants if round_ % 2 == 0 else variants[::-1]
                for engine in engines:
                    for name in variants:
                        if engine == "sqlite":
                            path = Path(tmp) / f"r{n}-{round_}-{len(name)}.db"
                            target: Callable[[], Any] = lambda p=path: open_store(p)  # noqa: E731
                        else:
                            url = server.database()
                            target = lambda u=url: open_store(u)  # noqa: E731
                        if name == "with rollups (shipped)":
                            rate = spans_per_second(target, work, n)
                        elif name == "without quality_hours":
                            rate = spans_per_second(target, work, n, without_quality_hours)
                        elif engine == "postgresql":
                            rate = spans_per_second(target, work, n, without_rollups)
                        else:
                            with sqlite_without_rollups():
                                rate = spans_per_second(target, work, n)
                        best[engine, name] = max(best.get((engine, name), 0.0), rate)
            for engine in engines:
                shipped, none = best[engine, "with rollups (shipped)"], best[engine, "without"]
                unhoured = best[engine, "without quality_hours"]
                print(
                    f"writers={n} {engine:<10}: with rollups {shipped:,.0f} spans/s, without {none:,.0f} spans/s, "
                    f"with / without = {shipped / none:.2f}x; without quality_hours {unhoured:,.0f} spans/s, "
                    f"with / without quality_hours = {shipped / unhoured:.2f}x",
                    flush=True,
                )


def without_blocks(conn: Any) -> None:
    """A ``prepare`` that drops the triggers keeping ``schema.RECORD_BLOCKS`` (SQLite's writes before migration 12)."""
    for suffix in ("_ai", "_au"):
        conn.execute(f'DROP TRIGGER IF EXISTS "{RECORD_BLOCKS.name}{suffix}"')


def blocks_cost(work: Sequence[Batch], writers: Sequence[int], rounds: int) -> None:
    """SQLite's spans/s with and without the blocks' triggers, best of ``rounds``, and their ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = (Path(tmp) / f"b{i}.db" for i in itertools.count())
        shipped_or_not("sqlite", "blocks", lambda: functools.partial(open_store, next(paths)), without_blocks, work,
                       writers, rounds)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=24)
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--index-cost", action="store_true", help="what the text search index costs the writes")
    parser.add_argument("--arrival-cost", action="store_true", help="what PostgreSQL's order of arrival costs")
    parser.add_argument("--rollup-cost", action="store_true", help="what the rollups' triggers cost the writes")
    parser.add_argument("--blocks-cost", action="store_true", help="what SQLite's blocks of arrival cost the writes")
    parser.add_argument("--engines", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    args = parser.parse_args(argv)
    work = batches(args.batches)
    if args.blocks_cost:
        print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans; best of {args.rounds} rounds")
        blocks_cost(work, args.writers, args.rounds)
        return 0
    if args.rollup_cost:
        print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans; best of {args.rounds} rounds")
        rollup_cost(work, args.writers, args.rounds, args.engines)
        return 0
    if args.arrival_cost:
        print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans; best of {args.rounds} rounds")
        arrival_cost(work, args.writers, args.rounds)
        return 0
    if args.index_cost:
        print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans; best of {args.rounds} rounds")
        index_cost(work, args.writers, args.rounds)
        return 0
    print(f"{args.batches} batches of {SPANS_PER_BATCH} RAG spans; best of {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp, running_postgres(durable=True) as server:
        for writers in args.writers:
            best = {"sqlite": 0.0, "postgresql": 0.0}
            for round_ in range(args.rounds):
                # Alternate which engine goes first, so neither always meets a warmer machine.
                order = ("sqlite", "postgresql") if round_ % 2 == 0 else ("postgresql", "sqlite")
                for engine in order:
                    if engine == "sqlite":
                        path = Path(tmp) / f"w{writers}-r{round_}.db"
                        rate = spans_per_second(lambda p=path: open_store(p), work, writers)
                    else:
                        url = server.database()
                        rate = spans_per_second(lambda u=url: open_store(u), work, writers)
                    best[engine] = max(best[engine], rate)
            ratio = best["postgresql"] / best["sqlite"]
            print(
                f"writers={writers}: SQLite {best['sqlite']:,.0f} spans/s, PostgreSQL {best['postgresql']:,.0f} "
                f"spans/s, PostgreSQL / SQLite = {ratio:.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
