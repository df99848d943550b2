"""Fixtures of the collector tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collector._postgres import PostgresServer, postgres_bin, running_postgres
from tests.collector._webhook import Receiver


@pytest.fixture
def offline_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """The collector scores every record (``RAGTRACE_SAMPLE_RATE=1.0``) with the offline judge and the production
    suite, whatever the environment sets: no key or base URL can send a test's content to an API."""
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    for name in ("OPENAI_API_KEY", "RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_METRICS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the test session (Debian's; ``make system-deps`` installs it)."""
    if postgres_bin() is None:
        pytest.skip("Debian's PostgreSQL is not installed: run `make system-deps`")
    with running_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store for the test on one engine (the parameter): a SQLite file's path in ``tmp_path``, or the URL of a
    fresh database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "c.db")
    return str(request.getfixturevalue("postgres_server").database())


@pytest.fixture
def open_store(store_target: str) -> Iterator[Callable[[], Any]]:
    """``open_store()``: the test's store (``store_target``), opened again at each call (a restart); every store
    opened is closed after the test."""
    from ragtrace_collector._store import open_store as open_target

    opened: list[Any] = []

    def make() -> Any:
        opened.append(open_target(store_target))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on 127.0.0.1, closed after the test."""
    r = Receiver()
    yield r
    r.close()
