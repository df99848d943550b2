"""The pages' text search (``q=``) rides an index on both engines (issue 24): FTS5 trigram on SQLite, ``pg_trgm``
GIN on PostgreSQL. It finds what reading every record found, the engines' plans use the index, an older store gets
the index on upgrade with its rows in it, and every write (insert, update, retention's delete) keeps it in step."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import StoreError, is_postgres, migrations, triage
from ragtrace_collector._store import open_store as open_target
from ragtrace_collector._store.dialect import POSTGRESQL
from ragtrace_collector._store.postgres import connect_postgres
from ragtrace_collector._store.schema import RAG_COLUMNS, RECORD_BLOCKS, TEXT_SEARCH
from ragtrace_collector._triage._filters import RecordFilter

from tests.collector._postgres import PostgresServer
from tests.collector._stores import rows, whole_row

NS = 1_000_000_000
T0 = 1_800_000_000 * NS

# (query, answer): case, LIKE's wildcards and escape, FTS5's quote, non-ASCII text, a long answer.
TEXTS = [
    ("Where is the Eiffel Tower?", "It is in Paris."),
    ("WHERE IS THE LOUVRE?", "in paris, on the right bank"),
    ("100% sure?", "a_b and a-b"),
    ('He said "hello"', "back\\slash"),
    ("Ünïcödé straße", "façade café"),
    ("Short", "ok"),
    (None, "an answer without a query"),
    ("the query", None),
    ("Question 12: the tower", "x" * 3000 + " needle " + "y" * 3000),
]
SEARCHES = [
    "paris", "PARIS", "Paris.", "eiffel tower", "100%", "%", "0% s", "a_b", "_", "\\", "back\\slash", '"hello"',
    '"', "straße", "façade café", "ok", "o", "zz", "needle", "x needle y", "Question 12:", "nothing like it",
    "the", "answer without",
]  # fmt: skip
"""Texts of 3 characters or more go through the index; "o", "%", "_", "\\", '"', "ok", "zz" do not."""


def _record(i: int, query: str | None, answer: str | None) -> dict[str, Any]:
    return whole_row(
        {"span_id": f"{i:016x}", "trace_id": f"{i:032x}", "service": "shop", "route": "/ask",
         "time_ns": T0 + i * NS, "query": query, "answer": answer, "decision": "evaluated"},
        RAG_COLUMNS,
    )  # fmt: skip


def _found(text: str) -> list[str]:
    """What a read of every record finds: ``text`` in the query or the answer, ASCII letters in any case
    (SQLite's LIKE; PostgreSQL's ILIKE agrees on these texts), newest first."""
    needle = text.lower()
    hits = [
        i
        for i, (query, answer) in enumerate(TEXTS)
        if any(needle in _ascii_lower(t) for t in (query, answer) if t is not None)
    ]
    return [f"{i:016x}" for i in sorted(hits, reverse=True)]


def _ascii_lower(text: str) -> str:
    return text.translate({c: c + 32 for c in range(ord("A"), ord("Z") + 1)})


def _listed(store: Any, f: RecordFilter) -> list[str]:
    return [r["span_id"] for r in store.read(triage.list_records, f).records]


@pytest.mark.parametrize(
    ("walk_rows", "probe_rows", "few_rows"),
    [(triage._WALK_ROWS, triage._PROBE_ROWS, 0), (2, 5, 0), (3, 3, 0), (0, 0, 0), (2, 5, triage._FEW_ROWS)],
    ids=["defaults", "walk-window-index", "walk-then-index", "index-only", "reckoned-rare"],
)
def test_search_finds_what_reading_every_record_found(
    open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, walk_rows: int, probe_rows: int, few_rows: int
) -> None:
    """Each of the search's steps (the newest records read; the index among the newest; the index over every
    record, and on PostgreSQL that one at once for a text the planner reckons rare: here every text, in a small
    store) finds the same records, page by page, on both engines, whichever step fills the page."""
    monkeypatch.setattr(triage, "_WALK_ROWS", walk_rows)
    monkeypatch.setattr(triage, "_PROBE_ROWS", probe_rows)
    monkeypatch.setattr(triage, "_FEW_ROWS", few_rows)
    store = open_store()
    store.write(Batch(rag_records=[_record(i, q, a) for i, (q, a) in enumerate(TEXTS)]))
    for text in SEARCHES:
        assert _listed(store, RecordFilter(text=text, limit=100)) == _found(text), text
        # Paged two at a time: the keyset pages join to the same list.
        paged: list[str] = []
        f: RecordFilter | None = RecordFilter(text=text, limit=2)
        while f is not None:
            page = store.read(triage.list_records, f)
            paged += [r["span_id"] for r in page.records]
            f = page.next
        assert paged == _found(text), text


@pytest.mark.parametrize(("walk_rows", "probe_rows"), [(2, 5), (0, 7)], ids=["walk-window-index", "window-index"])
def test_records_of_one_time_are_listed_whole_across_the_steps(
    open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, walk_rows: int, probe_rows: int
) -> None:
    """Records that share a time straddle the newest records' bound: each step still lists them by span id, none
    left out, although they arrived (rowid) in another order than their span ids."""
    monkeypatch.setattr(triage, "_WALK_ROWS", walk_rows)
    monkeypatch.setattr(triage, "_PROBE_ROWS", probe_rows)
    monkeypatch.setattr(triage, "_FEW_ROWS", 0)  # PostgreSQL: the steps, not the index at once
    store = open_store()
    order = [7, 2, 9, 0, 5, 11, 3, 8, 1, 10, 6, 4]  # arrival order; span ids by number
    records = [_record(i, f"same time {i}", "needle" if i % 3 else "hay") for i in order]
    for record in records:
        record["time_ns"] = T0 + (NS if record["span_id"] >= f"{8:016x}" else 0)  # 8..11 newer, the rest one time
    store.write(Batch(rag_records=records))
    expected = [f"{i:016x}" for i in sorted((i for i in order if i % 3), reverse=True)]
    for limit in (1, 2, 3, 50):
        paged: list[str] = []
        f: RecordFilter | None = RecordFilter(text="needle", limit=limit)
        while f is not None:
            page = store.read(triage.list_records, f)
            paged += [r["span_id"] for r in page.records]
            f = page.next
        assert paged == expected, limit


@pytest.mark.parametrize("probe_rows", [triage._PROBE_ROWS, 0], ids=["window", "index-only"])
def test_unicode_case_stays_as_like_has_it_on_both_engines(
    open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, probe_rows: int
) -> None:
    """The trigram indexes fold all of Unicode's case (and PostgreSQL's ILIKE would too in a C.UTF-8 database);
    the search keeps LIKE's, which folds ASCII's only, on both engines."""
    monkeypatch.setattr(triage, "_PROBE_ROWS", probe_rows)
    store = open_store()
    store.write(Batch(rag_records=[_record(0, "ÉCOLE normale", None), _record(1, "école normale", None)]))
    assert _listed(store, RecordFilter(text="école")) == [f"{1:016x}"]
    assert _listed(store, RecordFilter(text="ÉCOLE")) == [f"{0:016x}"]
    assert _listed(store, RecordFilter(text="cOLE NORMALE")) == [f"{1:016x}", f"{0:016x}"]
    assert _listed(store, RecordFilter(text="NORMALE")) == [f"{1:016x}", f"{0:016x}"]


def _statements(store: Any, f: RecordFilter) -> list[str]:
    """The SQL ``list_records`` ran on SQLite for ``f``."""
    seen: list[str] = []

    def read(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(seen.append)
        try:
            triage.list_records(conn, f)
        finally:
            conn.set_trace_callback(None)

    store.read(read)
    return seen


def test_sqlite_searches_through_the_fts_table_when_the_newest_records_lack_the_text(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the newest records, one question to FTS5 (each costs a lookup of every trigram in every segment), its
    matches' records read by rowid, none read for the text."""
    monkeypatch.setattr(triage, "_WALK_ROWS", 20)
    store = open_target(str(tmp_path / "c.db"))
    try:
        store.write(Batch(rag_records=[_record(i, f"Question {i}", "It is in Paris.") for i in range(200)]))
        rare = RecordFilter(text="Question 12")  # not among the newest: the first step comes back short
        statements = _statements(store, rare)
        (indexed,) = [s for s in statements if "MATCH" in s]
        (read,) = [s for s in statements if "json_each(b.value)" in s]  # the matches' records, by their ids
        plan = " | ".join(r[-1] for r in rows(store, "EXPLAIN QUERY PLAN " + indexed))
        assert f"{TEXT_SEARCH.fts} VIRTUAL TABLE" in plan and not re.search(r"SCAN r\b", plan), plan
        plan = " | ".join(r[-1] for r in rows(store, "EXPLAIN QUERY PLAN " + read))
        assert "SEARCH r USING INTEGER PRIMARY KEY (rowid=?)" in plan and not re.search(r"SCAN r\b", plan), plan
        assert _listed(store, rare) == [f"{i:016x}" for i in (129, 128, 127, 126, 125, 124, 123, 122, 121, 120, 12)]
        # A text in none of the newest records, or in a few of them: one question to the index.
        assert len([s for s in _statements(store, RecordFilter(text="Lisbon")) if "MATCH" in s]) == 1
        few = RecordFilter(text="Question 17", limit=5)  # 170..179 and 17
        assert len([s for s in _statements(store, few) if "MATCH" in s]) == 1
        assert _listed(store, few) == [f"{i:016x}" for i in (179, 178, 177, 176, 175)]
        # A text of most records fills the page from the newest ones: the index is not asked.
        assert not [s for s in _statements(store, RecordFilter(text="Paris", limit=10)) if "MATCH" in s]
        # Under 3 characters the trigram index finds nothing: the records are read, as before.
        assert not [s for s in _statements(store, RecordFilter(text="12")) if "MATCH" in s]
        assert len(_listed(store, RecordFilter(text="12", limit=100))) == len([i for i in range(200) if "12" in str(i)])
    finally:
        store.close()


def test_postgresql_plans_the_search_on_its_trigram_indexes(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = postgres_server.database()
    store = open_target(url)
    try:
        store.write(Batch(rag_records=[_record(i, f"Question {i}", "It is in Paris.") for i in range(2000)]))
        where, args = triage.where_clause(RecordFilter(text="Question 12"), POSTGRESQL)
        with store.connection() as conn, conn:  # one transaction: SET LOCAL leaves the pooled connection as it was
            conn.execute("ANALYZE rag_records")
            # The table is small: without these the planner reads it whole, as it should at this size.
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_indexscan = off")
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN SELECT span_id FROM rag_records r{where}", args))
        assert "idx_rag_records_query_trgm" in plan and "idx_rag_records_answer_trgm" in plan, plan
        assert "Seq Scan" not in plan, plan
        # The list's second step (after the newest records): ordered so that no walk of time_ns's index, which the
        # planner takes for a text it reckons common, can serve it; with index scans allowed it takes the trigrams.
        with store.connection() as conn, conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            listed = f"SELECT span_id FROM rag_records r{where} {triage._ORDER_UNINDEXED} LIMIT 51"
            plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {listed}", args))
        assert "idx_rag_records_query_trgm" in plan and "idx_rag_records_time_ns" not in plan, plan
        # The search among the newest records plans without plain index scans, and leaves the setting as it was
        # for the page's other statements.
        with store.connection() as conn, conn:
            monkeypatch.setattr(triage, "_PROBE_ROWS", 100)
            assert len(triage.list_records(conn, RecordFilter(text="Question 1999")).records) == 1
            assert conn.execute("SELECT current_setting('enable_indexscan')").fetchone() == ("on",)
    finally:
        store.close()


def test_postgresql_asks_the_index_at_once_for_a_text_it_reckons_rare(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text the planner's statistics reckon in at most ``_FEW_ROWS`` records goes to the index over every record
    at once: the probe of the newest records (their count and oldest time) never runs. One it reckons common
    takes the steps, the newest records first."""
    from ragtrace_collector._store.postgres import PgConnection

    store = open_target(postgres_server.database())
    seen: list[str] = []
    real = PgConnection.execute

    def spy(self: PgConnection, sql: str, params: Any = ()) -> Any:
        seen.append(sql)
        return real(self, sql, params)

    try:
        store.write(Batch(rag_records=[_record(i, f"Question {i}", "It is in Paris.") for i in range(2000)]))
        monkeypatch.setattr(triage, "_FEW_ROWS", 100)
        monkeypatch.setattr(PgConnection, "execute", spy)
        with store.connection() as conn, conn:
            conn.execute("ANALYZE rag_records")
            seen.clear()
            rare = [r["span_id"] for r in triage.list_records(conn, RecordFilter(text="Question 1999")).records]
            rare_probes = [sql for sql in seen if "OFFSET" in sql]
            seen.clear()
            common = [r["span_id"] for r in triage.list_records(conn, RecordFilter(text="Paris")).records]
            common_probes = [sql for sql in seen if "OFFSET" in sql]
    finally:
        store.close()
    assert rare == [f"{1999:016x}"] and rare_probes == []
    assert common == [f"{i:016x}" for i in range(1999, 1949, -1)] and len(common_probes) == 1


BEFORE_INDEX = migrations.STEPS.index(migrations._text_search)
"""The schema version of the collector before the text search index (4)."""


def _before_index(target: str) -> None:
    """A store as the collector before the text search index wrote it (schema version ``BEFORE_INDEX``), with
    rows."""
    values = [tuple(_record(i, q, a).values()) for i, (q, a) in enumerate(TEXTS)]
    insert = f"INSERT INTO rag_records ({', '.join(RAG_COLUMNS)}) VALUES ({', '.join('?' for _ in RAG_COLUMNS)})"
    if is_postgres(target):
        conn: Any = connect_postgres(target)
        with conn:
            for step in migrations.STEPS[:BEFORE_INDEX]:
                step(conn, POSTGRESQL)
            conn.execute("CREATE TABLE ragtrace_schema (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO ragtrace_schema (version) VALUES (?)", (BEFORE_INDEX,))
            conn.executemany(insert, values)
        conn.close()
        return
    conn = sqlite3.connect(target)
    with conn:
        for step in migrations.STEPS[:BEFORE_INDEX]:
            step(conn, triage.SQLITE)
        conn.execute(f"PRAGMA user_version = {BEFORE_INDEX}")
        conn.executemany(insert, values)
    conn.close()


def _index_objects(target: str) -> set[str]:
    if is_postgres(target):
        found = rows(target, "SELECT indexname FROM pg_indexes WHERE tablename = 'rag_records'")
    else:
        found = rows(target, "SELECT name FROM sqlite_master WHERE name LIKE 'rag_records_fts%'")
    return {name for (name,) in found}


def test_a_store_from_before_the_index_gets_it_with_its_rows_on_upgrade(
    store_target: str, open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _before_index(store_target)
    assert not {"rag_records_fts", "idx_rag_records_query_trgm"} & _index_objects(store_target)

    monkeypatch.setattr(triage, "_PROBE_ROWS", 0)  # SQLite: through the index alone
    store = open_store()

    assert store.read(migrations.version) == migrations.CURRENT > BEFORE_INDEX
    expected = (
        {"idx_rag_records_query_trgm", "idx_rag_records_answer_trgm"}
        if is_postgres(store_target)
        else {"rag_records_fts", "rag_records_fts_ai", "rag_records_fts_ad", "rag_records_fts_au"}
    )
    assert expected <= _index_objects(store_target)
    for text in ("paris", "straße", "needle", "Question 12:"):
        assert _listed(store, RecordFilter(text=text)) == _found(text), text


def test_writes_keep_the_index_in_step(open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """An insert is found, an upsert that changes the answer is found by its new text and not its old, an upsert
    that changes other columns only leaves it found, and retention's delete takes it out."""
    monkeypatch.setattr(triage, "_PROBE_ROWS", 0)
    store = open_store()
    store.write(Batch(rag_records=[_record(1, "old question", "old answer"), _record(2, "kept", "kept answer")]))
    assert _listed(store, RecordFilter(text="old answer")) == [f"{1:016x}"]

    store.write(Batch(rag_records=[_record(1, "old question", "new answer")]))
    assert _listed(store, RecordFilter(text="old answer")) == []
    assert _listed(store, RecordFilter(text="new answer")) == [f"{1:016x}"]
    assert _listed(store, RecordFilter(text="old question")) == [f"{1:016x}"]

    unchanged_text = {**_record(2, "kept", "kept answer"), "decision": "not_sampled", "route": "/other"}
    store.write(Batch(rag_records=[unchanged_text]))
    assert _listed(store, RecordFilter(text="kept answer")) == [f"{2:016x}"]

    store.prune(T0 + 2 * NS)  # record 1 is older
    assert _listed(store, RecordFilter(text="question")) == []
    assert _listed(store, RecordFilter(text="kept")) == [f"{2:016x}"]


def test_sqlite_fts_table_holds_exactly_the_stored_rows_after_writes(tmp_path: Any) -> None:
    """FTS5's own check of an external-content index against its table, after inserts, updates and deletes."""
    store = open_target(str(tmp_path / "c.db"))
    try:
        store.write(Batch(rag_records=[_record(i, f"q{i}", f"a{i}") for i in range(50)]))
        store.write(Batch(rag_records=[_record(i, f"q{i}", f"changed {i}") for i in range(0, 50, 3)]))
        store.prune(T0 + 20 * NS)

        def check(conn: sqlite3.Connection) -> None:
            conn.execute(f"INSERT INTO {TEXT_SEARCH.fts} ({TEXT_SEARCH.fts}, rank) VALUES ('integrity-check', 1)")

        store.change(check)  # raises (SQLITE_CORRUPT_VTAB) when the index and the table disagree
        assert rows(store, f"SELECT count(*) FROM {TEXT_SEARCH.fts}") == [(30,)]
    finally:
        store.close()


def test_a_postgresql_user_that_may_not_create_pg_trgm_is_told_what_to_run(postgres_server: PostgresServer) -> None:
    url = postgres_server.database()
    database = url.rsplit("/", 1)[1]
    postgres_server.psql(url, "CREATE ROLE searcher LOGIN")
    try:
        postgres_server.psql(url, "GRANT CREATE ON SCHEMA public TO searcher")
        postgres_server.psql(url, f'REVOKE CREATE ON DATABASE "{database}" FROM PUBLIC')
        as_searcher = url.replace(f"{postgres_server.user}@", "searcher@")
        with pytest.raises(StoreError, match=r"pg_trgm.*CREATE EXTENSION pg_trgm"):
            open_target(as_searcher)
        # Created once by a superuser, the extension is there for every user after.
        postgres_server.psql(url, "CREATE EXTENSION pg_trgm")
        open_target(as_searcher).close()
    finally:
        postgres_server.psql(url, "DROP OWNED BY searcher")
        postgres_server.psql(postgres_server.url(), f'DROP DATABASE "{database}" WITH (FORCE)')
        postgres_server.psql(postgres_server.url(), "DROP ROLE searcher")


def test_a_sqlite_store_without_the_fts_table_searches_by_reading_and_keeps_writing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented trade of search for ingest: the FTS5 table and its triggers dropped, writes go on, searches
    read the records and find the same, and opening the store again does not build the index back."""
    monkeypatch.setattr(triage, "_PROBE_ROWS", 0)
    path = str(tmp_path / "c.db")
    store = open_target(path)
    try:

        def drop(conn: sqlite3.Connection) -> None:
            for trigger in ("_ai", "_ad", "_au"):
                conn.execute(f"DROP TRIGGER {TEXT_SEARCH.fts}{trigger}")
            conn.execute(f"DROP TABLE {TEXT_SEARCH.fts}")

        store.change(drop)
        store.write(Batch(rag_records=[_record(i, q, a) for i, (q, a) in enumerate(TEXTS)]))
        for text in ("paris", "needle", "ok"):
            assert _listed(store, RecordFilter(text=text)) == _found(text), text
    finally:
        store.close()
    open_target(path).close()
    assert _index_objects(path) == set()


# -- SQLite: the records' times bounded by blocks of arrival (schema.RECORD_BLOCKS), the search's third step --------

BLOCK = RECORD_BLOCKS.SIZE
ARRIVALS = 3 * BLOCK + 100
"""Records enough for four blocks of arrival."""


def _blocks_and_records(store: Any) -> tuple[dict[int, int], dict[int, int | None]]:
    """Each block's bound, and the newest time its records hold now (None: none with a time)."""
    bounds = dict(rows(store, f"SELECT block, newest FROM {RECORD_BLOCKS.name}"))
    held = dict(rows(store, f"SELECT rowid / {BLOCK}, MAX(time_ns) FROM rag_records GROUP BY 1"))
    return bounds, held


def test_sqlite_blocks_bound_every_records_time_through_writes_and_retention(tmp_path: Any) -> None:
    """Inserts give each block the newest time of its records; an upsert that moves a record's time later raises
    its block's bound (one that moves it earlier leaves a bound that still holds); retention keeps the blocks that
    still hold a record and drops those it empties, so an emptied table's new rowid 1 starts a fresh bound."""
    path = str(tmp_path / "c.db")
    store = open_target(path)
    try:
        order = list(range(ARRIVALS))
        random.Random(7).shuffle(order)  # arrival unrelated to time
        store.write(Batch(rag_records=[_record(i, f"q{i}", "a") for i in order]))
        bounds, held = _blocks_and_records(store)
        assert bounds == held and len(bounds) == ARRIVALS // BLOCK + 1

        first = order[0]  # rowid 1, block 0: made the newest record, then older than any
        store.write(Batch(rag_records=[{**_record(first, f"q{first}", "a"), "time_ns": T0 + 10 * ARRIVALS * NS}]))
        bounds, held = _blocks_and_records(store)
        assert bounds[0] == held[0] == T0 + 10 * ARRIVALS * NS
        store.write(Batch(rag_records=[{**_record(first, f"q{first}", "a"), "time_ns": T0 - NS}]))
        bounds, held = _blocks_and_records(store)
        assert all(bounds[block] >= newest for block, newest in held.items() if newest is not None)

        store.prune(T0 + (BLOCK + 10) * NS)  # the oldest records, which arrived in every block: none emptied
        bounds, held = _blocks_and_records(store)
        assert set(bounds) == set(held) and all(bounds[block] >= newest for block, newest in held.items() if newest)
        store.prune(T0 + ARRIVALS * NS)  # every record left: ``first``'s is the oldest now
        assert _blocks_and_records(store) == ({}, {})
        # The rowids of an emptied table start again at 1: block 0 holds the next record's time, not an old bound.
        store.write(Batch(rag_records=[_record(ARRIVALS, "late", "a")]))
        assert _blocks_and_records(store) == ({0: T0 + ARRIVALS * NS}, {0: T0 + ARRIVALS * NS})
    finally:
        store.close()


def test_sqlite_store_from_before_the_blocks_gets_them_on_upgrade(tmp_path: Any) -> None:
    path = str(tmp_path / "c.db")
    store = open_target(path)
    try:
        order = list(range(ARRIVALS))
        random.Random(3).shuffle(order)
        store.write(Batch(rag_records=[_record(i, f"q{i}", "a") for i in order]))
    finally:
        store.close()
    conn = sqlite3.connect(path)
    with conn:  # as the collector before step 12 left it
        for suffix in ("_ai", "_au"):
            conn.execute(f"DROP TRIGGER {RECORD_BLOCKS.name}{suffix}")
        conn.execute(f"DROP TABLE {RECORD_BLOCKS.name}")
        conn.execute(f"PRAGMA user_version = {migrations.CURRENT - 1}")
    conn.close()
    store = open_target(path)
    try:
        assert store.read(migrations.version) == migrations.CURRENT
        bounds, held = _blocks_and_records(store)
        assert bounds == held and len(bounds) == ARRIVALS // BLOCK + 1
        found = RecordFilter(text="q7", limit=3)
        assert _listed(store, found) == [f"{i:016x}" for i in sorted(i for i in order if "q7" in f"q{i}")[::-1][:3]]
    finally:
        store.close()


def _arrivals(kind: str) -> list[int]:
    """Record numbers (their time's order) in the order they arrive."""
    numbers = list(range(ARRIVALS))
    if kind == "in time order":
        return numbers
    if kind == "reversed":
        return numbers[::-1]
    if kind == "late old ones":  # mostly in order, every 10th record a block later than its time
        return sorted(numbers, key=lambda i: i + (BLOCK if i % 10 == 0 else 0))
    random.Random(11).shuffle(numbers)
    return numbers


@pytest.mark.parametrize("kind", ["in time order", "reversed", "late old ones", "shuffled"])
@pytest.mark.parametrize("limit", [1, 7, 50])
def test_sqlite_search_by_blocks_finds_what_reading_every_record_found(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, kind: str, limit: int
) -> None:
    """The third step, whatever the order records arrived in, lists the records with the text newest first (then
    by span id; those without a time last), page by page, as reading every record does. The text is in old records
    only, so the first two steps come back short and the blocks are read."""
    monkeypatch.setattr(triage, "_WALK_ROWS", 20)
    monkeypatch.setattr(triage, "_PROBE_ROWS", 50)
    store = open_target(str(tmp_path / "c.db"))
    try:
        records = []
        for i in _arrivals(kind):
            text = "needle" if i < ARRIVALS // 2 and i % 7 in (0, 3) else "hay"
            record = _record(i, f"{text} {i}", "a")
            if i % 97 == 0:
                record["time_ns"] = None  # listed after every record with a time
            elif i % 13 == 0:
                record["time_ns"] = T0 + (i - i % 26) * NS  # two records of one time: by span id
            records.append(record)
        store.write(Batch(rag_records=records))
        expected = [
            r["span_id"]
            for r in sorted(
                (r for r in records if r["query"].startswith("needle")),
                key=lambda r: (r["time_ns"] is not None, r["time_ns"] or 0, r["span_id"]),
                reverse=True,
            )
        ]
        paged: list[str] = []
        f: RecordFilter | None = RecordFilter(text="needle", limit=limit)
        pages = 0
        while f is not None and pages < 3:  # the first pages: each one a search from the top of the blocks
            page = store.read(triage.list_records, f)
            paged += [r["span_id"] for r in page.records]
            f = page.next
            pages += 1
        assert paged == expected[: len(paged)] and len(paged) == min(3 * limit, len(expected))
        full = store.read(triage.list_records, RecordFilter(text="needle", limit=len(expected) + 5))
        assert [r["span_id"] for r in full.records] == expected
    finally:
        store.close()


def test_sqlite_search_reads_the_records_of_the_newest_blocks_only(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records in the order of their time (or its reverse), the text in every third old record: the first page
    reads the records of the block that holds the newest of them and stops at the bound of the next, not every
    match's record. Arrived shuffled, every block may hold the newest, and every match's record is read."""
    monkeypatch.setattr(triage, "_WALK_ROWS", 20)
    monkeypatch.setattr(triage, "_PROBE_ROWS", 50)
    matches = [i for i in range(3 * BLOCK) if i % 3 == 0]

    def records_read(name: str, order: list[int]) -> int:
        store = open_target(str(tmp_path / f"{name}.db"))
        try:
            store.write(Batch(rag_records=[_record(i, "needle" if i in matches else "hay", "a") for i in order]))
            page = RecordFilter(text="needle", limit=10)
            assert _listed(store, page) == [f"{i:016x}" for i in matches[::-1][:10]]
            given = [re.search(r"json_each\('(.*?)'\) b", s) for s in _statements(store, page)]
            return sum(len(block) for m in given if m for block in json.loads(m[1]))
        finally:
            store.close()

    in_a_block = len([i for i in matches if i >= 2 * BLOCK - 1])  # the newest block with a match: rowids from 2048
    assert records_read("in order", list(range(ARRIVALS))) == in_a_block
    assert records_read("reversed", list(range(ARRIVALS))[::-1]) < 2 * in_a_block
    shuffled = list(range(ARRIVALS))
    random.Random(5).shuffle(shuffled)
    assert records_read("shuffled", shuffled) == len(matches)


def test_sqlite_search_reads_a_block_whose_bound_ties_the_pages_last_record(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block whose newest time equals the time of the last record kept may still hold a record that comes before
    it (one time, a greater span id): the reading stops only at a bound strictly older."""
    monkeypatch.setattr(triage, "_WALK_ROWS", 20)
    monkeypatch.setattr(triage, "_PROBE_ROWS", 50)
    tie, newest = T0 + 50 * NS, T0 + 100 * NS
    needles = {2046: (2000, tie), 2050: (3000, newest), 2051: (1500, tie), 2052: (1400, tie)}  # position: (i, time)
    records = []
    for position in range(3 * BLOCK + 100):
        i, time_ns = needles.get(position, (10_000 + position, T0 + position))  # hay: a few ns after T0
        if position >= 3 * BLOCK - 1:
            time_ns = T0 + 1000 * NS + position  # the newest records: hay, so the first two steps come back short
        records.append({**_record(i, "needle" if position in needles else "hay", "a"), "time_ns": time_ns})
    store = open_target(str(tmp_path / "c.db"))
    try:
        store.write(Batch(rag_records=records))
        # Block 2 (rowids 2048-3071) holds 3000, 1500 and 1400; block 1's newest record is 2000, at the tie.
        assert rows(store, f"SELECT newest FROM {RECORD_BLOCKS.name} WHERE block IN (1, 2) ORDER BY block") == [
            (tie,),
            (newest,),
        ]
        assert _listed(store, RecordFilter(text="needle", limit=2)) == [f"{3000:016x}", f"{2000:016x}"]
    finally:
        store.close()


def test_a_store_copied_into_sqlite_has_its_records_in_the_order_of_their_time(tmp_path: Any) -> None:
    """``ragtrace-collector copy`` writes the records in the order of their time, whatever order the source
    received them in: the target's blocks of arrival are as tight as a store's that received them in order."""
    from ragtrace_collector._store.transfer import copy_store

    order, times = list(range(ARRIVALS)), list(range(ARRIVALS))
    random.Random(9).shuffle(order)
    random.Random(10).shuffle(times)  # neither the order of arrival nor of span ids is the order of time
    source = open_target(str(tmp_path / "source.db"))
    try:
        source.write(Batch(rag_records=[{**_record(i, f"q{i}", "a"), "time_ns": T0 + times[i] * NS} for i in order]))
    finally:
        source.close()
    copy_store(str(tmp_path / "source.db"), str(tmp_path / "copy.db"))
    target = open_target(str(tmp_path / "copy.db"))
    try:
        assert [t for (t,) in rows(target, "SELECT time_ns FROM rag_records ORDER BY rowid")] == [
            T0 + i * NS for i in range(ARRIVALS)
        ]
        bounds, held = _blocks_and_records(target)
        assert bounds == held and all(bounds[b] < bounds[b + 1] for b in range(len(bounds) - 1))
    finally:
        target.close()
