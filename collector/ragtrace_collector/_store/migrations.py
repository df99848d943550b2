"""Versioned migrations: the one way the store's schema is created or changed.

The file's schema version is SQLite's ``PRAGMA user_version`` (0 for a new file, and for every file an
earlier collector wrote, which predates versions). ``migrate`` runs the steps above the file's version, in
order, each in the one transaction that also moves the version on, and returns the version reached. It takes
SQLite's write lock first (``BEGIN IMMEDIATE``) and reads the version under it, so processes that start on
one file at once (the server, its decode workers, the watcher, ``prune``) never race: the first migrates, the
others find the work done.

A step is a function of the connection. Step 1 is the baseline: every table and index of ``schema.py``, made
where missing, and the columns an earlier collector's file lacks (``rag_records.reason``, ``scores.claims``,
``alerts.silenced``), added with their rows kept. A later change of schema is a new step appended to ``STEPS``
(never an edit of an old one), and ``schema.py`` shows the result.

A file whose version is above ``CURRENT`` was written by a newer collector: ``SchemaTooNew``, since this one
would misread it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

from ragtrace_collector._store.schema import ALERT_ACKS, TABLES

__all__ = ["CURRENT", "STEPS", "SchemaTooNew", "migrate", "version"]


class SchemaTooNew(RuntimeError):
    """The file was written by a newer collector (its schema version is above this one's)."""


def _baseline(conn: sqlite3.Connection) -> None:
    for table in TABLES:
        conn.execute(table.ddl())
        present = {row[1] for row in conn.execute(f"PRAGMA table_info([{table.name}])")}
        for column in table.columns:
            if column not in present:  # a file from before the column: keep its rows, add the column
                conn.execute(f"ALTER TABLE [{table.name}] ADD COLUMN {table.column_ddl(column)}")
        for ddl in table.index_ddl():
            conn.execute(ddl)
    # Earlier collectors named this one index by hand; the schema's name replaces it.
    conn.execute(f"DROP INDEX IF EXISTS [idx_{ALERT_ACKS}_episode]")


STEPS: Final[tuple[Callable[[sqlite3.Connection], None], ...]] = (_baseline,)
"""Step ``i`` takes a file from version ``i`` to ``i + 1``."""
CURRENT: Final = len(STEPS)


def version(conn: sqlite3.Connection) -> int:
    """The file's schema version (0: new, or written before versions)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the file to ``CURRENT``; return the version it was at. Commits; safe to run from several processes
    at once. ``SchemaTooNew`` when the file is ahead of this collector."""
    found = version(conn)  # without the lock first: the usual case, a current file, takes no write lock
    if found == CURRENT:
        return found
    if conn.in_transaction:
        conn.commit()
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = version(conn)
        if found > CURRENT:
            raise SchemaTooNew(
                f"the store's schema is version {found}, newer than this collector's {CURRENT}: "
                "upgrade ragtrace-collector, or point it at another file"
            )
        for step in STEPS[found:]:
            step(conn)
        # PRAGMA takes no bound parameter; CURRENT is this module's own integer.
        conn.execute(f"PRAGMA user_version = {CURRENT}")
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return found
