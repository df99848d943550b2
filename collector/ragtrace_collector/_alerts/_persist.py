"""The watcher's reads and writes: each group's track (``alert_groups``), the rows of ``alerts``, and the mutes
(silences and acknowledgements) in force.

``alert_groups`` is rewritten for every group at every evaluation, so the page, the API and ``/metrics`` read
the state and statistic of the last evaluation, and a restart resumes every track where it was (the hold's
clocks and the frozen baseline included). A file from before ``alert_groups`` resumes from each group's last
row in ``alerts``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace_collector import _drift
from ragtrace_collector._alerts._alert import Alert
from ragtrace_collector._alerts._controls import Ack, Silence, acked_episodes, group_key, silences
from ragtrace_collector._alerts._lifecycle import Mute, Track
from ragtrace_collector._rule_types import Rule
from ragtrace_collector._store import ALERT_GROUPS, ALERTS

__all__ = ["GroupState", "Mutes", "TrackKey", "load_tracks", "save"]

TrackKey = tuple[str, str | None, str | None]
"""(rule, service, route)."""


@dataclass(frozen=True, slots=True)
class GroupState:
    """What ``alert_groups`` keeps of one group after an evaluation."""

    rule: Rule
    service: str | None
    route: str | None
    track: Track
    evaluation: _drift.Evaluation
    evaluated_ns: int


@dataclass(frozen=True, slots=True)
class Mutes:
    """The silences active at one evaluation and every acknowledgement, for ``mute``."""

    active: tuple[Silence, ...]
    acks: dict[tuple[str, str | None, str | None, int], Ack]

    @classmethod
    def read(cls, conn: sqlite3.Connection, now_ns: int) -> Mutes:
        return cls(tuple(silences(conn, active_at=now_ns)), acked_episodes(conn))

    def mute(self, key: TrackKey, track: Track | None) -> Mute:
        """Whether the group is silenced now and whether its current ALERT episode was acknowledged."""
        silenced = any(s.matches(*key) for s in self.active)
        acked = track is not None and track.state == _drift.ALERT and (*key, track.since_ns) in self.acks
        return Mute(silenced=silenced, acknowledged=acked)


def load_tracks(conn: sqlite3.Connection) -> dict[TrackKey, Track]:
    """Every group's track: from ``alert_groups``, else (an older file) from its last row in ``alerts``."""
    tracks: dict[TrackKey, Track] = {}
    for row in conn.execute(
        f"SELECT rule, service, route, state, since_ns, notified_ns, last_alert_ns, last_measured_ns, "
        f"baseline_end_ns, announced, last_warning_ns FROM {ALERT_GROUPS}"
    ):
        rule, service, route, state, since, notified, last_alert, last_measured, baseline_end, announced, warned = row
        tracks[(rule, service, route)] = Track(
            state, int(since), int(notified), last_alert, last_measured, baseline_end, bool(announced), warned
        )
    for rule, service, route, state, time_ns, silenced in conn.execute(
        f"SELECT rule, service, route, state, time_ns, silenced FROM {ALERTS} WHERE id IN "
        f"(SELECT MAX(id) FROM {ALERTS} GROUP BY rule, service, route)"
    ):
        if (rule, service, route) in tracks:
            continue
        at = int(time_ns)
        tracks[(rule, service, route)] = Track(
            state=state,
            since_ns=at,
            notified_ns=at,
            last_alert_ns=at if state == _drift.ALERT else None,
            last_measured_ns=None if state == _drift.NO_DATA else at,
            announced=not silenced,
            last_warning_ns=at if state in (_drift.WARNING, _drift.ALERT) else None,
        )
    return tracks


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


def save(conn: sqlite3.Connection, rows: Sequence[tuple[Alert, Sequence[str]]], groups: Sequence[GroupState]) -> None:
    """Write the evaluation's ``alerts`` rows (each with the names of the sinks it goes to) and every group's
    state, in one transaction."""
    with conn:
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
