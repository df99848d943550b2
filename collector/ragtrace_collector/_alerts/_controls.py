"""What people say about alerts, kept in SQLite: acknowledgements and silences, and each group's state to say it
about. The alert API (``_http/_alert_api.py``), the page and the watcher all go through these functions.

* An **acknowledgement** names one firing episode of one group (its rule, service, route and the time the
  ALERT started): someone is on it, so the watcher sends no reminders for it. The next episode is announced
  as usual, and so is the resolution.
* A **silence** matches a rule (or every rule), a service and a route (each None: any) from ``starts_ns`` to
  ``ends_ns``: while it is active, matching groups still change state and every change is recorded, but
  nothing is sent. Ending it early sets ``ends_ns`` to now; it stays listed, as history, until retention.

Every function takes an open connection and commits its own writes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from ragtrace_collector._store import ALERT_ACKS, ALERT_GROUPS, ALERT_SILENCES, ensure_alert_tables

__all__ = [
    "Ack",
    "GroupView",
    "Silence",
    "acked_episodes",
    "add_ack",
    "add_silence",
    "expire_silence",
    "group_key",
    "group_views",
    "silences",
]


def group_key(rule: str, service: str | None, route: str | None) -> str:
    """The ``alert_groups`` key of a group (JSON: SQLite keys treat NULLs as all different)."""
    return json.dumps([rule, service, route])


@dataclass(frozen=True, slots=True)
class Silence:
    """Mutes every group it matches while ``starts_ns <= now < ends_ns``. ``rule``/``service``/``route``
    None match any."""

    id: int
    rule: str | None
    service: str | None
    route: str | None
    starts_ns: int
    ends_ns: int
    created_ns: int
    author: str | None = None
    comment: str | None = None

    def active(self, now_ns: int) -> bool:
        """Whether it mutes at ``now_ns``."""
        return self.starts_ns <= now_ns < self.ends_ns

    def matches(self, rule: str, service: str | None, route: str | None) -> bool:
        """Whether it covers the group (whatever the time)."""
        return all(
            wanted is None or wanted == value
            for wanted, value in ((self.rule, rule), (self.service, service), (self.route, route))
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Ack:
    """An acknowledgement of the ALERT of one group that started at ``episode_ns``."""

    id: int
    rule: str
    service: str | None
    route: str | None
    episode_ns: int
    time_ns: int
    author: str | None = None
    comment: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class GroupView:
    """One group as the page and the API show it: its state now, since when, the last evaluation's figures,
    and the acknowledgement of its current ALERT and the silences muting it now, if any."""

    rule: str
    kind: str
    metric: str
    service: str | None
    route: str | None
    state: str
    detected: str | None
    since_ns: int
    evaluated_ns: int | None
    value: float | None
    threshold: float | None
    message: str | None
    ack: Ack | None
    silenced_by: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["silenced_by"] = list(self.silenced_by)
        return out


_SILENCE_COLUMNS = "id, rule, service, route, starts_ns, ends_ns, created_ns, author, comment"
_ACK_COLUMNS = "id, rule, service, route, episode_ns, time_ns, author, comment"


def silences(conn: sqlite3.Connection, *, active_at: int | None = None) -> list[Silence]:
    """Every silence, newest first; only those active at ``active_at`` when given."""
    if active_at is None:
        rows = conn.execute(f"SELECT {_SILENCE_COLUMNS} FROM {ALERT_SILENCES} ORDER BY id DESC")
    else:
        rows = conn.execute(
            f"SELECT {_SILENCE_COLUMNS} FROM {ALERT_SILENCES} WHERE starts_ns <= ? AND ends_ns > ? ORDER BY id DESC",
            (active_at, active_at),
        )
    return [Silence(*row) for row in rows]


def add_silence(
    conn: sqlite3.Connection,
    *,
    rule: str | None,
    service: str | None,
    route: str | None,
    starts_ns: int,
    ends_ns: int,
    author: str | None = None,
    comment: str | None = None,
) -> Silence:
    """Store a silence and return it (with its id). ``ValueError`` when it would end before it starts."""
    if ends_ns <= starts_ns:
        raise ValueError("a silence must end after it starts")
    ensure_alert_tables(conn)
    with conn:
        cursor = conn.execute(
            f"INSERT INTO {ALERT_SILENCES} (rule, service, route, starts_ns, ends_ns, created_ns, author, comment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (rule, service, route, starts_ns, ends_ns, starts_ns, author, comment),
        )
    assert cursor.lastrowid is not None
    return Silence(cursor.lastrowid, rule, service, route, starts_ns, ends_ns, starts_ns, author, comment)


def expire_silence(conn: sqlite3.Connection, silence_id: int, now_ns: int) -> Silence | None:
    """End a silence now (kept as history); None when there is no such silence. One already over is left."""
    ensure_alert_tables(conn)
    with conn:
        conn.execute(
            f"UPDATE {ALERT_SILENCES} SET ends_ns = ? WHERE id = ? AND ends_ns > ?", (now_ns, silence_id, now_ns)
        )
        row = conn.execute(f"SELECT {_SILENCE_COLUMNS} FROM {ALERT_SILENCES} WHERE id = ?", (silence_id,)).fetchone()
    return Silence(*row) if row is not None else None


def add_ack(
    conn: sqlite3.Connection,
    *,
    rule: str,
    service: str | None,
    route: str | None,
    episode_ns: int,
    now_ns: int,
    author: str | None = None,
    comment: str | None = None,
) -> Ack:
    """Store an acknowledgement of the episode that started at ``episode_ns`` and return it."""
    ensure_alert_tables(conn)
    with conn:
        cursor = conn.execute(
            f"INSERT INTO {ALERT_ACKS} (rule, service, route, episode_ns, time_ns, author, comment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rule, service, route, episode_ns, now_ns, author, comment),
        )
    assert cursor.lastrowid is not None
    return Ack(cursor.lastrowid, rule, service, route, episode_ns, now_ns, author, comment)


def acked_episodes(conn: sqlite3.Connection) -> dict[tuple[str, str | None, str | None, int], Ack]:
    """Every acknowledgement by (rule, service, route, episode start); the first one of an episode wins."""
    out: dict[tuple[str, str | None, str | None, int], Ack] = {}
    for row in conn.execute(f"SELECT {_ACK_COLUMNS} FROM {ALERT_ACKS} ORDER BY id"):
        ack = Ack(*row)
        out.setdefault((ack.rule, ack.service, ack.route, ack.episode_ns), ack)
    return out


def group_views(conn: sqlite3.Connection, now_ns: int) -> list[GroupView]:
    """Every group the watcher keeps a state for, by rule, service and route, with its ack and silences."""
    active = silences(conn, active_at=now_ns)
    acks = acked_episodes(conn)
    rows = conn.execute(
        "SELECT rule, kind, metric, service, route, state, detected, since_ns, evaluated_ns, value, threshold, "
        f"message FROM {ALERT_GROUPS} ORDER BY rule, COALESCE(service, ''), COALESCE(route, '')"
    ).fetchall()
    views = []
    for rule, kind, metric, service, route, state, detected, since, evaluated, value, threshold, message in rows:
        ack = acks.get((rule, service, route, since)) if state == "ALERT" else None
        muting = tuple(s.id for s in active if s.matches(rule, service, route))
        views.append(
            GroupView(
                rule, kind, metric, service, route, state, detected, since, evaluated, value, threshold, message,
                ack, muting,
            )
        )  # fmt: skip
    return views
