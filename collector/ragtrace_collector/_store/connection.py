"""Connections to the store: the only place the collector opens one.

A store is named by a *target*: a SQLite file's path, or a ``postgresql://`` URL (``postgres.PgConnection``
then, which reads the same SQL).

* ``connect(target)``: read-write, for a part of the collector that writes from a thread of its own (the
  watcher, the alert API, the Phoenix cursor). A file must exist unless ``create``; the store is migrated to the
  current schema first (``migrations.migrate``), so every writer sees every table.
* ``connect_readonly(target)``: read-only (SQLite ``mode=ro``; a PostgreSQL session whose transactions are read
  only), for readers that must never write, nor create a file (the report of a copied file, the tail the
  Phoenix annotator reads, ``/metrics``, the pages).
* ``reading(source)``: a read-only connection to a path or a store (a connection passed in is used as it
  is and left open; a ``PostgresStore`` lends a pooled one, ``LendsReaders``), closed or handed back after the
  block; ``snapshot(source)``: the same inside one read transaction.

``Connection`` and ``DatabaseError`` are what the rest of the collector names: it never imports the driver.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable
from urllib.parse import quote

from ragtrace_collector._store.dialect import SQLITE, AnyConnection, dialect_of
from ragtrace_collector._store.migrations import migrate

if TYPE_CHECKING:
    from ragtrace_collector._store.postgres import PgConnection

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "Connection",
    "DatabaseError",
    "LendsReaders",
    "QueryBudget",
    "ReadInterrupted",
    "Target",
    "connect",
    "connect_readonly",
    "connect_sqlite",
    "file_of",
    "insert_returning_id",
    "is_postgres",
    "reading",
    "snapshot",
    "within",
    "writing",
]

Connection: TypeAlias = "sqlite3.Connection | PgConnection"
"""A connection of either engine; the rest of the collector hands it to the store's functions, nothing more."""
DatabaseError: TypeAlias = sqlite3.Error
"""Any error of the SQLite engine (locked, corrupt, not a database, disk full): callers catch this, not the
driver's. (PostgreSQL's are psycopg's, and the ``PostgresStore`` turns a failed write into ``StoreError``.)"""

Target: TypeAlias = "str | os.PathLike[str]"
"""A store: a SQLite file's path, or a ``postgresql://`` URL."""


def is_postgres(target: object) -> bool:
    """Whether ``target`` names a PostgreSQL store (``postgresql://`` or ``postgres://``)."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


BUSY_TIMEOUT_SECONDS = 30.0
"""How long a statement waits for another writer's lock before it fails."""


def _uri(path: str | os.PathLike[str], mode: str) -> str:
    return f"file:{quote(str(Path(path).resolve()))}?mode={mode}"


def connect(
    path: Target,
    *,
    create: bool = False,
    timeout: float = BUSY_TIMEOUT_SECONDS,
    check_same_thread: bool = True,
) -> Connection:
    """A read-write connection to the store ``path`` names, its schema migrated to the current version.

    ``create``: make the file when it does not exist (the ``Store`` does; other writers open what it made).
    """
    if is_postgres(path):
        from ragtrace_collector._store.postgres import connect_postgres

        pg = connect_postgres(str(path), timeout=timeout)
        try:
            migrate(pg)
        except BaseException:
            pg.close()
            raise
        return pg
    return connect_sqlite(path, create=create, timeout=timeout, check_same_thread=check_same_thread)


def connect_sqlite(
    path: str | os.PathLike[str],
    *,
    create: bool = False,
    timeout: float = BUSY_TIMEOUT_SECONDS,
    check_same_thread: bool = True,
) -> sqlite3.Connection:
    """``connect`` for a SQLite file (the ``Store``'s own connection)."""
    conn = sqlite3.connect(
        _uri(path, "rwc" if create else "rw"), uri=True, timeout=timeout, check_same_thread=check_same_thread
    )
    try:
        # As the store's own writes: WAL keeps every committed transaction over a process crash.
        conn.execute("PRAGMA synchronous=NORMAL")
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: Target, *, timeout: float = BUSY_TIMEOUT_SECONDS, check_same_thread: bool = True) -> Any:
    """A read-only connection to the store ``path`` names (which must exist); never migrates or writes."""
    if is_postgres(path):
        from ragtrace_collector._store.postgres import connect_postgres

        return connect_postgres(str(path), timeout=timeout, read_only=True)
    return sqlite3.connect(_uri(path, "ro"), uri=True, timeout=timeout, check_same_thread=check_same_thread)


@runtime_checkable
class LendsReaders(Protocol):
    """A store that lends read-only connections from a pool of its own (``PostgresStore``): ``reading`` borrows
    one instead of connecting."""

    def lend_reader(self, timeout: float) -> contextlib.AbstractContextManager[Any]:
        """A read-only connection for the block, waiting at most ``timeout`` seconds for a free one."""
        ...


class ReadInterrupted(RuntimeError):
    """A read stopped before it finished: its time budget ran out, or whoever asked for it went away."""


class QueryBudget:
    """How long one request's reads may run, and a switch that stops them at once (the client left).

    SQLite checks it every few thousand steps of the statement running (a progress handler); PostgreSQL gets the
    time left as ``statement_timeout`` and a cancel request when ``cancel()`` is called. Either way the read
    raises ``ReadInterrupted``, so one request costs at most its budget, and nothing once nobody waits for it.
    Reads take it from ``within(budget)`` around them (a context variable), or from ``snapshot``'s argument.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.cancelled = threading.Event()
        self._on_cancel: list[Callable[[], object]] = []
        self._lock = threading.Lock()

    def over(self) -> bool:
        """Whether the reads must stop now."""
        return self.cancelled.is_set() or time.monotonic() > self.deadline

    def left_ms(self) -> int:
        return max(1, int((self.deadline - time.monotonic()) * 1000))

    def cancel(self) -> None:
        """Stop the reads now (from any thread)."""
        with self._lock:
            self.cancelled.set()
            # Under the lock: once a hook's remover returns, the hook is not running and never will, so a pooled
            # connection handed back after its block is never cancelled for its next user.
            for hook in self._on_cancel:
                with contextlib.suppress(Exception):
                    hook()

    def on_cancel(self, hook: Callable[[], object]) -> Callable[[], None]:
        """Call ``hook`` when the reads are cancelled (at once if they already are). Returns its remover: after
        it returns, ``hook`` is not running and is never called."""
        with self._lock:
            self._on_cancel.append(hook)
            if self.cancelled.is_set():
                with contextlib.suppress(Exception):
                    hook()

        def remove() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._on_cancel.remove(hook)

        return remove


_BUDGET: contextvars.ContextVar[QueryBudget | None] = contextvars.ContextVar("ragtrace_query_budget", default=None)
_STEPS_PER_CHECK = 20_000
"""SQLite virtual-machine steps between two looks at the budget (a few hundred microseconds of work)."""


@contextlib.contextmanager
def within(budget: QueryBudget) -> Iterator[QueryBudget]:
    """Every connection ``reading`` opens in the block (in this thread or task) reads within ``budget``."""
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


@contextlib.contextmanager
def _bounded(conn: Any, budget: QueryBudget | None) -> Iterator[None]:
    """Hold ``conn``'s statements to ``budget`` for the block; an interrupted one raises ``ReadInterrupted``."""
    if budget is None:
        yield
        return
    sqlite = dialect_of(conn) is SQLITE
    remove: Callable[[], None] | None = None
    if sqlite:
        conn.set_progress_handler(lambda: 1 if budget.over() else 0, _STEPS_PER_CHECK)
    else:
        conn.execute(f"SET statement_timeout = {budget.left_ms()}")
        remove = budget.on_cancel(conn.raw.cancel)
    try:
        yield
    except Exception as exc:
        if _interrupted(exc):
            raise ReadInterrupted(
                "the client went away" if budget.cancelled.is_set() else f"longer than {budget.seconds:g} s"
            ) from None
        raise
    finally:
        if sqlite:
            conn.set_progress_handler(None, 0)
        if remove is not None:
            remove()


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is the engine stopping a statement (SQLite's progress handler, PostgreSQL's timeout or
    cancel request)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "interrupted" in str(exc)
    return type(exc).__name__ == "QueryCanceled"


@contextlib.contextmanager
def reading(source: object) -> Iterator[Connection]:
    """A read-only connection to ``source`` for the block: a path or URL, a store (the collector's ``Store``
    opens its file again; a ``PostgresStore`` lends one from its readers' pool), or an open connection or
    ``sqlite_utils.Database`` (used as it is and left open). ``TypeError`` for anything else. A connection opened
    or lent here reads within the budget of ``within`` around it, if any (waiting for a lent one too)."""
    # An open connection, or a sqlite_utils.Database holding one: the caller's, left open.
    conn = source if isinstance(source, sqlite3.Connection) else getattr(source, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        yield conn
        return
    budget = _BUDGET.get()
    if isinstance(source, LendsReaders):
        with source.lend_reader(budget.left_ms() / 1000 if budget is not None else BUSY_TIMEOUT_SECONDS) as lent:
            try:
                with _bounded(lent, budget):
                    yield lent
            finally:
                if budget is not None and budget.cancelled.is_set():
                    # Its statement may have been cancelled as it ended: a fresh session for the next page.
                    lent.close()
        return
    path = getattr(source, "target", source)  # a Store: what opens it again
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"a store is read from a path or a Store, not {type(source)!r}")
    # Connecting is part of the read: within the budget's time left, when there is one.
    opened = connect_readonly(path, timeout=budget.left_ms() / 1000) if budget is not None else connect_readonly(path)
    try:
        with _bounded(opened, budget):
            yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def writing(source: object) -> Iterator[Any]:
    """A read-write connection to the store ``source`` names or is (made when missing) for a request's writes (the alert
    API's acknowledgements and silences, people's reviews), closed after the block. Its statements run within the
    budget of ``within`` around it, as a page's reads do: connecting waits at most the time left, and a statement
    past it, or running when the budget is cancelled, raises ``ReadInterrupted`` (its transaction rolled back)."""
    target = getattr(source, "target", source)  # a Store or PostgresStore: what opens it again
    if not isinstance(target, str | os.PathLike):
        raise TypeError(f"a store is written through a path or a Store, not {type(source)!r}")
    budget = _BUDGET.get()
    conn = connect(target, create=True, timeout=budget.left_ms() / 1000 if budget else BUSY_TIMEOUT_SECONDS)
    try:
        with _bounded(conn, budget):
            yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def snapshot(source: object, budget: QueryBudget | None = None) -> Iterator[Connection]:
    """``reading(source)`` inside one read transaction: the block's statements see one snapshot of the store
    (a page's rows, then the newest row it counts as seen), so a record committed between them is neither
    shown nor skipped. Nothing is written; the transaction is rolled back. With a ``budget`` (or one from
    ``within``), a statement that runs past it, or is running when it is cancelled, raises ``ReadInterrupted``."""
    with within(budget) if budget is not None else contextlib.nullcontext(), reading(source) as opened:
        conn: Any = opened
        # PostgreSQL's default isolation takes a snapshot per statement; REPEATABLE READ keeps one.
        conn.execute("BEGIN" if dialect_of(conn) is SQLITE else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield conn
        finally:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")


def file_of(database: object) -> Path | None:
    """The file behind an open connection or ``sqlite_utils.Database`` (None: in memory, or not one)."""
    conn = database if isinstance(database, sqlite3.Connection) else getattr(database, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return None
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None


def insert_returning_id(conn: AnyConnection, sql: str, args: Sequence[Any]) -> int:
    """Run the ``INSERT`` ``sql`` (inside the caller's transaction) and return the ``id`` the store gave its row."""
    if dialect_of(conn) is SQLITE:
        cursor = conn.execute(sql, args)
        assert cursor.lastrowid is not None
        return int(cursor.lastrowid)
    return int(conn.execute(f"{sql} RETURNING id", args).fetchone()[0])
