"""The store: the one owner of the collector's tables, connections, queries and migrations.

Nothing else in the collector opens a connection, writes SQL or imports the driver. One module per part of the
collector it serves:

* ``store.py``: ``Store``, the writer (the receivers' one transaction per request, its locks, checkpoints);
  ``connection.py``: every other connection (read-write for the watcher and the alert API, read-only for pages
  and reports), ``Connection`` and ``DatabaseError``; ``storage.py``: ``Storage``, the role both engines' writers
  play, and its ``StoreError``; ``urls.py``: a store's URL without its password.
* ``schema.py``: every table, defined once; ``migrations.py``: the versioned steps that create and change them;
  ``dialect.py``: where the engines' SQL differs; ``postgres.py``: the PostgreSQL engine (``PostgresStore``).
* ``ingest.py``: the upserts of a received batch; ``retention.py``: ``prune``.
* ``alerts.py``: the watcher's scores and state, silences, acknowledgements and group views.
* ``reviews.py``: people's reviews of records, their export and the judge's agreement with them.
* ``join.py``: the joiner's reads of foreign-instrumentation traces.
* ``triage.py`` and ``report.py``: the pages' and the report's reads; ``phoenix.py``: the Phoenix annotator's
  tail of ``scores`` and its durable cursor.

The file is SQLite (WAL), created with the tables and names sqlite-utils uses, so it opens as it is in
Datasette.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ragtrace_collector._store.connection import (
    Connection,
    DatabaseError,
    LendsReaders,
    QueryBudget,
    ReadInterrupted,
    connect,
    connect_readonly,
    file_of,
    is_postgres,
    reading,
    snapshot,
    within,
    writing,
)
from ragtrace_collector._store.migrations import SchemaTooNew
from ragtrace_collector._store.schema import (
    ALERT_ACKS,
    ALERT_GROUPS,
    ALERT_SILENCES,
    ALERT_TABLES,
    ALERTS,
    JOIN_PENDING,
    PHOENIX_CURSOR,
    RAG_RECORDS,
    REVIEWS,
    SCORES,
    SPANS,
)
from ragtrace_collector._store.storage import Storage, StoreError
from ragtrace_collector._store.store import Store
from ragtrace_collector._store.urls import redacted_url

if TYPE_CHECKING:
    from ragtrace_collector._store.postgres import PostgresStore

__all__ = [
    "ALERTS",
    "ALERT_ACKS",
    "ALERT_GROUPS",
    "ALERT_SILENCES",
    "ALERT_TABLES",
    "JOIN_PENDING",
    "PHOENIX_CURSOR",
    "RAG_RECORDS",
    "REVIEWS",
    "SCORES",
    "SPANS",
    "Connection",
    "DatabaseError",
    "LendsReaders",
    "QueryBudget",
    "ReadInterrupted",
    "SchemaTooNew",
    "Storage",
    "Store",
    "StoreError",
    "connect",
    "connect_readonly",
    "file_of",
    "is_postgres",
    "open_store",
    "reading",
    "redacted_url",
    "snapshot",
    "within",
    "writing",
]


def open_store(target: str | os.PathLike[str]) -> Store | PostgresStore:
    """The store ``target`` names: a ``postgresql://`` URL opens a ``PostgresStore`` (psycopg is imported only
    then), anything else a SQLite file (``Store``). Either is migrated to the current schema."""
    text = os.fspath(target)
    if is_postgres(text):
        from ragtrace_collector._store.postgres import PostgresStore

        return PostgresStore(text)
    return Store(text)
