"""The watcher: evaluates alert rules over the store, keeps a state machine per rule and group, notifies sinks.

``Watcher(db_path, rules_path)`` opens its own SQLite connection for each evaluation (WAL lets it read
while the receiver writes), so it never holds a lock the ingestion path waits on. ``start()`` runs
``evaluate_once`` every rule-set interval on a daemon thread; ``stop()`` ends it and drains the sinks.

State machine, per (rule, service, route): every change of state is a row in ``alerts`` and, except the
very first OK/NO_DATA a group is seen in, a notification. An ``ALERT`` that persists is sent again only
after the rule's renotify interval (also recorded as a row); going back to ``OK`` from ``ALERT`` or
``WARNING`` sends a resolved message. A group that stops getting scored records goes to ``NO_DATA``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from os import PathLike

from ragtrace_collector import _drift
from ragtrace_collector._alerts._alert import Alert, Sink, logger
from ragtrace_collector._alerts._evaluation import SCORES, GroupKey, evaluate_rule, groups_of
from ragtrace_collector._alerts._sinks import build_sinks
from ragtrace_collector._rule_types import (
    Rule,
    RuleSet,
)
from ragtrace_collector._rules import load_rules

ALERTS = "alerts"
ALERTS_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{ALERTS}] ([id] INTEGER PRIMARY KEY, [time_ns] INTEGER, [rule] TEXT, [kind] TEXT, "
    "[metric] TEXT, [service] TEXT, [route] TEXT, [state] TEXT, [previous_state] TEXT, [value] FLOAT, "
    "[threshold] FLOAT, [message] TEXT, [sinks] TEXT)"
)
ALERTS_INDEX = f"CREATE INDEX IF NOT EXISTS [idx_{ALERTS}_time_ns] ON [{ALERTS}] ([time_ns])"


@dataclass(frozen=True, slots=True)
class _Track:
    """A group's current state and when its last row was written (entry into the state or reminder)."""

    state: str
    since_ns: int


class Watcher:
    """Evaluates the rules over the store at ``db_path`` and notifies sinks of state changes.

    ``rules_path`` None uses the packaged default rules; a bad file raises ``ConfigurationError`` here.
    ``sinks`` None builds the sinks the rules file lists. ``clock`` returns nanoseconds since the epoch
    (default ``time.time_ns``). States survive a restart: the last row of each (rule, service, route) in
    ``alerts`` is where the state machine resumes.
    """

    def __init__(
        self,
        db_path: str | PathLike[str],
        rules_path: str | PathLike[str] | None = None,
        sinks: Sequence[Sink] | None = None,
        clock: Callable[[], int] | None = None,
        *,
        rules: RuleSet | None = None,
    ) -> None:
        self.db_path = str(db_path)
        self.rules = rules if rules is not None else load_rules(rules_path)
        self.sinks: list[Sink] = list(sinks) if sinks is not None else build_sinks(self.rules.sinks)
        self.clock = clock or time.time_ns
        self._tracks: dict[tuple[str, str | None, str | None], _Track] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Evaluate every ``rules.interval_ns`` on a daemon thread until ``stop()``."""
        if self._thread is not None:
            return
        if self._stop.is_set():
            raise RuntimeError("a stopped Watcher cannot be restarted (its sinks are closed); create a new one")
        self._thread = threading.Thread(target=self._loop, name="ragtrace-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread and drain the sinks (each within ``timeout``). Final: the sinks are closed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        for sink in self.sinks:
            try:
                sink.close(timeout)
            except Exception:
                logger.exception("sink %s failed to close", getattr(sink, "name", sink))

    def _loop(self) -> None:
        interval = self.rules.interval_ns / 1e9
        while not self._stop.is_set():
            try:
                self.evaluate_once()
            except Exception:  # a bad evaluation is logged; the watcher keeps watching
                logger.exception("alert evaluation failed")
            self._stop.wait(interval)

    # -- evaluation ------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path, timeout=30.0)
        conn.execute(ALERTS_DDL)
        conn.execute(ALERTS_INDEX)
        conn.commit()
        return conn

    def _load_tracks(self, conn: sqlite3.Connection) -> dict[tuple[str, str | None, str | None], _Track]:
        rows = conn.execute(
            f"SELECT rule, service, route, state, time_ns FROM {ALERTS} WHERE id IN "
            f"(SELECT MAX(id) FROM {ALERTS} GROUP BY rule, service, route)"
        ).fetchall()
        return {(rule, service, route): _Track(state, int(time_ns)) for rule, service, route, state, time_ns in rows}

    def evaluate_once(self, now_ns: int | None = None) -> list[Alert]:
        """Evaluate every rule for every group as of ``now_ns`` (default: the clock); record and notify
        the state changes and reminders; return them."""
        now = self.clock() if now_ns is None else now_ns
        with self._lock:
            conn = self._connect()
            try:
                if self._tracks is None:
                    self._tracks = self._load_tracks(conn)
                has_scores = (
                    conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (SCORES,)).fetchone()
                    is not None
                )
                alerts: list[tuple[Alert, list[Sink]]] = []
                for rule in self.rules.rules:
                    alerts.extend(self._evaluate_rule(conn, rule, now, has_scores))
                with conn:
                    for alert, sinks in alerts:
                        conn.execute(
                            f"INSERT INTO {ALERTS} (time_ns, rule, kind, metric, service, route, state, "
                            "previous_state, value, threshold, message, sinks) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                            (
                                alert.time_ns,
                                alert.rule,
                                alert.kind,
                                alert.metric,
                                alert.service,
                                alert.route,
                                alert.state,
                                alert.previous_state,
                                alert.value,
                                alert.threshold,
                                alert.message,
                                json.dumps([s.name for s in sinks]),
                            ),
                        )
            finally:
                conn.close()
        # Notify after the commit: a sink that sees an alert can find its row.
        for alert, sinks in alerts:
            for sink in sinks:
                try:
                    sink.send(alert)
                except Exception:
                    logger.exception("sink %s failed", sink.name)
        return [alert for alert, _ in alerts]

    def _evaluate_rule(
        self, conn: sqlite3.Connection, rule: Rule, now: int, has_scores: bool
    ) -> list[tuple[Alert, list[Sink]]]:
        assert self._tracks is not None
        groups = groups_of(conn, rule, now) if has_scores else set()
        # Groups seen before that have no data now must go to NO_DATA, not stay silently OK.
        groups.update((service, route) for (name, service, route) in self._tracks if name == rule.name)
        if not groups and rule.group_by == "all":
            groups.add((rule.service, rule.route))
        out = []
        for key in sorted(groups, key=lambda k: (k[0] or "", k[1] or "")):
            track = self._tracks.get((rule.name, *key))
            previous = track.state if track else None
            if has_scores:
                evaluation = evaluate_rule(conn, rule, key, now, previous)
            else:
                evaluation = _drift.Evaluation(_drift.NO_DATA, None, None, 0, "no scores stored yet")
            alert = self._transition(rule, key, now, track, evaluation)
            if alert is None:
                continue
            alert_obj, notify = alert
            sinks = [s for s in self.sinks if rule.sinks is None or s.name in rule.sinks] if notify else []
            self._tracks[(rule.name, *key)] = _Track(alert_obj.state, now)
            out.append((alert_obj, sinks))
        return out

    def _transition(
        self, rule: Rule, key: GroupKey, now: int, track: _Track | None, evaluation: _drift.Evaluation
    ) -> tuple[Alert, bool] | None:
        previous = track.state if track else None
        state = evaluation.state
        if state == previous:
            due = track is not None and now - track.since_ns >= rule.renotify_ns
            if state != _drift.ALERT or not due:
                return None
            notify = True
        else:
            # The first sighting of a healthy or unmeasured group is recorded but not worth a message.
            notify = previous is not None or state in (_drift.ALERT, _drift.WARNING)
        alert = Alert(
            time_ns=now,
            rule=rule.name,
            kind=rule.kind,
            metric=rule.metric,
            service=key[0],
            route=key[1],
            state=state,
            previous_state=previous,
            value=evaluation.value,
            threshold=evaluation.threshold,
            message=evaluation.message,
        )
        return alert, notify
