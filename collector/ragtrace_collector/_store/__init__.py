"""The SQLite store: one file, WAL, the tables of docs/collector.md, upserts keyed on the primary key.

``Store.write(batch)`` writes one request's rows in one transaction and returns only after the commit, so
a receiver that acknowledges after ``write`` returns never acknowledges what a crash could lose (``kill -9``
keeps every committed transaction: WAL with ``synchronous=NORMAL`` loses at most the last transactions on a
power cut, never on a process crash). Every write is an upsert keyed on the primary key: a retried export
never duplicates a row.

The schema is created with sqlite-utils so the file opens as it is in Datasette; the hot path is one
``executemany`` per table. Writes are serialised by a lock; readers in other threads should open their own
connection (``Store.reader()``).

The parts: ``_store.py`` (``Store``: the connection, its locks, the checkpoint thread, ``write`` in one
transaction), ``_schema.py`` (the tables, their columns and indexes), ``_writes.py`` (the upserts and pruning),
``_queries.py`` (the reads the collector makes on the writer's connection), ``_shared_lock.py`` (the write
lock shared with the decode processes), ``_alert_schema.py`` (the alert tables, which the watcher and the
alert API create too).
"""

from __future__ import annotations

from ragtrace_collector._store._alert_schema import (
    ALERT_ACKS,
    ALERT_GROUPS,
    ALERT_SILENCES,
    ALERT_TABLES,
    ALERTS,
    ensure_alert_tables,
)
from ragtrace_collector._store._store import Store, StoreError

__all__ = [
    "ALERTS",
    "ALERT_ACKS",
    "ALERT_GROUPS",
    "ALERT_SILENCES",
    "ALERT_TABLES",
    "Store",
    "StoreError",
    "ensure_alert_tables",
]
