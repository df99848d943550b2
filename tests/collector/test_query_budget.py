"""A page's reads cost at most their budget and nothing once the client left (issue 26): a statement past its time,
or running when its request's client goes away, is stopped by the engine, on SQLite (a progress handler) and on
PostgreSQL (``statement_timeout``, a cancel request)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from ragtrace_collector._report import page_routes
from ragtrace_collector._store import QueryBudget, ReadInterrupted, snapshot
from starlette.applications import Starlette

from tests.collector._devtools import served

# Never ends by itself: only the engine stopping it ends it.
_ENDLESS = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "postgresql": "SELECT pg_sleep(3600)",
}


def _engine(target: str) -> str:
    return "postgresql" if target.startswith("postgresql://") else "sqlite"


def test_a_read_past_its_budget_is_stopped(open_store: Callable[[], Any], store_target: str) -> None:
    open_store().close()  # the schema
    budget = QueryBudget(0.2)
    with pytest.raises(ReadInterrupted, match=r"longer than 0\.2 s"), snapshot(store_target, budget) as conn:
        conn.execute(_ENDLESS[_engine(store_target)]).fetchall()


def test_a_read_whose_client_left_is_stopped_at_once(open_store: Callable[[], Any], store_target: str) -> None:
    open_store().close()
    budget = QueryBudget(3600)  # only the cancel can stop it
    # The client leaving, as the route sees it, while the statement runs.
    leaving = threading.Timer(0.3, budget.cancel)
    leaving.start()
    try:
        with pytest.raises(ReadInterrupted, match="the client went away"), snapshot(store_target, budget) as conn:
            conn.execute(_ENDLESS[_engine(store_target)]).fetchall()
    finally:
        leaving.cancel()


def _hang_up_while_reading(store: Any, path: str, started: threading.Event, caplog: pytest.LogCaptureFixture) -> None:
    """GET ``path`` of the pages over ``store`` on a real server, hang up once its read ``started``, and wait for
    the server to say it stopped the read (it never ends by itself)."""
    caplog.set_level(logging.WARNING, logger="ragtrace_collector")
    with served(Starlette(routes=page_routes(store))) as base:
        address = urlsplit(base)
        client = socket.create_connection((address.hostname, address.port))
        client.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert started.wait(30)
        client.close()  # the reader gives up
        deadline = time.monotonic() + 30
        while not any("the client went away" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, f"the read of {path} went on after its client left"
            time.sleep(0.05)


def test_a_page_whose_client_disconnects_stops_reading(
    open_store: Callable[[], Any], store_target: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store()
    started = threading.Event()
    endless = _ENDLESS[_engine(store_target)]

    def slow_list(conn: Any, f: Any) -> Any:
        started.set()
        return conn.execute(endless).fetchall()

    monkeypatch.setattr("ragtrace_collector._triage._routes.list_records", slow_list)
    _hang_up_while_reading(store, "/records", started, caplog)


def test_the_overview_whose_client_disconnects_stops_reading(
    open_store: Callable[[], Any], store_target: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = open_store()
    started = threading.Event()
    endless = _ENDLESS[_engine(store_target)]

    def slow_summary(source: Any, **_: Any) -> Any:
        started.set()
        from ragtrace_collector._store import reading

        with reading(source) as conn:  # a connection the store opens: within the request's budget
            return conn.execute(endless).fetchall()

    monkeypatch.setattr("ragtrace_collector._report._page.summary", slow_summary)
    _hang_up_while_reading(store, "/", started, caplog)


def test_the_alert_api_whose_client_disconnects_stops_reading(
    open_store: Callable[[], Any], store_target: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """``GET /api/alerts`` reads within the same budget as the pages, and stops when its client leaves."""
    from ragtrace_collector._http import alert_api_routes

    open_store().close()
    started = threading.Event()
    endless = _ENDLESS[_engine(store_target)]

    def slow_views(conn: Any, now_ns: int) -> Any:
        started.set()
        return conn.execute(endless).fetchall()

    monkeypatch.setattr("ragtrace_collector._http._alert_api.group_views", slow_views)
    caplog.set_level(logging.WARNING, logger="ragtrace_collector")
    with served(Starlette(routes=alert_api_routes(store_target, query_seconds=3600))) as base:
        address = urlsplit(base)
        client = socket.create_connection((address.hostname, address.port))
        client.sendall(b"GET /api/alerts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert started.wait(30)
        client.close()
        deadline = time.monotonic() + 30
        while not any("the client went away" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the alert API's read went on after its client left"
            time.sleep(0.05)


@pytest.mark.parametrize("call", ["list", "silence", "ack", "unsilence"])
def test_alert_api_store_work_past_its_budget_is_a_503_and_writes_nothing(
    open_store: Callable[[], Any], store_target: str, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """Every alert API request's store work (the listing, and the reads and writes of an ack or a silence) stops at
    its budget: a 503 naming it, and nothing written."""
    import httpx
    from ragtrace_collector._http import alert_api_routes
    from ragtrace_collector._store.alerts import silences

    open_store().close()
    endless = _ENDLESS[_engine(store_target)]

    def stuck(conn: Any, *args: Any, **kwargs: Any) -> Any:
        return conn.execute(endless).fetchall()

    target = {"list": "group_views", "silence": "add_silence", "ack": "group_state", "unsilence": "expire_silence"}
    monkeypatch.setattr(f"ragtrace_collector._http._alert_api.{target[call]}", stuck)
    with served(Starlette(routes=alert_api_routes(store_target, query_seconds=0.3))) as base:
        if call == "list":
            reply = httpx.get(f"{base}/api/alerts", timeout=30)
        elif call == "silence":
            reply = httpx.post(f"{base}/api/silences", json={"rule": "r", "duration": "1h"}, timeout=30)
        elif call == "ack":
            reply = httpx.post(f"{base}/api/alerts/ack", json={"rule": "r"}, timeout=30)
        else:
            reply = httpx.delete(f"{base}/api/silences/1", timeout=30)
    assert reply.status_code == 503, reply.text
    assert "longer than 0.3 s" in reply.json()["error"]
    from ragtrace_collector._store import reading

    with reading(store_target) as conn:
        assert silences(conn) == []
