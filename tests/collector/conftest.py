"""Fixtures of the collector tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.collector._postgres import PostgresServer, postgres_bin, running_postgres


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
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """``open_store()``: a store on one engine (the parameter) and one database for the test: a SQLite file in
    ``tmp_path``, or a fresh database on the session's PostgreSQL server. Each call opens it again (a restart);
    every store opened is closed after the test."""
    from ragtrace_collector._store import open_store as open_target

    if request.param == "sqlite":
        target = str(tmp_path / "c.db")
    else:
        target = request.getfixturevalue("postgres_server").database()
    opened: list[Any] = []

    def make() -> Any:
        opened.append(open_target(target))
        return opened[-1]

    yield make
    for store in opened:
        store.close()
