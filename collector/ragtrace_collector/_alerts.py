"""The watcher: evaluates alert rules over the store, keeps a state machine per rule and group, notifies sinks.

``Watcher(db_path, rules_path)`` opens its own SQLite connection for each evaluation (WAL lets it read
while the receiver writes), so it never holds a lock the ingestion path waits on. ``start()`` runs
``evaluate_once`` every rule-set interval on a daemon thread; ``stop()`` ends it and drains the sinks.

State machine, per (rule, service, route): every change of state is a row in ``alerts`` and, except the
very first OK/NO_DATA a group is seen in, a notification. An ``ALERT`` that persists is sent again only
after the rule's renotify interval (also recorded as a row); going back to ``OK`` from ``ALERT`` or
``WARNING`` sends a resolved message. A group that stops getting scored records goes to ``NO_DATA``.

Sinks: ``WebhookSink`` (POST JSON with a Slack-compatible ``text`` field, timeouts and retries on its own
thread, so a slow receiver delays nobody), ``LogSink`` and ``StdoutSink``. A sink never raises.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import sqlite3
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any, Protocol, TextIO, runtime_checkable

from ragtrace_collector import _drift
from ragtrace_collector._rules import (
    DriftParams,
    Rule,
    RuleSet,
    SinkConfig,
    SpikeParams,
    ThresholdParams,
    load_rules,
)

logger = logging.getLogger("ragtrace_collector.alerts")

_SCORES = "scores"
_ALERTS = "alerts"
_ALERTS_DDL = (
    f"CREATE TABLE IF NOT EXISTS [{_ALERTS}] ([id] INTEGER PRIMARY KEY, [time_ns] INTEGER, [rule] TEXT, [kind] TEXT, "
    "[metric] TEXT, [service] TEXT, [route] TEXT, [state] TEXT, [previous_state] TEXT, [value] FLOAT, "
    "[threshold] FLOAT, [message] TEXT, [sinks] TEXT)"
)
_ALERTS_INDEX = f"CREATE INDEX IF NOT EXISTS [idx_{_ALERTS}_time_ns] ON [{_ALERTS}] ([time_ns])"


@dataclass(frozen=True, slots=True)
class Alert:
    """One state change (or reminder) of one rule for one service/route: what sinks receive and what the
    ``alerts`` table records. ``service``/``route`` are None when the rule does not split by them."""

    time_ns: int
    rule: str
    kind: str
    metric: str
    service: str | None
    route: str | None
    state: str
    previous_state: str | None
    value: float | None
    threshold: float | None
    message: str

    @property
    def resolved(self) -> bool:
        """True when this is the all-clear after a WARNING or ALERT."""
        return self.state == _drift.OK and self.previous_state in (_drift.ALERT, _drift.WARNING)

    @property
    def reminder(self) -> bool:
        """True when this repeats an ALERT that is still firing (renotify interval elapsed)."""
        return self.state == self.previous_state

    @property
    def text(self) -> str:
        """One line for humans and for Slack's ``text`` field (Slack mrkdwn: ``*bold*``)."""
        if self.resolved:
            head = "RESOLVED"
        elif self.reminder:
            head = f"{self.state} (still firing)"
        else:
            head = self.state
        where = ", ".join(
            f"{key}={value}" for key, value in (("service", self.service), ("route", self.route)) if value is not None
        )
        scope = f" [{where}]" if where else ""
        return f"*{head}* {self.rule}: {self.metric}{scope}: {self.message}"

    def payload(self) -> dict[str, Any]:
        """The webhook body: Slack-compatible ``text`` plus the structured alert."""
        return {"text": self.text, "alert": asdict(self)}


@runtime_checkable
class Sink(Protocol):
    """Where notifications go. ``send`` returns quickly and never raises; ``close`` drains pending work."""

    name: str

    def send(self, alert: Alert) -> None:
        """Deliver (or queue) one notification."""
        ...

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is pending, within ``timeout`` seconds, and release resources."""
        ...


class LogSink:
    """Logs each notification on the ``ragtrace_collector.alerts`` logger: ALERT at ERROR, WARNING and
    NO_DATA at WARNING, OK at INFO."""

    def __init__(self, name: str = "log", log: logging.Logger | None = None) -> None:
        self.name = name
        self._logger = log or logger

    def send(self, alert: Alert) -> None:
        level = {
            _drift.ALERT: logging.ERROR,
            _drift.WARNING: logging.WARNING,
            _drift.NO_DATA: logging.WARNING,
        }.get(alert.state, logging.INFO)
        self._logger.log(level, "%s", alert.text)

    def close(self, timeout: float = 5.0) -> None:
        return None


class StdoutSink:
    """Prints one line per notification (to ``stream``, standard output by default)."""

    def __init__(self, name: str = "stdout", stream: TextIO | None = None) -> None:
        self.name = name
        self._stream = stream

    def send(self, alert: Alert) -> None:
        stream = self._stream or sys.stdout
        try:
            print(alert.text, file=stream, flush=True)
        except (OSError, ValueError):
            logger.exception("stdout sink could not print an alert")

    def close(self, timeout: float = 5.0) -> None:
        return None


class WebhookSink:
    """POSTs ``Alert.payload()`` as JSON to ``url`` from its own thread.

    Each delivery is tried ``1 + retries`` times with a ``timeout`` per attempt and exponential back-off
    (0.5 s, 1 s, 2 s, ...) on connection errors, 429 and 5xx; other 4xx are not retried. At most
    ``max_pending`` notifications wait; past that the newest is dropped and logged rather than let a
    dead receiver grow memory. ``delivered`` and ``failed`` count outcomes.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "webhook",
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.5,
        headers: Sequence[tuple[str, str]] = (),
        max_pending: int = 1000,
    ) -> None:
        self.name = name
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = {"Content-Type": "application/json", "User-Agent": "ragtrace-collector", **dict(headers)}
        self.delivered = 0
        self.failed = 0
        self._queue: queue.Queue[Alert | None] = queue.Queue(maxsize=max_pending)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ragtrace-webhook-{name}", daemon=True)
        self._thread.start()

    def send(self, alert: Alert) -> None:
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            self.failed += 1
            logger.error(
                "webhook %s: %d notifications pending, dropped: %s", self.name, self._queue.qsize(), alert.text
            )

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued notification was delivered or given up on; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        self._closing.set()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            try:
                if alert is None:
                    return
                if self._deliver(alert):
                    self.delivered += 1
                else:
                    self.failed += 1
            except Exception:  # the delivery thread must outlive any surprise
                self.failed += 1
                logger.exception("webhook %s: delivery crashed", self.name)
            finally:
                self._queue.task_done()

    def _deliver(self, alert: Alert) -> bool:
        body = json.dumps(alert.payload()).encode("utf-8")
        for attempt in range(self.retries + 1):
            # Back-off that a close() cuts short: shutting down must not wait out a dead receiver.
            if attempt and self._closing.wait(self.backoff * 2 ** (attempt - 1)):
                break
            request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    response.read()
                return True
            except urllib.error.HTTPError as exc:
                retryable = exc.code == 429 or exc.code >= 500
                logger.warning("webhook %s: HTTP %d (attempt %d)", self.name, exc.code, attempt + 1)
                if not retryable:
                    break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                logger.warning("webhook %s: %s (attempt %d)", self.name, exc, attempt + 1)
        logger.error("webhook %s: gave up on: %s", self.name, alert.text)
        return False


def build_sinks(configs: Sequence[SinkConfig]) -> list[Sink]:
    """Instantiate the sinks a rules file describes."""
    sinks: list[Sink] = []
    for config in configs:
        if config.type == "webhook":
            assert config.url is not None  # validated by the rules parser
            sinks.append(
                WebhookSink(
                    config.url,
                    name=config.name,
                    timeout=config.timeout,
                    retries=config.retries,
                    headers=config.headers,
                )
            )
        elif config.type == "stdout":
            sinks.append(StdoutSink(config.name))
        else:
            sinks.append(LogSink(config.name))
    return sinks


# --------------------------------------------------------------------------------------------------
# Evaluation of one rule over the store
# --------------------------------------------------------------------------------------------------

GroupKey = tuple[str | None, str | None]


def _grouped(rule: Rule) -> tuple[bool, bool]:
    """Whether the rule is evaluated per service and per route."""
    return rule.group_by in ("service", "service_route"), rule.group_by in ("route", "service_route")


def _group_key(rule: Rule, service: str | None, route: str | None) -> GroupKey:
    by_service, by_route = _grouped(rule)
    return (service if by_service else rule.service, route if by_route else rule.route)


def _filters(key: GroupKey, grouped: tuple[bool, bool] = (False, False)) -> tuple[str, list[Any]]:
    """The SQL that keeps one group's rows.

    A grouped column always filters: its None is the group of rows without a service (or route), which must
    count its own rows only (``IS NULL``), not every row. An ungrouped column filters only when the rule
    restricts it (None there means any value).
    """
    clauses, args = [], []
    for column, value, by in zip(("service", "route"), key, grouped, strict=True):
        if by:
            clauses.append(f"{column} IS ?")  # IS: equal, or both NULL
            args.append(value)
        elif value is not None:
            clauses.append(f"{column} = ?")
            args.append(value)
    return "".join(f" AND {c}" for c in clauses), args


def _lookback_ns(rule: Rule) -> int:
    params = rule.params
    if isinstance(params, ThresholdParams):
        return params.window_ns
    return params.window_ns + params.baseline_ns


def _values(conn: sqlite3.Connection, rule: Rule, key: GroupKey, start: int, end: int, limit: int = -1) -> list[float]:
    # (start, end]: a record exactly on a boundary belongs to the later window. Newest first for LIMIT.
    metric = rule.metric
    where, args = _filters(key, _grouped(rule))
    rows = conn.execute(
        f"SELECT value FROM {_SCORES} WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?"
        f"{where} ORDER BY time_ns DESC, span_id DESC LIMIT ?",
        [metric, start, end, *args, limit],
    ).fetchall()
    return [float(row[0]) for row in reversed(rows)]


def evaluate_rule(
    conn: sqlite3.Connection, rule: Rule, key: GroupKey, now_ns: int, previous: str | None
) -> _drift.Evaluation:
    """Evaluate one rule for one group over the scores table, as of ``now_ns``."""
    direction = _drift.metric_direction(rule.metric)
    params = rule.params
    if isinstance(params, ThresholdParams):
        values = _values(conn, rule, key, now_ns - params.window_ns, now_ns)
        return _drift.threshold_state(
            values,
            threshold=params.threshold,
            warning=params.warning,
            direction=direction,
            min_count=params.min_records,
            previous=previous,
        )
    if isinstance(params, SpikeParams):
        split = now_ns - params.window_ns
        recent = _values(conn, rule, key, split, now_ns, params.max_records)
        where, args = _filters(key, _grouped(rule))
        bad_sql = "value > ?" if direction == "lower" else "value < ?"
        total, bad = conn.execute(
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END), 0) FROM {_SCORES} "
            f"WHERE metric = ? AND value IS NOT NULL AND time_ns > ? AND time_ns <= ?{where}",
            [params.cutoff, rule.metric, split - params.baseline_ns, split, *args],
        ).fetchone()
        return _drift.spike_state(
            _drift.bad_events(recent, direction=direction, cutoff=params.cutoff),
            baseline_counts=(int(bad), int(total)),
            baseline_rate=params.baseline_rate,
            shift=params.shift,
            h=params.h,
            warning_h=params.warning_h,
            min_rate=params.min_rate,
            min_count=params.min_records,
            min_baseline=params.min_baseline,
            previous=previous,
        )
    assert isinstance(params, DriftParams)
    split = now_ns - params.window_ns
    return _drift.drift_state(
        _values(conn, rule, key, split, now_ns),
        _values(conn, rule, key, split - params.baseline_ns, split),
        method=params.method,
        warning=params.warning,
        alert=params.alert,
        min_count=params.min_records,
        bins=params.bins,
    )


def _groups(conn: sqlite3.Connection, rule: Rule, now_ns: int) -> set[GroupKey]:
    where, args = _filters((rule.service, rule.route))
    rows = conn.execute(
        f"SELECT DISTINCT service, route FROM {_SCORES} WHERE metric = ? AND value IS NOT NULL "
        f"AND time_ns > ? AND time_ns <= ?{where}",
        [rule.metric, now_ns - _lookback_ns(rule), now_ns, *args],
    ).fetchall()
    return {_group_key(rule, service, route) for service, route in rows}


# --------------------------------------------------------------------------------------------------
# The watcher
# --------------------------------------------------------------------------------------------------


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
        conn.execute(_ALERTS_DDL)
        conn.execute(_ALERTS_INDEX)
        conn.commit()
        return conn

    def _load_tracks(self, conn: sqlite3.Connection) -> dict[tuple[str, str | None, str | None], _Track]:
        rows = conn.execute(
            f"SELECT rule, service, route, state, time_ns FROM {_ALERTS} WHERE id IN "
            f"(SELECT MAX(id) FROM {_ALERTS} GROUP BY rule, service, route)"
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
                    conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_SCORES,)).fetchone()
                    is not None
                )
                alerts: list[tuple[Alert, list[Sink]]] = []
                for rule in self.rules.rules:
                    alerts.extend(self._evaluate_rule(conn, rule, now, has_scores))
                with conn:
                    for alert, sinks in alerts:
                        conn.execute(
                            f"INSERT INTO {_ALERTS} (time_ns, rule, kind, metric, service, route, state, "
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
        groups = _groups(conn, rule, now) if has_scores else set()
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
