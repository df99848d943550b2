"""The store's versioned migrations: a new file, a file an earlier collector wrote, several processes opening one
file at once, a file from a newer collector; and the rule that SQL and the driver live only in the store."""

from __future__ import annotations

import ast
import json
import multiprocessing
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector import _store
from ragtrace_collector._store import SchemaTooNew, Store, connect
from ragtrace_collector._store.migrations import CURRENT
from ragtrace_collector._store.schema import ROLLUPS, TABLES

from tests.collector._stores import rows

_COLLECTOR = Path(_store.__file__).resolve().parent.parent


def _columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[1] for row in conn.execute(f"PRAGMA table_info([{table}])")]


def _version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def test_a_new_file_has_every_table_of_the_schema_at_the_current_version(tmp_path: Path) -> None:
    Store(tmp_path / "c.db").close()
    assert _version(tmp_path / "c.db") == CURRENT >= 1
    for table in TABLES:
        assert _columns(tmp_path / "c.db", table.name) == list(table.all_columns), table.name


# The tables as the collector's first release wrote them: without rag_records.reason, scores.claims,
# alerts.silenced, the alert groups' table or the Phoenix cursor, and with the acks index under its old name.
_FIRST_RELEASE = """
CREATE TABLE [spans] ([span_id] TEXT PRIMARY KEY, [trace_id] TEXT, [parent_span_id] TEXT, [name] TEXT,
  [kind] INTEGER, [service] TEXT, [scope] TEXT, [start_ns] INTEGER, [end_ns] INTEGER, [status_code] INTEGER,
  [status_message] TEXT, [attributes] TEXT, [events] TEXT, [links] TEXT, [resource] TEXT, [received_ns] INTEGER);
CREATE TABLE [rag_records] ([span_id] TEXT PRIMARY KEY, [trace_id] TEXT, [service] TEXT, [route] TEXT,
  [time_ns] INTEGER, [query] TEXT, [answer] TEXT, [chunks] TEXT, [reference] TEXT, [decision] TEXT, [judge] TEXT,
  [calls] INTEGER, [prompt_tokens] INTEGER, [completion_tokens] INTEGER, [seconds] FLOAT);
CREATE TABLE [scores] ([span_id] TEXT, [metric] TEXT, [value] FLOAT, [label] TEXT, [explanation] TEXT,
  [reason] TEXT, [error_type] TEXT, [trace_id] TEXT, [service] TEXT, [route] TEXT, [time_ns] INTEGER,
  [source] TEXT, PRIMARY KEY ([span_id], [metric]));
CREATE TABLE [alerts] ([id] INTEGER PRIMARY KEY, [time_ns] INTEGER, [rule] TEXT, [kind] TEXT, [metric] TEXT,
  [service] TEXT, [route] TEXT, [state] TEXT, [previous_state] TEXT, [value] FLOAT, [threshold] FLOAT,
  [message] TEXT, [sinks] TEXT);
CREATE TABLE [alert_acks] ([id] INTEGER PRIMARY KEY, [rule] TEXT, [service] TEXT, [route] TEXT,
  [episode_ns] INTEGER, [time_ns] INTEGER, [author] TEXT, [comment] TEXT);
CREATE INDEX [idx_alert_acks_episode] ON [alert_acks] ([rule], [episode_ns]);
INSERT INTO rag_records (span_id, query, time_ns) VALUES ('s1', 'kept?', 5);
INSERT INTO scores (span_id, metric, value, time_ns) VALUES ('s1', 'faithfulness', 0.25, 5);
INSERT INTO alerts (time_ns, rule, state) VALUES (5, 'spike', 'ALERT');
"""


def test_a_file_an_earlier_collector_wrote_is_migrated_with_its_rows_kept(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(_FIRST_RELEASE)
    assert _version(path) == 0

    Store(path).close()

    assert _version(path) == CURRENT
    for table in TABLES:
        assert _columns(path, table.name) == list(table.all_columns), table.name
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT query, reason FROM rag_records").fetchall() == [("kept?", None)]
        assert conn.execute("SELECT value, claims FROM scores").fetchall() == [(0.25, None)]
        assert conn.execute("SELECT rule, silenced FROM alerts").fetchall() == [("spike", 0)]
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(alert_acks)")}
    assert indexes == {"idx_alert_acks_rule_episode_ns"}  # the hand-named one replaced, not doubled


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        connect(path, create=True).close()
        results.put("ok")
    except Exception as exc:  # reported to the test, which fails on it
        results.put(f"{type(exc).__name__}: {exc}")


def _all_at_once(target: Any, where: str, processes: int = 4) -> list[str]:
    """Run ``target(where, barrier, results)`` in ``processes`` spawned processes released together; what each
    reported."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results = context.Queue()
    workers = [context.Process(target=target, args=(where, barrier, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
    return outcomes


@pytest.mark.slow
def test_processes_opening_one_new_file_at_once_migrate_it_once_without_racing(tmp_path: Path) -> None:
    assert _all_at_once(_open_at_once, str(tmp_path / "c.db")) == ["ok"] * 4
    assert _version(tmp_path / "c.db") == CURRENT
    assert _columns(tmp_path / "c.db", "scores") == list(TABLES[2].all_columns)


def test_a_file_from_a_newer_collector_is_refused_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {CURRENT + 1}")
    with pytest.raises(SchemaTooNew, match=f"version {CURRENT + 1}, newer than this collector's {CURRENT}"):
        Store(path)


def test_serve_on_a_file_from_a_newer_collector_says_so_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace_collector.__main__ import main

    path = tmp_path / "new.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {CURRENT + 1}")
    assert main(["serve", "--db", str(path), "--port", "0", "--grpc-port", "-1"]) == 2
    assert "upgrade ragtrace-collector" in capsys.readouterr().err


_DRIVERS = {"sqlite3", "sqlite_utils", "psycopg", "psycopg_pool", "sqlalchemy"}
_SQL = re.compile(r"\b(SELECT\b.+\bFROM|INSERT INTO|DELETE FROM|CREATE (TABLE|INDEX)|ALTER TABLE|UPDATE \w+ SET)\b")


def _outside_the_store() -> list[Path]:
    return [p for p in _COLLECTOR.rglob("*.py") if "_store" not in p.relative_to(_COLLECTOR).parts]


def test_only_the_store_imports_a_database_driver() -> None:
    found = []
    for path in _outside_the_store():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if isinstance(node, ast.ImportFrom) else []
            )  # fmt: skip
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in _DRIVERS]
    assert found == []


def test_only_the_store_writes_sql() -> None:
    found = []
    for path in _outside_the_store():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
                found.append(f"{path.relative_to(_COLLECTOR)}:{node.lineno}")
    assert found == []


def _start_replica(url: str, barrier: Any, results: Any) -> None:
    from ragtrace_collector._store import open_store

    barrier.wait()
    try:
        open_store(url).close()
        results.put("ok")
    except Exception as exc:  # reported to the test, which fails on it
        results.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.slow
def test_replicas_starting_at_once_on_one_postgresql_database_migrate_it_once(postgres_server: Any) -> None:
    url = postgres_server.database()
    assert _all_at_once(_start_replica, url) == ["ok"] * 4
    assert postgres_server.psql(url, "SELECT version FROM ragtrace_schema") == [(CURRENT,)]
    for table in TABLES:
        columns = postgres_server.psql(
            url,
            "SELECT column_name FROM information_schema.columns "
            f"WHERE table_name = '{table.name}' ORDER BY ordinal_position",
        )
        expected = [*table.all_columns, *(["rowid", "xact"] if table.arrival else [])]
        assert [c for (c,) in columns] == expected, table.name


def test_a_postgresql_store_of_a_newer_collector_is_refused(postgres_server: Any) -> None:
    from ragtrace_collector._store import open_store

    url = postgres_server.database()
    open_store(url).close()
    postgres_server.psql(url, f"UPDATE ragtrace_schema SET version = {CURRENT + 1}")
    with pytest.raises(SchemaTooNew, match="upgrade ragtrace-collector"):
        open_store(url)


def test_copy_moves_a_sqlite_store_into_postgresql_whole_and_again_harmlessly(
    tmp_path: Path, postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace_collector.__main__ import main
    from ragtrace_collector._store import open_store
    from ragtrace_collector._store.alerts import add_silence

    from tests.collector._stores import rows
    from tests.collector._triage_seed import seed_triage

    path, url = tmp_path / "c.db", postgres_server.database()
    store = Store(path)
    seed_triage(store)
    store.close()
    with closing(connect(path)) as conn:
        add_silence(conn, rule="r", service=None, route=None, starts_ns=1, ends_ns=2)

    assert main(["copy", "--db", str(path), "--store", url]) == 0
    assert "rag_records: 140 row(s) read, 140 new" in capsys.readouterr().out
    source, target = open_store(path), open_store(url)
    try:
        for table in TABLES:  # every column of every table, row for row
            if table.name in ROLLUPS:
                continue  # not copied: the target adds up its own, in its own slots (test_rollups.py)
            key = ", ".join(table.pk)
            columns = ", ".join(table.columns)
            assert rows(target, f"SELECT {columns} FROM {table.name} ORDER BY {key}") == rows(
                source, f"SELECT {columns} FROM {table.name} ORDER BY {key}"
            ), table.name
        # Run again: nothing new, nothing doubled. A silence made after the copy gets an id past the copied one.
        assert main(["copy", "--db", str(path), "--store", url]) == 0
        assert "rag_records: 140 row(s) read, 0 new" in capsys.readouterr().out
        assert rows(target, "SELECT count(*) FROM rag_records") == [(140,)]
        made = target.change(lambda c: add_silence(c, rule="s", service=None, route=None, starts_ns=1, ends_ns=2))
        assert made.id == 2
    finally:
        source.close()
        target.close()


def test_copy_into_a_store_in_use_keeps_its_alerts_and_adds_the_copied_ones(
    tmp_path: Path, postgres_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragtrace_collector.__main__ import main
    from ragtrace_collector._store import open_store
    from ragtrace_collector._store.alerts import add_silence

    from tests.collector._stores import rows

    path, url = tmp_path / "c.db", postgres_server.database()
    Store(path).close()
    with closing(connect(path)) as conn:
        add_silence(conn, rule="copied", service=None, route=None, starts_ns=1, ends_ns=2)  # id 1 in the file
    target = open_store(url)
    try:
        own = target.change(lambda c: add_silence(c, rule="own", service=None, route=None, starts_ns=3, ends_ns=4))
        assert own.id == 1  # the fleet's own silence has the same id
        for _ in range(2):  # and a copy run again adds nothing
            assert main(["copy", "--db", str(path), "--store", url]) == 0
        assert "alert_silences: 1 row(s) read, 0 new" in capsys.readouterr().out
        assert rows(target, "SELECT id, rule FROM alert_silences ORDER BY id") == [(1, "own"), (2, "copied")]
        made = target.change(lambda c: add_silence(c, rule="next", service=None, route=None, starts_ns=5, ends_ns=6))
        assert made.id == 3
    finally:
        target.close()


def test_spans_stored_before_the_model_call_columns_get_them_on_upgrade(
    store_target: str, open_store: Callable[[], Any]
) -> None:
    """A store at version 3 (before step 4) whose spans carry token counts in their attributes: opening it fills
    ``model``/``input_tokens``/``output_tokens`` from them, and a count that is not a whole number >= 0 is none."""
    from ragtrace_collector._store.migrations import MODEL_CALLS_INDEX

    from tests.collector._stores import rows

    store = open_store()
    calls = {
        "a" * 16: {"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30, "gen_ai.request.model": "m1"},
        "b" * 16: {"llm.token_count.prompt": 7, "llm.model_name": "m2"},
        "c" * 16: {"gen_ai.usage.input_tokens": -5, "gen_ai.usage.output_tokens": "many"},
        "d" * 16: {"http.route": "/ask"},
    }

    def back_to_version_3(conn: Any) -> None:
        conn.execute(f"DROP INDEX {MODEL_CALLS_INDEX}")
        for column in ("model", "input_tokens", "output_tokens"):
            conn.execute(f"ALTER TABLE spans DROP COLUMN {column}")
        for span_id, attributes in calls.items():
            conn.execute(
                "INSERT INTO spans (span_id, trace_id, name, end_ns, attributes) VALUES (?, ?, 'call', 1, ?)",
                (span_id, "e" * 32, json.dumps(attributes)),
            )
        if store_target.startswith("postgresql://"):
            conn.execute("UPDATE ragtrace_schema SET version = 3")
        else:
            conn.execute("PRAGMA user_version = 3")

    store.change(back_to_version_3)
    store.close()
    upgraded = open_store()
    assert rows(upgraded, "SELECT span_id, model, input_tokens, output_tokens FROM spans ORDER BY span_id") == [
        ("a" * 16, "m1", 120, 30),
        ("b" * 16, "m2", 7, None),
        ("c" * 16, None, None, None),
        ("d" * 16, None, None, None),
    ]


def test_step_7_indexes_scores_by_value_for_the_sorted_list(store_target: str, open_store: Callable[[], Any]) -> None:
    """Schema version 7: the index the records list sorted by a score walks, on either engine."""
    from ragtrace_collector._store.migrations import SCORES_BY_VALUE, STEPS, _scores_by_value

    assert STEPS.index(_scores_by_value) == 6 and CURRENT >= 7
    open_store()
    query = (
        "SELECT indexname FROM pg_indexes WHERE tablename = 'scores'"
        if str(store_target).startswith("postgresql://")
        else "SELECT name FROM sqlite_master WHERE tbl_name = 'scores' AND type = 'index'"
    )
    assert SCORES_BY_VALUE in {name for (name,) in rows(store_target, query)}


def test_step_8_gives_a_store_at_version_7_the_order_rows_arrived_in(
    store_target: str, open_store: Callable[[], Any]
) -> None:
    """Schema version 8, on a store at version 7 holding scores and a Phoenix cursor: PostgreSQL's arrival tables
    get ``xact`` (0 for the rows already there, the writing transaction for new ones) and its index; the cursor
    table gets ``after_xact`` on both engines, 0 for the cursor already stored."""
    from ragtrace_collector._otlp import Batch
    from ragtrace_collector._store.arrival import newest
    from ragtrace_collector._store.phoenix import CursorTable
    from ragtrace_collector._store.schema import SCORE_COLUMNS

    from tests.collector._stores import whole_row

    def score(span_id: str) -> dict[str, Any]:
        return whole_row({"span_id": span_id, "metric": "faithfulness", "value": 0.5, "time_ns": 1}, SCORE_COLUMNS)

    postgres = store_target.startswith("postgresql://")
    store = open_store()

    def back_to_version_7(conn: Any) -> None:
        conn.execute("ALTER TABLE phoenix_cursor DROP COLUMN after_xact")
        conn.execute("INSERT INTO phoenix_cursor (url, after_row, updated_ns) VALUES ('http://p/v1', 1, 1)")
        if postgres:
            for table in ("rag_records", "scores"):
                conn.execute(f"DROP INDEX idx_{table}_xact_rowid")
                conn.execute(f"ALTER TABLE {table} DROP COLUMN xact")
            conn.execute("UPDATE ragtrace_schema SET version = 7")
        else:
            conn.execute("PRAGMA user_version = 7")

    store.change(back_to_version_7)
    store.write(Batch(scores=[score("a" * 16)]))
    store.close()
    upgraded = open_store()
    assert upgraded.read(newest, "scores").row == 1
    upgraded.write(Batch(scores=[score("b" * 16)]))
    cursor = CursorTable(store_target, "http://p/v1", timeout=5.0)
    try:
        assert cursor.load() == (0, 1)  # the stored cursor, read as before
    finally:
        cursor.close()
    if postgres:
        # the row stored before the step comes first; the one written after records its transaction
        assert rows(store_target, "SELECT xact = 0, xact > 0 FROM scores ORDER BY rowid") == [
            (True, False),
            (False, True),
        ]
        indexes = {name for (name,) in rows(store_target, "SELECT indexname FROM pg_indexes")}
        assert {"idx_rag_records_xact_rowid", "idx_scores_xact_rowid"} <= indexes
    assert upgraded.read(newest, "scores").row == 2


def test_step_10_rebuilds_postgresql_text_indexes_in_the_c_collation(
    store_target: str, open_store: Callable[[], Any]
) -> None:
    """Schema version 10, on a store at version 9 whose trigram indexes are step 5's (the database's collation):
    PostgreSQL's are built again of the columns in the "C" collation, which the search's ILIKE reads in, and a
    search finds the records stored before (ASCII's case folded only); SQLite's FTS5 table is left as it was."""
    from ragtrace_collector._otlp import Batch
    from ragtrace_collector._store import triage
    from ragtrace_collector._store.migrations import STEPS, _text_search_in_c, version
    from ragtrace_collector._store.schema import RAG_COLUMNS, TEXT_SEARCH
    from ragtrace_collector._triage._filters import RecordFilter

    from tests.collector._stores import whole_row

    assert STEPS.index(_text_search_in_c) == 9 and CURRENT >= 10
    postgres = store_target.startswith("postgresql://")
    store = open_store()
    texts = ["Où est la Tour Eiffel ?", "OÙ EST LA TOUR EIFFEL ?", "nothing"]
    store.write(
        Batch(
            rag_records=[
                whole_row({"span_id": f"{i:016x}", "time_ns": i + 1, "query": text, "answer": None}, RAG_COLUMNS)
                for i, text in enumerate(texts)
            ]
        )
    )

    def back_to_version_9(conn: Any) -> None:
        if postgres:
            for column in TEXT_SEARCH.columns:
                conn.execute(f"DROP INDEX {TEXT_SEARCH.index(column)}")
                conn.execute(
                    f"CREATE INDEX {TEXT_SEARCH.index(column)} ON rag_records USING gin ({column} gin_trgm_ops)"
                )
            conn.execute("UPDATE ragtrace_schema SET version = 9")
        else:
            conn.execute("PRAGMA user_version = 9")

    store.change(back_to_version_9)
    store.close()
    upgraded = open_store()
    assert upgraded.read(version) == CURRENT
    if postgres:
        definitions = dict(
            rows(store_target, "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%_trgm'")
        )
        assert set(definitions) == {TEXT_SEARCH.index(column) for column in TEXT_SEARCH.columns}
        assert all('COLLATE "C" gin_trgm_ops' in d for d in definitions.values()), definitions
    else:
        assert rows(store_target, f"SELECT count(*) FROM {TEXT_SEARCH.fts}") == [(3,)]

    def listed(text: str) -> list[str]:
        return [r["span_id"] for r in upgraded.read(triage.list_records, RecordFilter(text=text)).records]

    assert listed("tour eiffel") == [f"{1:016x}", f"{0:016x}"]
    assert listed("où est") == [f"{0:016x}"]  # Ù is not ù: ASCII's case only, as on SQLite
