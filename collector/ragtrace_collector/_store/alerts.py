"""The alert tables' reads and writes: the scores a rule evaluates, each group's track and the rows of
``alerts`` (the watcher's), and what people say about alerts (acknowledgements, silences) with each group's
state to say it about (the alert API, the pages, ``/metrics`` and the watcher).

* An **acknowledgement** names one firing episode of one group (its rule, service, route and the time the
  ALERT started): someone is on it, so the watcher sends no reminders for it. The next episode is announced
  as usual, and so is the resolution.
* A **silence** matches a rule (or every rule), a service and a route (each None: any) from ``starts_ns`` to
  ``ends_ns``: while it is active, matching groups still change state and every change is recorded, but
  nothing is sent. Ending it early sets ``ends_ns`` to now; it stays listed, as history, until retention.

Every function takes an open connection (``connection.connect``: migrated, so every table exists) and commits
its own writes. The watcher's lifecycle (``_alerts``) builds its values from the rows these return; this module
imports nothing of it, so the layers go one way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

from ragtrace_collector._drift import State
from ragtrace_collector._store.connection import connect_readonly, insert_returning_id
from ragtrace_collector._store.dialect import AnyConnection, dialect_of, table_names
from ragtrace_collector._store.schema import ALERT_ACKS, ALERT_GROUPS, ALERT_SILENCES, ALERT_TABLES, ALERTS, SCORES

if TYPE_CHECKING:  # values the watcher writes; read by attribute only
    from ragtrace_collector._alerts._alert import Alert
    from ragtrace_collector._alerts._persist import GroupState

__all__ = [
    "Ack",
    "GroupKey",
    "GroupView",
    "Silence",
    "TrackRow",
    "acked_episodes",
    "add_ack",
    "add_silence",
    "bad_counts",
    "expire_silence",
    "group_key",
    "group_state",
    "group_views",
    "group_views_at",
    "groups_with_scores",
    "last_alert_rows",
    "latest_alert_message",
    "save_evaluation",
    "score_values",
    "silences",
    "track_rows",
]

GroupKey = tuple[str | None, str | None]
"""(service, route) of one group of a rule."""


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


def silences(conn: AnyConnection, *, active_at: int | None = None) -> list[Silence]:
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
    conn: AnyConnection,
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
    with conn:
        found = insert_returning_id(
            conn,
            f"INSERT INTO {ALERT_SILENCES} (rule, service, route, starts_ns, ends_ns, created_ns, author, comment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (rule, service, route, starts_ns, ends_ns, starts_ns, author, comment),
        )
    return Silence(found, rule, service, route, starts_ns, ends_ns, starts_ns, author, comment)


def expire_silence(conn: AnyConnection, silence_id: int, now_ns: int) -> Silence | None:
    """End a silence now (kept as history); None when there is no such silence. One already over is left."""
    with conn:
        conn.execute(
            f"UPDATE {ALERT_SILENCES} SET ends_ns = ? WHERE id = ? AND ends_ns > ?", (now_ns, silence_id, now_ns)
        )
        row = conn.execute(f"SELECT {_SILENCE_COLUMNS} FROM {ALERT_SILENCES} WHERE id = ?", (silence_id,)).fetchone()
    return Silence(*row) if row is not None else None


def add_ack(
    conn: AnyConnection,
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
    with conn:
        found = insert_returning_id(
            conn,
            f"INSERT INTO {ALERT_ACKS} (rule, service, route, episode_ns, time_ns, author, comment) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rule, service, route, episode_ns, now_ns, author, comment),
        )
    return Ack(found, rule, service, route, episode_ns, now_ns, author, comment)


def acked_episodes(conn: AnyConnection) -> dict[tuple[str, str | None, str | None, int], Ack]:
    """Every acknowledgement by (rule, service, route, episode start); the first one of an episode wins."""
    out: dict[tuple[str, str | None, str | None, int], Ack] = {}
    for row in conn.execute(f"SELECT {_ACK_COLUMNS} FROM {ALERT_ACKS} ORDER BY id"):
        ack = Ack(*row)
        out.setdefault((ack.rule, ack.service, ack.route, ack.episode_ns), ack)
    return out


def group_views(conn: AnyConnection, now_ns: int) -> list[GroupView]:
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


# -- the scores a rule evaluates -------------------------------------------------------------------------------


def _group_filter(
    key: GroupKey, grouped: tuple[bool, bool] = (False, False), same: str = "IS"
) -> tuple[str, list[Any]]:
    """The SQL that keeps one group's rows.

    A grouped column always filters: its None is the group of rows without a service (or route), which must
    count its own rows only (``IS NULL``), not every row. An ungrouped column filters only when the rule
    restricts it (None there means any value).
    """
    clauses, args = [], []
    for column, value, by in zip(("service", "route"), key, grouped, strict=True):
        if by:
            clauses.append(f"{column} {same} ?")  # equal, or both NULL
            args.append(value)
        elif value is not None:
            clauses.append(f"{column} = ?")
            args.append(value)
    return "".join(f" AND {c}" for c in clauses), args


def score_values(
    conn: AnyConnection,
    metric: str,
    key: GroupKey,
    grouped: tuple[bool, bool],
    start: int,
    end: int,
    limit: int | None = None,
) -> list[float]:
    """The group's values of ``metric`` with a time in ``(start, end]``, oldest first; the newest ``limit`` when
    given. A record exactly on a boundary belongs to the later window."""
    where, args = _group_filter(key, grouped, dialect_of(conn).same)
    rows = conn.execute(
        f"SELECT value FROM {SCORES} WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?"
        f"{where} ORDER BY time_ns DESC, span_id DESC" + (" LIMIT ?" if limit is not None else ""),
        [metric, start, end, *args, *([limit] if limit is not None else [])],
    ).fetchall()
    return [float(row[0]) for row in reversed(rows)]


def bad_counts(
    conn: AnyConnection,
    metric: str,
    key: GroupKey,
    grouped: tuple[bool, bool],
    start: int,
    end: int,
    *,
    cutoff: float,
    higher_is_bad: bool,
) -> tuple[int, int]:
    """(bad, total): how many of the group's values of ``metric`` in ``(start, end]`` are past ``cutoff`` (above
    it when ``higher_is_bad``, else below), and how many there are."""
    where, args = _group_filter(key, grouped, dialect_of(conn).same)
    bad_sql = "value > ?" if higher_is_bad else "value < ?"
    total, bad = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END), 0) FROM {SCORES} "
        f"WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?{where}",
        [cutoff, metric, start, end, *args],
    ).fetchone()
    return int(bad), int(total)


def groups_with_scores(
    conn: AnyConnection, metric: str, restrict: GroupKey, start: int, end: int
) -> set[tuple[str | None, str | None]]:
    """The (service, route) pairs with a value of ``metric`` in ``(start, end]``, within the rule's own
    restriction ``restrict`` (None: any)."""
    where, args = _group_filter(restrict)
    rows = conn.execute(
        f"SELECT DISTINCT service, route FROM {SCORES} WHERE metric = ? AND value IS NOT NULL "
        f"AND time_ns > ? AND time_ns <= ?{where}",
        [metric, start, end, *args],
    ).fetchall()
    return {(service, route) for service, route in rows}


# -- the watcher's tracks and records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrackRow:
    """What ``alert_groups`` holds of one group's track (the watcher turns it into a ``Track``)."""

    rule: str
    service: str | None
    route: str | None
    state: State
    since_ns: int
    notified_ns: int
    last_alert_ns: int | None
    last_measured_ns: int | None
    baseline_end_ns: int | None
    announced: bool
    last_warning_ns: int | None


def track_rows(conn: AnyConnection) -> list[TrackRow]:
    """Every group's track as the last evaluation left it."""
    rows = conn.execute(
        f"SELECT rule, service, route, state, since_ns, notified_ns, last_alert_ns, last_measured_ns, "
        f"baseline_end_ns, announced, last_warning_ns FROM {ALERT_GROUPS}"
    )
    return [
        TrackRow(
            rule,
            service,
            route,
            cast(State, state),
            int(since),
            int(notified),
            last_alert,
            measured,
            baseline,
            bool(ann),
            warn,
        )
        for rule, service, route, state, since, notified, last_alert, measured, baseline, ann, warn in rows
    ]


def last_alert_rows(conn: AnyConnection) -> list[tuple[str, str | None, str | None, State, int, bool]]:
    """(rule, service, route, state, time_ns, silenced) of each group's last row in ``alerts``: where a file
    written before ``alert_groups`` resumes."""
    return [
        (rule, service, route, cast(State, state), int(time_ns), bool(silenced))
        for rule, service, route, state, time_ns, silenced in conn.execute(
            f"SELECT rule, service, route, state, time_ns, silenced FROM {ALERTS} WHERE id IN "
            f"(SELECT MAX(id) FROM {ALERTS} GROUP BY rule, service, route)"
        )
    ]


_INSERT_ALERT = (
    f"INSERT INTO {ALERTS} (time_ns, rule, kind, metric, service, route, state, previous_state, value, threshold, "
    "message, sinks, silenced) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_UPSERT_GROUP = (
    f"INSERT INTO {ALERT_GROUPS} (group_key, rule, kind, metric, service, route, state, detected, since_ns, "
    "notified_ns, evaluated_ns, last_alert_ns, last_measured_ns, baseline_end_ns, announced, value, threshold, "
    "message, last_warning_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (group_key) DO UPDATE SET "
    "state = excluded.state, detected = excluded.detected, since_ns = excluded.since_ns, "
    "notified_ns = excluded.notified_ns, evaluated_ns = excluded.evaluated_ns, "
    "last_alert_ns = excluded.last_alert_ns, last_measured_ns = excluded.last_measured_ns, "
    "baseline_end_ns = excluded.baseline_end_ns, announced = excluded.announced, value = excluded.value, "
    "threshold = excluded.threshold, message = excluded.message, kind = excluded.kind, metric = excluded.metric, "
    "last_warning_ns = excluded.last_warning_ns"
)


def save_evaluation(
    conn: AnyConnection,
    rows: Iterable[tuple[Alert, Sequence[str]]],
    groups: Iterable[GroupState],
    dropped: Iterable[tuple[str, str | None, str | None]] = (),
) -> None:
    """Write an evaluation's ``alerts`` rows (each with the names of the sinks it goes to) and every group's
    state, and delete the ``alert_groups`` rows of the ``dropped`` groups ((rule, service, route): those a rule
    no longer tracks, past its bound), in one transaction. Their ``alerts`` rows stay, as history."""
    with conn:
        conn.executemany(f"DELETE FROM {ALERT_GROUPS} WHERE group_key = ?", [(group_key(*key),) for key in dropped])
        conn.executemany(
            _INSERT_ALERT,
            [
                (a.time_ns, a.rule, a.kind, a.metric, a.service, a.route, a.state, a.previous_state, a.value,
                 a.threshold, a.message, json.dumps(list(sinks)), int(a.silenced))
                for a, sinks in rows
            ],
        )  # fmt: skip
        conn.executemany(
            _UPSERT_GROUP,
            [
                (group_key(g.rule.name, g.service, g.route), g.rule.name, g.rule.kind, g.rule.metric, g.service,
                 g.route, g.track.state, g.evaluation.state, g.track.since_ns, g.track.notified_ns, g.evaluated_ns,
                 g.track.last_alert_ns, g.track.last_measured_ns, g.track.baseline_end_ns, int(g.track.announced),
                 g.evaluation.value, g.evaluation.threshold, g.evaluation.message, g.track.last_warning_ns)
                for g in groups
            ],
        )  # fmt: skip


def group_views_at(path: str | os.PathLike[str], now_ns: int) -> list[GroupView]:
    """``group_views`` of the store at ``path``, read-only: none while the file has no alert tables (a file an
    earlier collector wrote that no writer has opened since)."""
    with closing(connect_readonly(path)) as conn:
        if not set(ALERT_TABLES) <= table_names(conn):
            return []
        return group_views(conn, now_ns)


def latest_alert_message(conn: AnyConnection, rule: str, service: str | None, route: str | None) -> str | None:
    """The message of a group's latest ALERT transition (what fired it), or None when it never fired. (The
    ``alerts`` table keeps transitions only, a few per group, not every evaluation.)"""
    same = dialect_of(conn).same
    row = conn.execute(
        f"SELECT message FROM {ALERTS} WHERE rule = ? AND service {same} ? AND route {same} ? AND state = 'ALERT' "
        "ORDER BY time_ns DESC LIMIT 1",
        (rule, service, route),
    ).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def group_state(conn: AnyConnection, rule: str, service: str | None, route: str | None) -> tuple[str, int] | None:
    """(state, since_ns) of one group now; None when the watcher keeps no such group."""
    same = dialect_of(conn).same
    row = conn.execute(
        f"SELECT state, since_ns FROM {ALERT_GROUPS} WHERE rule = ? AND service {same} ? AND route {same} ?",
        (rule, service, route),
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))
