"""The PostgreSQL write path both ways: the store's own (psycopg 3, one SQL text) against SQLAlchemy Core, in one
run, on the same batches and the same server.

Issue 24 asked to choose between SQLAlchemy Core + Alembic and psycopg 3 with the store's own SQL, and to measure
the write path both ways. The workload is bench/store_write.py's (batches of 512 RAG spans as an app exports them,
decoded once up front); each batch is one transaction, committed before the next, into a database the store
migrated (so both write the same tables, keys and indexes):

* ``store``: ``PostgresStore.write``: the rows ``COPY``-ed into a temporary staging table, then one upsert per table
  from it (the store's merge rules: a retried unscored span keeps the collector's decision, scores from spans and
  from log records merge).
* ``sqlalchemy``: SQLAlchemy Core on the same psycopg 3 driver (``postgresql+psycopg://``), the tables reflected,
  ``insert(...).on_conflict_do_update(...)`` with every column taken from ``excluded`` (plain last-write-wins:
  *less* work than the store's merge), executed with a list of rows, which SQLAlchemy 2 sends as batched
  multi-row ``INSERT ... VALUES`` ("insertmanyvalues").

Prints spans/s of each, best of ``--rounds`` (alternating which goes first), and the ratio store / SQLAlchemy.
SQLAlchemy is not a dependency of ragtrace; it is in the test environment through LangChain. Without it, says so.

    .venv/bin/python bench/store_engine_choice.py [--batches 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragtrace_collector._otlp import Batch  # noqa: E402
from ragtrace_collector._store import open_store  # noqa: E402
from ragtrace_collector._store.schema import TABLES  # noqa: E402
from store_write import batches  # noqa: E402  (bench/store_write.py: the same workload)

from tests.collector._postgres import running_postgres  # noqa: E402

_KEYS = {table.name: table.pk for table in TABLES}


def with_store(url: str, work: Sequence[Batch]) -> float:
    """Spans per second committed by ``PostgresStore.write``, one batch a transaction."""
    store = open_store(url)
    started = time.perf_counter()
    for batch in work:
        store.write(batch)
    elapsed = time.perf_counter() - started
    store.close()
    return sum(len(b.spans) for b in work) / elapsed


def with_sqlalchemy(url: str, work: Sequence[Batch]) -> float:
    """Spans per second committed by SQLAlchemy Core upserts into the same tables, one batch a transaction."""
    import sqlalchemy as sa
    from sqlalchemy.dialects.postgresql import insert

    open_store(url).close()  # the schema, as the store makes it
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    metadata = sa.MetaData()
    metadata.reflect(engine, only=["spans", "rag_records", "scores"])
    statements: dict[str, Any] = {}
    for name in ("spans", "rag_records", "scores"):
        table = metadata.tables[name]
        upsert = insert(table)
        keys = _KEYS[name]
        statements[name] = upsert.on_conflict_do_update(
            index_elements=list(keys),
            set_={c.name: upsert.excluded[c.name] for c in table.columns if c.name not in keys and c.name != "rowid"},
        )
    started = time.perf_counter()
    for batch in work:
        with engine.begin() as conn:
            for name, rows in (("spans", batch.spans), ("rag_records", batch.rag_records), ("scores", batch.scores)):
                if rows:
                    conn.execute(statements[name], [dict(row) for row in rows])
    elapsed = time.perf_counter() - started
    engine.dispose()
    return sum(len(b.spans) for b in work) / elapsed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        import sqlalchemy
    except ImportError:
        print("SQLAlchemy is not installed here: `pip install sqlalchemy` to compare (ragtrace does not need it)")
        return 1
    work = batches(args.batches)
    print(f"{args.batches} batches of {len(work[0].spans)} RAG spans; SQLAlchemy {sqlalchemy.__version__}; "
          f"best of {args.rounds} rounds")  # fmt: skip
    best = {"store": 0.0, "sqlalchemy": 0.0}
    with running_postgres(durable=True) as server:
        for round_ in range(args.rounds):
            order = ("store", "sqlalchemy") if round_ % 2 == 0 else ("sqlalchemy", "store")
            for way in order:
                url = server.database()
                rate = with_store(url, work) if way == "store" else with_sqlalchemy(url, work)
                stored = server.psql(url, "SELECT count(*) FROM spans")[0][0]
                assert int(stored) == sum(len(b.spans) for b in work), f"{way} stored {stored} spans"
                best[way] = max(best[way], rate)
    print(
        f"store (psycopg 3, COPY + upsert): {best['store']:,.0f} spans/s; SQLAlchemy Core upsert: "
        f"{best['sqlalchemy']:,.0f} spans/s; store / SQLAlchemy = {best['store'] / best['sqlalchemy']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
