"""Alerts: the watcher evaluates alert rules over the store, keeps a state machine per rule and group, and
notifies sinks.

The parts: ``_watcher.py`` (the ``Watcher``: evaluate every rule, record, notify), ``_lifecycle.py`` (one
group's state machine as a pure ``step``: holds, NO_DATA, the frozen baseline, silences and acknowledgements),
``_evaluation.py`` (one rule over the store), ``_persist.py`` (the watcher's state, through the store's
``_store.alerts``, which also keeps acknowledgements, silences and each group's view), ``_sinks.py`` (the
sinks, registered by type), ``_alert.py`` (the notification and the ``Sink`` protocol).
Sinks: ``WebhookSink`` (POST JSON with a Slack-compatible ``text`` field, timeouts and retries on its own
thread, so a slow receiver delays nobody), ``LogSink`` and ``StdoutSink``. A sink never raises.
"""

from __future__ import annotations

from ragtrace_collector._alerts._alert import Alert, Sink
from ragtrace_collector._alerts._evaluation import evaluate_rule
from ragtrace_collector._alerts._lifecycle import Mute, Policy, Track, Transition, frozen_baseline_end, step
from ragtrace_collector._alerts._sinks import (
    LogSink,
    SinkFactory,
    StdoutSink,
    WebhookSink,
    build_sinks,
    register_sink,
    sink_types,
    unregister_sink,
)
from ragtrace_collector._alerts._watcher import Watcher

__all__ = [
    "Alert",
    "LogSink",
    "Mute",
    "Policy",
    "Sink",
    "SinkFactory",
    "StdoutSink",
    "Track",
    "Transition",
    "Watcher",
    "WebhookSink",
    "build_sinks",
    "evaluate_rule",
    "frozen_baseline_end",
    "register_sink",
    "sink_types",
    "step",
    "unregister_sink",
]
