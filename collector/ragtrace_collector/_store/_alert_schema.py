"""The alert tables: ``alerts`` (every state change), ``alert_groups`` (each group's state now), ``alert_silences``
and ``alert_acks`` (what people said from the page or the CLI), and ``ensure_alert_tables``.

The one definition of these four tables: the store creates them with the rest of its schema, and the watcher
and the alert API call ``ensure_alert_tables`` too, since either may open a file the store has not (the
watcher starts before the first export; the API may be up with the watcher off). Creating is idempotent, and a
file written by an older collector gets the columns it lacks (``ALTER TABLE ... ADD COLUMN``), so its history
is kept.
"""

from __future__ import annotations

import sqlite3
from typing import Final

__all__ = [
    "ALERTS",
    "ALERT_ACKS",
    "ALERT_GROUPS",
    "ALERT_SILENCES",
    "ALERT_TABLES",
    "ensure_alert_tables",
]

ALERTS: Final = "alerts"
ALERT_GROUPS: Final = "alert_groups"
ALERT_SILENCES: Final = "alert_silences"
ALERT_ACKS: Final = "alert_acks"
ALERT_TABLES: Final = (ALERTS, ALERT_GROUPS, ALERT_SILENCES, ALERT_ACKS)

# Columns in order; a column added after the first release is listed in _ADDED so older files get it.
_ALERTS_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{ALERTS}] ([id] INTEGER PRIMARY KEY, [time_ns] INTEGER, [rule] TEXT, "
    "[kind] TEXT, [metric] TEXT, [service] TEXT, [route] TEXT, [state] TEXT, [previous_state] TEXT, "
    "[value] FLOAT, [threshold] FLOAT, [message] TEXT, [sinks] TEXT, [silenced] INTEGER DEFAULT 0)"
)
_ADDED: Final = ((ALERTS, "silenced", "INTEGER DEFAULT 0"),)

# One row per (rule, service, route): ``group_key`` is their JSON, since SQLite's keys treat NULLs as distinct.
_GROUPS_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{ALERT_GROUPS}] ([group_key] TEXT PRIMARY KEY, [rule] TEXT, [kind] TEXT, "
    "[metric] TEXT, [service] TEXT, [route] TEXT, [state] TEXT, [detected] TEXT, [since_ns] INTEGER, "
    "[notified_ns] INTEGER, [evaluated_ns] INTEGER, [last_alert_ns] INTEGER, [last_measured_ns] INTEGER, "
    "[baseline_end_ns] INTEGER, [announced] INTEGER, [value] FLOAT, [threshold] FLOAT, [message] TEXT, "
    "[last_warning_ns] INTEGER)"
)
_SILENCES_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{ALERT_SILENCES}] ([id] INTEGER PRIMARY KEY, [rule] TEXT, [service] TEXT, "
    "[route] TEXT, [starts_ns] INTEGER, [ends_ns] INTEGER, [created_ns] INTEGER, [author] TEXT, [comment] TEXT)"
)
_ACKS_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{ALERT_ACKS}] ([id] INTEGER PRIMARY KEY, [rule] TEXT, [service] TEXT, "
    "[route] TEXT, [episode_ns] INTEGER, [time_ns] INTEGER, [author] TEXT, [comment] TEXT)"
)
_INDEXES: Final = (
    f"CREATE INDEX IF NOT EXISTS [idx_{ALERTS}_time_ns] ON [{ALERTS}] ([time_ns])",
    f"CREATE INDEX IF NOT EXISTS [idx_{ALERT_SILENCES}_ends_ns] ON [{ALERT_SILENCES}] ([ends_ns])",
    f"CREATE INDEX IF NOT EXISTS [idx_{ALERT_ACKS}_episode] ON [{ALERT_ACKS}] ([rule], [episode_ns])",
)


def ensure_alert_tables(conn: sqlite3.Connection) -> None:
    """Create the alert tables and indexes that are missing, add columns an older file lacks; commit."""
    with conn:
        for ddl in (_ALERTS_DDL, _GROUPS_DDL, _SILENCES_DDL, _ACKS_DDL, *_INDEXES):
            conn.execute(ddl)
        for table, column, declaration in _ADDED:
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info([{table}])")}
            if column not in columns:
                conn.execute(f"ALTER TABLE [{table}] ADD COLUMN [{column}] {declaration}")
