"""A real PostgreSQL server for the tests: Debian's PostgreSQL 15, started in a temp dir on a free loopback port.

PostgreSQL refuses to run as root, so when the tests run as root (CI, the sessions) ``initdb`` and ``pg_ctl`` run
as the ``postgres`` user the Debian package creates (``runuser -u postgres``). The server listens on 127.0.0.1
only, trusts local connections (it is reachable from this machine alone, for the life of the test session) and
is stopped, its directory removed, when the session ends: nothing is left running.

``PostgresServer.database()`` creates a fresh database for one test and returns its URL.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.collector._ports import free_port

__all__ = ["PostgresServer", "postgres_bin", "running_postgres"]

_VERSIONS = ("17", "16", "15")


def postgres_bin() -> Path | None:
    """The directory of Debian's PostgreSQL server binaries (initdb, pg_ctl), or None when not installed."""
    for version in _VERSIONS:
        found = Path(f"/usr/lib/postgresql/{version}/bin")
        if (found / "initdb").exists() and (found / "pg_ctl").exists():
            return found
    return None


def _as_server_user() -> list[str]:
    """The prefix that runs a command as ``postgres`` when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@dataclass
class PostgresServer:
    """A running server: ``port``, the superuser ``user``, and fresh databases on demand."""

    port: int
    user: str
    pg_ctl: list[str] = field(default_factory=list)
    """The ``pg_ctl`` command line of this server's data directory (as the server's user), for stop and start."""
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def stop(self) -> None:
        """Stop the server at once (``-m immediate``: no checkpoint, as a crash would), keeping its data."""
        subprocess.run([*self.pg_ctl, "-m", "immediate", "-w", "stop"], check=True, capture_output=True)

    def start(self) -> None:
        """Start it again on the same data directory and port (it recovers what was committed)."""
        subprocess.run([*self.pg_ctl, "-w", "-t", "60", "start"], check=True, capture_output=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        """A new, empty database; its URL."""
        import psycopg

        name = f"t{next(self._names)}_{os.getpid()}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def psql(self, url: str, sql: str) -> list[tuple[object, ...]]:
        """Run ``sql`` on ``url`` in autocommit and return the rows (none for a statement without any)."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            cursor = conn.execute(sql)  # type: ignore[call-overload]
            return list(cursor.fetchall()) if cursor.description else []


@contextlib.contextmanager
def running_postgres(*, durable: bool = False) -> Iterator[PostgresServer]:
    """Start a server for the block and stop it after; ``RuntimeError`` when it cannot start (the message says
    why: not installed, or the server's own log). Tests run it with ``fsync=off`` (nothing here outlives the
    session); ``durable`` keeps PostgreSQL's defaults (``fsync``, ``synchronous_commit``), as benchmarks must."""
    binaries = postgres_bin()
    if binaries is None:
        raise RuntimeError("Debian's PostgreSQL is not installed: run `make system-deps`")
    root = Path(tempfile.mkdtemp(prefix="ragtrace-pg-"))
    data, log = root / "data", root / "server.log"
    user = "postgres" if os.geteuid() == 0 else (os.environ.get("USER") or "postgres")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = free_port()
    prefix = _as_server_user()
    subprocess.run(
        [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
    )
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root}"
    if not durable:
        options += " -c fsync=off"
    pg_ctl = [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
    started = subprocess.run([*pg_ctl, "-w", "-t", "60", "start"], capture_output=True, text=True)
    try:
        if started.returncode != 0:
            text = log.read_text(errors="replace") if log.exists() else started.stderr
            raise RuntimeError(f"PostgreSQL did not start: {text[-2000:]}")
        yield PostgresServer(port, user, pg_ctl)
    finally:
        subprocess.run(
            [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)
