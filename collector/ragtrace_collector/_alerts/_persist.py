"""The watcher's state in the store: each group's track (``alert_groups``), the rows of ``alerts``, and the mutes
(silences and acknowledgements) in force. The SQL is the store's (``_store.alerts``); this module turns its rows
into the lifecycle's values and back.

``alert_groups`` is rewritten for every group at every evaluation, so the page, the API and ``/metrics`` read
the state and statistic of the last evaluation, and a restart resumes every track where it was (the hold's
clocks and the frozen baseline included). A file from before ``alert_groups`` resumes from each group's last
row in ``alerts``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragtrace_collector import _drift
from ragtrace_collector._alerts._alert import Alert
from ragtrace_collector._alerts._lifecycle import Mute, Track
from ragtrace_collector._rule_types import AlertRule
from ragtrace_collector._store import Connection, alerts
from ragtrace_collector._store.alerts import Ack, Silence

__all__ = ["GroupState", "Mutes", "TrackKey", "load_tracks", "save"]

TrackKey = tuple[str, str | None, str | None]
"""(rule, service, route)."""


@dataclass(frozen=True, slots=True)
class GroupState:
    """What ``alert_groups`` keeps of one group after an evaluation."""

    rule: AlertRule
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
    def read(cls, conn: Connection, now_ns: int) -> Mutes:
        return cls(tuple(alerts.silences(conn, active_at=now_ns)), alerts.acked_episodes(conn))

    def mute(self, key: TrackKey, track: Track | None) -> Mute:
        """Whether the group is silenced now and whether its current ALERT episode was acknowledged."""
        silenced = any(s.matches(*key) for s in self.active)
        acked = track is not None and track.state == _drift.ALERT and (*key, track.since_ns) in self.acks
        return Mute(silenced=silenced, acknowledged=acked)


def load_tracks(conn: Connection) -> dict[TrackKey, Track]:
    """Every group's track: from ``alert_groups``; when it has no rows (a file from before the table), from each
    group's last row in ``alerts``. Only then: a group a rule dropped past its bound has rows in ``alerts`` and
    none in ``alert_groups``, and stays dropped."""
    tracks: dict[TrackKey, Track] = {
        (row.rule, row.service, row.route): Track(
            row.state,
            row.since_ns,
            row.notified_ns,
            row.last_alert_ns,
            row.last_measured_ns,
            row.baseline_end_ns,
            row.announced,
            row.last_warning_ns,
        )
        for row in alerts.track_rows(conn)
    }
    for rule, service, route, state, at, silenced in [] if tracks else alerts.last_alert_rows(conn):
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


def save(
    conn: Connection,
    rows: Sequence[tuple[Alert, Sequence[str]]],
    groups: Sequence[GroupState],
    dropped: Sequence[TrackKey] = (),
) -> None:
    """Write the evaluation's ``alerts`` rows (each with the names of the sinks it goes to) and every group's
    state, and forget the ``dropped`` groups' state (past their rule's bound), in one transaction."""
    alerts.save_evaluation(conn, rows, groups, dropped)
