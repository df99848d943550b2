"""Connections to the store's file: the only place the collector opens one.

* ``connect(path)``: read-write, for a part of the collector that writes from a thread of its own (the
  watcher, the alert API, the Phoenix cursor). The file must exist unless ``create``; it is migrated to the
  current schema first (``migrations.migrate``), so every writer sees every table.
* ``connect_readonly(path)``: read-only (``mode=ro``), for readers that must never write, nor create a file
  (the report of a copied file, the tail the Phoenix annotator reads, ``/metrics``).
* ``reading(source)``: a read-only connection to a path or a ``Store`` (a connection passed in is used as it
  is and left open), closed after the block; ``snapshot(source)``: the same inside one read transaction.

``Connection`` and ``DatabaseError`` are what the rest of the collector names: it never imports the driver.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TypeAlias
from urllib.parse import quote

from ragtrace_collector._store.migrations import migrate

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "Connection",
    "DatabaseError",
    "connect",
    "connect_readonly",
    "file_of",
    "reading",
    "snapshot",
    "table_names",
]

Connection: TypeAlias = sqlite3.Connection
DatabaseError: TypeAlias = sqlite3.Error
"""Any error of the engine (locked, corrupt, not a database, disk full): callers catch this, not the driver's."""

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a statement waits for another writer's lock before it fails."""


def _uri(path: str | os.PathLike[str], mode: str) -> str:
    return f"file:{quote(str(Path(path).resolve()))}?mode={mode}"


def connect(
    path: str | os.PathLike[str],
    *,
    create: bool = False,
    timeout: float = BUSY_TIMEOUT_SECONDS,
    check_same_thread: bool = True,
) -> Connection:
    """A read-write connection to the store at ``path``, its schema migrated to the current version.

    ``create``: make the file when it does not exist (the ``Store`` does; other writers open what it made).
    """
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


def connect_readonly(
    path: str | os.PathLike[str], *, timeout: float = BUSY_TIMEOUT_SECONDS, check_same_thread: bool = True
) -> Connection:
    """A read-only connection to the store at ``path`` (which must exist); never migrates or writes."""
    return sqlite3.connect(_uri(path, "ro"), uri=True, timeout=timeout, check_same_thread=check_same_thread)


@contextlib.contextmanager
def reading(source: object) -> Iterator[Connection]:
    """A read-only connection to ``source`` for the block: a path, an object with a ``path`` (the collector's
    ``Store``), or an open connection or ``sqlite_utils.Database`` (used as it is and left open). ``TypeError``
    for anything else."""
    # An open connection, or a sqlite_utils.Database holding one: the caller's, left open.
    conn = source if isinstance(source, sqlite3.Connection) else getattr(source, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        yield conn
        return
    path = getattr(source, "path", source)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"a store is read from a path or a Store, not {type(source)!r}")
    opened = connect_readonly(path)
    try:
        yield opened
    finally:
        opened.close()


@contextlib.contextmanager
def snapshot(source: object) -> Iterator[Connection]:
    """``reading(source)`` inside one read transaction: the block's statements see one snapshot of the store
    (a page's rows, then the newest row it counts as seen), so a record committed between them is neither
    shown nor skipped. Nothing is written; the transaction is rolled back."""
    with reading(source) as conn:
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")


def file_of(database: object) -> Path | None:
    """The file behind an open connection or ``sqlite_utils.Database`` (None: in memory, or not one)."""
    conn = database if isinstance(database, sqlite3.Connection) else getattr(database, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return None
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None


def table_names(conn: Connection) -> set[str]:
    """The tables the file holds (a file read without migrating may lack some)."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
