"""The pages' reads on PostgreSQL borrow read-only connections from the store's readers' pool (``lend_reader``):
one connection serves request after request; what a request set on it (its budget's ``statement_timeout``) is
gone for the next; a budget cancelled after its read never cancels the next user's statement; a cancelled read's
connection is replaced; all readers busy past the budget is a ``ReadInterrupted``; a server restart costs no page."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from ragtrace_collector._store import QueryBudget, ReadInterrupted, reading, snapshot, within
from ragtrace_collector._store.postgres import PostgresStore

from tests.collector._postgres import PostgresServer


@pytest.fixture
def pg_store(postgres_server: PostgresServer) -> Iterator[PostgresStore]:
    store = PostgresStore(postgres_server.database(), read_pool_size=1)
    try:
        yield store
    finally:
        store.close()


def _backend(store: PostgresStore, budget: QueryBudget | None = None) -> int:
    with snapshot(store, budget) as conn:
        return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def test_requests_share_one_pooled_read_only_session(pg_store: PostgresStore) -> None:
    first = _backend(pg_store, QueryBudget(30))
    assert _backend(pg_store, QueryBudget(30)) == first
    with reading(pg_store) as conn:
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("CREATE TABLE written_by_a_page (x int)")


def test_a_budgets_timeout_is_reset_for_the_next_borrower(pg_store: PostgresStore) -> None:
    with within(QueryBudget(5)), reading(pg_store) as conn:
        assert conn.execute("SHOW statement_timeout").fetchone()[0] != "0"
    with reading(pg_store) as conn:  # the same session (one reader), no budget
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
        assert conn.execute("SHOW default_transaction_read_only").fetchone()[0] == "on"


def test_a_budget_cancelled_after_its_read_leaves_the_next_users_statement_alone(
    pg_store: PostgresStore, postgres_server: PostgresServer
) -> None:
    finished = QueryBudget(30)
    borrowed = _backend(pg_store, finished)
    outcome: dict[str, Any] = {}

    def next_user() -> None:
        try:
            with reading(pg_store) as conn:
                outcome["pid"] = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
                outcome["rows"] = conn.execute("SELECT 1 FROM pg_sleep(1.5)").fetchall()
        except Exception as exc:  # the assertion below names it
            outcome["error"] = exc

    worker = threading.Thread(target=next_user)
    worker.start()
    # Wait until the next user's statement runs on the session the finished read had, then cancel that read.
    with psycopg.connect(postgres_server.url(), autocommit=True) as watcher:
        deadline = time.monotonic() + 30
        while not watcher.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND state = 'active' AND query LIKE '%%pg_sleep%%'",
            (borrowed,),
        ).fetchone():
            assert time.monotonic() < deadline, "the next user's statement never started"
            time.sleep(0.02)
    finished.cancel()
    worker.join(30)
    assert "error" not in outcome, f"the next user's statement failed: {outcome.get('error')!r}"
    assert outcome == {"pid": borrowed, "rows": [(1,)]}


def test_a_cancelled_reads_session_is_replaced_and_the_pool_serves_on(pg_store: PostgresStore) -> None:
    before = _backend(pg_store, QueryBudget(30))
    budget = QueryBudget(3600)
    leaving = threading.Timer(0.3, budget.cancel)
    leaving.start()
    try:
        with pytest.raises(ReadInterrupted, match="the client went away"), snapshot(pg_store, budget) as conn:
            conn.execute("SELECT pg_sleep(3600)").fetchall()
    finally:
        leaving.cancel()
    after = _backend(pg_store, QueryBudget(30))
    assert after != before


def test_every_reader_busy_past_the_budget_is_a_read_interrupted(pg_store: PostgresStore) -> None:
    with reading(pg_store), pytest.raises(ReadInterrupted, match="waiting for a free read connection"):
        _backend(pg_store, QueryBudget(0.3))
    assert _backend(pg_store, QueryBudget(30)) > 0  # handed back: the pool serves again


def test_reads_go_on_after_postgresql_restarts(pg_store: PostgresStore, postgres_server: PostgresServer) -> None:
    _backend(pg_store, QueryBudget(30))
    postgres_server.stop()
    postgres_server.start()
    # The pooled session died with the server: the pool finds it broken and connects again, the read never sees it.
    assert _backend(pg_store, QueryBudget(30)) > 0


def test_a_closed_store_lends_nothing(postgres_server: PostgresServer) -> None:
    from ragtrace_collector._store import StoreError

    store = PostgresStore(postgres_server.database())
    _backend(store)
    store.close()
    with pytest.raises(StoreError, match="closed"), reading(store):
        pass
