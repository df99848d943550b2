"""The watcher: evaluates alert rules over the store, keeps a state machine per rule and group, notifies sinks.

``Watcher(db_path, rules_path)`` opens its own connection to the store for each evaluation (WAL lets it read
while the receiver writes), so it never holds a lock the ingestion path waits on. ``start()`` runs
``evaluate_once`` every rule-set interval on a daemon thread; ``stop()`` ends it and drains the sinks.

State machine, per (rule, service, route), in ``_lifecycle.py``: every change of state is a row in ``alerts``
and, except the very first OK/NO_DATA a group is seen in, a notification. An ``ALERT`` holds until its
detector has not said ALERT for the rule's ``keep_firing_for``, thin windows do not turn a measured state
into ``NO_DATA`` before ``no_data_after``, and the baseline is frozen while it fires; one that persists is sent
again only after the rule's renotify interval (also recorded as a row), unless acknowledged; going back to
``OK`` from ``ALERT`` or ``WARNING`` sends a resolved message. Silences (``_controls.py``) keep notifications
back, never state changes. Each group's state is kept in ``alert_groups`` after every evaluation.

Groups are bounded per rule: a rule tracks at most ``MAX_GROUPS_PER_RULE`` (service, route) groups, since senders
name the services (one export of 20,000 service names made 20,000 groups, a 23 MB ``/metrics``). Past the
bound, the groups the rule already tracks that have data now come first, then new groups with data, then tracked
groups without data (which would go to NO_DATA), each in name order; the rest are not tracked: not evaluated,
not stored, not notified. A tracked group that falls out of the bound (it has no data while others have) is
forgotten: its ``alert_groups`` row is deleted in the same transaction as the evaluation and its state dropped
from memory, so the table holds at most the bound per rule (its ``alerts`` rows stay, as history). It sends no
NO_DATA or resolved message; should it come back within the bound, it starts again as a new group.
How many a rule leaves out is ``untracked_groups`` (``/metrics``:
``ragtrace_collector_alert_groups_untracked``), logged once when a rule first passes its bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from os import PathLike

from ragtrace_collector import _drift
from ragtrace_collector._alerts import _lifecycle
from ragtrace_collector._alerts._alert import Alert, Sink, logger
from ragtrace_collector._alerts._evaluation import baseline_end, evaluate_rule, groups_of
from ragtrace_collector._alerts._persist import GroupState, Mutes, TrackKey, load_tracks, save
from ragtrace_collector._alerts._sinks import build_sinks, log_text
from ragtrace_collector._rule_types import AlertRule, RuleSet
from ragtrace_collector._rules import load_rules
from ragtrace_collector._store import Connection
from ragtrace_collector._store.alerts import GroupKey
from ragtrace_collector._store.leadership import Leadership

MAX_GROUPS_PER_RULE = 500
"""Most (service, route) groups one rule tracks; see the module docstring for what happens past it."""


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
        max_groups_per_rule: int | None = None,
    ) -> None:
        self.db_path = str(db_path)
        self.max_groups_per_rule = MAX_GROUPS_PER_RULE if max_groups_per_rule is None else max_groups_per_rule
        self.untracked_groups: dict[str, int] = {}
        """Per rule name, the groups its last evaluation left out for the bound (absent: none)."""
        self.rules = rules if rules is not None else load_rules(rules_path)
        self.sinks: list[Sink] = list(sinks) if sinks is not None else build_sinks(self.rules.sinks)
        self.clock = clock or time.time_ns
        self._tracks: dict[TrackKey, _lifecycle.Track] | None = None
        self.leadership = Leadership(self.db_path)
        """Whether this process runs the rules (one replica per PostgreSQL store; always, on SQLite)."""
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
        self.leadership.close()  # ends the term: another replica leads from its next round

    def _loop(self) -> None:
        interval = self.rules.interval_ns / 1e9
        while not self._stop.is_set():
            try:
                self.evaluate_once()
            except Exception:  # a bad evaluation is logged; the watcher keeps watching
                logger.exception("alert evaluation failed")
            self._stop.wait(interval)

    # -- evaluation ------------------------------------------------------------------------------

    def evaluate_once(self, now_ns: int | None = None) -> list[Alert]:
        """Evaluate every rule for every group as of ``now_ns`` (default: the clock); record the state changes
        and reminders and every group's state; notify the sinks of those not silenced; return the recorded
        changes and reminders (silenced ones included, with ``silenced`` set)."""
        now = self.clock() if now_ns is None else now_ns
        alerts: list[tuple[Alert, list[Sink]]] = []
        with self._lock, self.leadership.lead() as conn:
            if conn is None:
                return []  # another replica leads: it evaluates, records and notifies
            if self._tracks is None or self.leadership.gained:
                # A new term: the previous leader's state is in the store, not in this process.
                self._tracks = load_tracks(conn)
            try:
                mutes = Mutes.read(conn, now)
                groups: list[GroupState] = []
                dropped: list[TrackKey] = []
                for rule in self.rules.rules:
                    alerts.extend(self._evaluate_rule(conn, rule, now, mutes, groups, dropped))
                # Through the leader's own session: a replica that lost the lead cannot commit.
                save(conn, [(alert, [s.name for s in sinks]) for alert, sinks in alerts], groups, dropped)
            except BaseException:
                # The tracks moved on in memory, the store did not: the next round reads the store again, so the
                # changes this round did not commit are found (and recorded and sent) again, not taken as done.
                self._tracks = None
                raise
        # Notify after the commit: a sink that sees an alert can find its row.
        for alert, sinks in alerts:
            for sink in sinks:
                try:
                    sink.send(alert)
                except Exception:
                    logger.exception("sink %s failed", sink.name)
        return [alert for alert, _ in alerts]

    def _evaluate_rule(
        self,
        conn: Connection,
        rule: AlertRule,
        now: int,
        mutes: Mutes,
        states: list[GroupState],
        dropped: list[TrackKey],
    ) -> list[tuple[Alert, list[Sink]]]:
        assert self._tracks is not None
        with_data = groups_of(conn, rule, now)
        # Groups seen before that have no data now must go to NO_DATA, not stay silently OK.
        tracked = {(service, route) for (name, service, route) in self._tracks if name == rule.name}
        groups = self._bounded(rule, with_data, tracked)
        for key in tracked - groups:  # past the bound: forgotten here and (in this transaction) in the store
            del self._tracks[(rule.name, *key)]
            dropped.append((rule.name, *key))
        if not groups and rule.group_by == "all":
            groups.add((rule.service, rule.route))
        policy = _lifecycle.Policy(rule.renotify_ns, rule.keep_firing_for_ns, rule.no_data_after_ns)
        out = []
        for key in sorted(groups, key=lambda k: (k[0] or "", k[1] or "")):
            track_key = (rule.name, *key)
            track = self._tracks.get(track_key)
            frozen = _lifecycle.frozen_baseline_end(track)
            previous = track.state if track else None
            evaluation = evaluate_rule(conn, rule, key, now, previous, baseline_end_ns=frozen)
            mute = mutes.mute(track_key, track)
            stepped = _lifecycle.step(
                track,
                evaluation.state,
                now,
                policy,
                baseline_end_ns=frozen if frozen is not None else baseline_end(rule, now),
                mute=mute,
            )
            self._tracks[track_key] = stepped.track
            states.append(GroupState(rule, key[0], key[1], stepped.track, evaluation, now))
            if stepped.record:
                alert = self._alert(rule, key, now, stepped, evaluation, mute.silenced)
                sinks = [s for s in self.sinks if rule.sinks is None or s.name in rule.sinks] if stepped.notify else []
                out.append((alert, sinks))
        return out

    def _bounded(self, rule: AlertRule, with_data: set[GroupKey], tracked: set[GroupKey]) -> set[GroupKey]:
        """The groups ``rule`` evaluates: all of them, or ``max_groups_per_rule`` chosen as the module docstring
        says; counts (and the first time, logs) those left out."""
        total = len(with_data | tracked)
        limit = self.max_groups_per_rule
        if total <= limit:
            self.untracked_groups.pop(rule.name, None)
            return with_data | tracked

        def by_name(keys: set[GroupKey]) -> list[GroupKey]:
            return sorted(keys, key=lambda k: (k[0] or "", k[1] or ""))

        ordered = by_name(with_data & tracked) + by_name(with_data - tracked) + by_name(tracked - with_data)
        if rule.name not in self.untracked_groups:
            logger.warning(
                "rule %s: %d groups (service, route), over the bound of %d: %d are not tracked (not evaluated, "
                "not notified); see ragtrace_collector_alert_groups_untracked",
                log_text(rule.name),
                total,
                limit,
                total - limit,
            )
        self.untracked_groups[rule.name] = total - limit
        return set(ordered[:limit])

    @staticmethod
    def _alert(
        rule: AlertRule,
        key: GroupKey,
        now: int,
        stepped: _lifecycle.Transition,
        evaluation: _drift.Evaluation,
        silenced: bool,
    ) -> Alert:
        message = evaluation.message
        if stepped.held:
            # Say why the state is not the detector's: the reader sees "ALERT" over a window that reads fine.
            message = f"{message} (held: {stepped.track.state} until the rule's keep_firing_for/no_data_after pass)"
        return Alert(
            time_ns=now,
            rule=rule.name,
            kind=rule.kind,
            metric=rule.metric,
            service=key[0],
            route=key[1],
            state=stepped.track.state,
            previous_state=stepped.previous,
            value=evaluation.value,
            threshold=evaluation.threshold,
            message=message,
            silenced=silenced and not stepped.notify,
            episode_ns=stepped.track.since_ns,
        )
