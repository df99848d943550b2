"""The PostgreSQL engine: ``PgConnection`` (psycopg 3 behind the interface the store's SQL is written against)
and ``PostgresStore`` (the writer over a connection pool).

``PgConnection`` runs psycopg in autocommit and keeps transactions itself, as ``sqlite3`` does for the store:
``with conn:`` is one transaction (committed on success, rolled back on an exception), ``commit``/``rollback``
end the one open, and a statement outside ``with`` runs on its own. Statements are the store's one SQL text:
``?`` placeholders become psycopg's ``%s`` (a literal ``%`` is doubled), once per statement text.

``PostgresStore`` has the ``Store``'s writer interface (``write``, ``prune``, ``read``, ``change``,
``rag_record``, ``close``). Every write is one transaction on a pooled connection and returns after the commit,
so a receiver that acknowledges after ``write`` never acknowledges what a crash could lose; a write that could
not commit raises ``StoreError``. Writers run concurrently (PostgreSQL locks rows, not the database): a
deadlock between two batches that upsert the same rows in another order is retried once, then reported.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import pq
from psycopg.types.string import StrBinaryDumper, StrDumperUnknown
from psycopg_pool import ConnectionPool, PoolTimeout

from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import ingest, retention
from ragtrace_collector._store.connection import ReadInterrupted
from ragtrace_collector._store.dialect import POSTGRESQL, Dialect
from ragtrace_collector._store.migrations import MissingExtension, migrate
from ragtrace_collector._store.storage import StoreError
from ragtrace_collector._store.urls import redacted_url

__all__ = ["PgConnection", "PostgresStore", "connect_postgres"]

T = TypeVar("T")

_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%")


@functools.lru_cache(maxsize=512)
def _pg_sql(sql: str) -> str:
    """The store's SQL with psycopg's placeholders: ``?`` outside string literals and quoted identifiers becomes
    ``%s``; every ``%`` (in a literal too) is doubled, since psycopg reads the text as a format string. The store's
    SQL has no comments, dollar-quoted bodies or ``E''`` strings with a ``?`` in them (none would be read right)."""

    def swap(match: re.Match[str]) -> str:
        found = match.group(0)
        if found == "?":
            return "%s"
        return found.replace("%", "%%")

    return _PLACEHOLDER.sub(swap, sql)


class _NulSafeText(StrDumperUnknown):
    def dump(self, obj: str) -> Any:
        return super().dump(obj.replace("\x00", "\ufffd"))


class _NulSafeBinary(StrBinaryDumper):
    def dump(self, obj: str) -> Any:
        return super().dump(obj.replace("\x00", "\ufffd"))


class PgConnection:
    """A psycopg connection with the interface the store's SQL uses on ``sqlite3`` (see the module's doc)."""

    dialect: Dialect = POSTGRESQL

    def __init__(self, conn: psycopg.Connection[Any], *, nul_safe: bool = True) -> None:
        """``nul_safe``: write NUL in strings as U+FFFD (see ``nul_safe``); the ingest pool's connections start
        without it, for speed, and take it when a batch needs it."""
        self.raw = conn
        self.raw.autocommit = True
        if nul_safe:
            self.nul_safe()

    def nul_safe(self) -> None:
        """Write NUL in strings as U+FFFD from now on: PostgreSQL's text cannot hold NUL, which SQLite stores and
        senders may put in any string, and an export refused for it would be refused on every retry. (A Python
        dumper for every string costs the ingest path about a fifth, so the pool's connections take it only once
        a batch failed for a NUL.)"""
        self.raw.adapters.register_dumper(str, _NulSafeText)
        self.raw.adapters.register_dumper(str, _NulSafeBinary)

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        return self.raw.execute(_pg_sql(sql), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor()
        cursor.executemany(_pg_sql(sql), list(rows))
        return cursor

    @contextmanager
    def staged(self, table: str, columns: dict[str, type], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
        """``rows`` copied (``COPY``) into a temporary table shaped as ``table``'s ``columns``, for the block;
        its name. The table lives as long as the connection (the pool keeps it open) and is emptied after the
        block, so the next batch of the transaction finds it empty. It is made when missing in every transaction
        (a cheap no-op when it exists): one made in a transaction that rolled back is gone."""
        name = f"ragtrace_staging_{table}"
        declared = ", ".join(f"{column} {self.dialect.types[kind]}" for column, kind in columns.items())
        self.raw.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} ({declared}) ON COMMIT DELETE ROWS")
        with self.raw.cursor().copy(f"COPY {name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        yield name
        # Emptied on success only: after an error the transaction is aborted (and rolls the rows back), and a
        # statement here would hide the error (a deadlock, which ``write`` retries) behind "transaction aborted".
        self.raw.execute(f"TRUNCATE {name}")

    def begin(self) -> None:
        if not self.in_transaction:
            self.raw.execute("BEGIN")

    def commit(self) -> None:
        if self.in_transaction:
            self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.raw.execute("ROLLBACK")

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> PgConnection:
        self.begin()
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.rollback()


def connect_postgres(
    url: str,
    *,
    timeout: float = 30.0,
    read_only: bool = False,
    options: str = "",
    keepalives: dict[str, int] | None = None,
) -> PgConnection:
    """A connection of its own to the database at ``url`` (not from a pool: for a reader or writer on a thread
    of its own). ``read_only``: every transaction of the session is read only. ``timeout``: how long a
    statement may wait for a lock before it fails (``lock_timeout``), and the connect timeout. ``options``:
    more settings of the session (``-c name=value``); ``keepalives``: libpq's TCP keepalive parameters."""
    settings = f"-c lock_timeout={int(timeout * 1000)} {options}".strip()
    if read_only:
        settings += " -c default_transaction_read_only=on"
    extra: dict[str, Any] = dict(keepalives or {})
    raw = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)), options=settings, **extra)
    return PgConnection(raw)


_READER_LOCK_TIMEOUT_MS = 30_000
"""How long a page's statement waits for a lock (a read rarely takes one; a migration's would hold it)."""


def _read_connection(conn: psycopg.Connection[Any]) -> None:
    """A new reader: NUL in a searched string is read as U+FFFD, as it was stored (``PgConnection.nul_safe``)."""
    PgConnection(conn, nul_safe=True)


def _reset_reader(conn: psycopg.Connection[Any]) -> None:
    """A reader handed back: its session settings back to their defaults (the startup options' read only)."""
    conn.execute("RESET ALL")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _probe(url: str, display: str, timeout: float) -> None:
    """Connect once, to say why when the pool could not (it would only say it timed out)."""
    try:
        psycopg.connect(url, connect_timeout=max(1, int(timeout))).close()
    except psycopg.Error as exc:
        raise StoreError(
            f"{display}: could not connect ({_first_line(exc)}); check the URL, that PostgreSQL runs there and "
            "that it accepts this user and database"
        ) from None


class PostgresStore:
    """The collector's store in a PostgreSQL database. ``PostgresStore(url)`` connects, migrates the schema to
    the current version (safe with several replicas starting at once) and keeps a pool of ``pool_size``
    connections; ``StoreError`` (from ``storage.py``) when a write could not commit."""

    def __init__(self, url: str, *, pool_size: int = 4, read_pool_size: int = 8, connect_timeout: float = 10.0) -> None:
        """``pool_size``: connections for the collector's writes and its own reads; ``read_pool_size``: read-only
        connections lent to the pages and APIs (``lend_reader``), opened on the first page read."""
        self.url = url
        self.target = url
        self.path = None
        self.write_lock = None
        self.display = redacted_url(url)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
            timeout=connect_timeout,
            open=False,
            name="ragtrace-store",
        )
        self._closed = threading.Event()
        self._read_pool_size = read_pool_size
        self._connect_timeout = max(1, int(connect_timeout))
        self._readers: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._readers_lock = threading.Lock()
        try:
            _probe(url, self.display, connect_timeout)
            self._pool.open(wait=True, timeout=connect_timeout)
            with self.connection() as conn:
                migrate(conn)
        except psycopg.errors.InsufficientPrivilege as exc:
            self.close()
            raise StoreError(
                f"{self.display}: the user may not create the collector's tables ({_first_line(exc)}); grant it "
                "CREATE on the schema (GRANT CREATE ON SCHEMA public TO the_user) or connect as the database's owner"
            ) from None
        except MissingExtension as exc:
            self.close()
            raise StoreError(f"{self.display}: {exc}") from None
        except BaseException:
            self.close()  # a store that did not open leaves no connection or pool thread behind
            raise

    @contextmanager
    def connection(self, *, nul_safe: bool = False) -> Iterator[PgConnection]:
        """A pooled connection for the block (returned to the pool after, whatever its state)."""
        with self._pool.connection() as raw:
            yield PgConnection(raw, nul_safe=nul_safe)

    @contextmanager
    def lend_reader(self, timeout: float) -> Iterator[PgConnection]:
        """A read-only connection from the readers' pool for the block, waiting at most ``timeout`` seconds for one
        (``ReadInterrupted`` then: every reader is busy). A page's read thus skips connecting (a few to twenty
        milliseconds a page). What the block set on the session is reset when it is handed back (``RESET ALL``:
        the budget's ``statement_timeout``); one it closed, or that PostgreSQL closed, is replaced."""
        pool = self._reader_pool()
        try:
            borrowed = pool.getconn(timeout=timeout)
        except PoolTimeout:
            raise ReadInterrupted(f"longer than {timeout:g} s waiting for a free read connection") from None
        try:
            yield PgConnection(borrowed, nul_safe=False)
        finally:
            pool.putconn(borrowed)

    def _reader_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        with self._readers_lock:
            if self._closed.is_set():
                raise StoreError(f"{self.display}: the store is closed")
            if self._readers is None:
                self._readers = ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self._read_pool_size,
                    kwargs={
                        "autocommit": True,
                        "connect_timeout": self._connect_timeout,
                        # Session defaults, so RESET ALL returns to them: read only, and as the unpooled readers.
                        "options": f"-c default_transaction_read_only=on -c lock_timeout={_READER_LOCK_TIMEOUT_MS}",
                    },
                    configure=_read_connection,
                    reset=_reset_reader,
                    # A connection PostgreSQL dropped (a restart) is found before a page uses it, not by its error.
                    check=ConnectionPool.check_connection,
                    open=False,
                    name="ragtrace-readers",
                )
                self._readers.open(wait=False)
            return self._readers

    def write(self, batch: Batch) -> None:
        """Upsert the batch's rows in one transaction; return only after the commit (``StoreError`` else)."""
        if not (batch.spans or batch.rag_records or batch.scores or batch.log_scores or batch.pending or batch.settled):
            return
        nul_safe = False
        for attempt in (1, 2, 3):
            try:
                with self.connection(nul_safe=nul_safe) as conn, conn:
                    ingest.upsert(conn, batch)
                return
            except psycopg.errors.DeadlockDetected as exc:
                if attempt == 3:
                    raise StoreError(f"could not commit {len(batch.spans)} span(s): {exc}") from exc
            except psycopg.DataError as exc:
                if nul_safe or "0x00" not in str(exc):
                    raise StoreError(
                        f"could not commit {len(batch.spans)} span(s): {type(exc).__name__}: {exc}"
                    ) from exc
                nul_safe = True  # a string held NUL: again, writing it as U+FFFD
            except (psycopg.Error, OverflowError, ValueError, TypeError) as exc:
                raise StoreError(f"could not commit {len(batch.spans)} span(s): {type(exc).__name__}: {exc}") from exc

    def prune(self, older_than_ns: int, batch_rows: int = retention.BATCH_ROWS) -> dict[str, int]:
        """Delete every row older than ``older_than_ns`` in batches of ``batch_rows``, each its own transaction;
        return counts by table."""
        return retention.prune(self.change, older_than_ns, batch_rows)

    def read(self, query: Callable[..., T], *args: Any) -> T:
        """``query(connection, *args)`` on a pooled connection; ``StoreError`` when the database failed it."""
        try:
            with self.connection() as conn:
                return query(conn, *args)
        except psycopg.Error as exc:
            raise StoreError(f"could not read the store: {type(exc).__name__}: {exc}") from exc

    def change(self, change: Callable[..., T], *args: Any) -> T:
        """``change(connection, *args)`` in one transaction; ``StoreError`` when it could not commit."""
        try:
            with self.connection() as conn, conn:
                return change(conn, *args)
        except psycopg.Error as exc:
            raise StoreError(f"could not commit a change: {type(exc).__name__}: {exc}") from exc

    def rag_record(self, span_id: str) -> dict[str, Any] | None:
        """The stored RAG record of a span, or None."""
        return self.read(ingest.rag_record, span_id)

    def close(self) -> None:
        """Close the pool (idempotent)."""
        with self._readers_lock:
            if self._closed.is_set():
                return
            self._closed.set()
            readers, self._readers = self._readers, None
        self._pool.close()
        if readers is not None:
            readers.close()
