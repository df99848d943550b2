"""Alerts: the watcher evaluates alert rules over the store, keeps a state machine per rule and group, and
notifies sinks.

The parts: ``_watcher.py`` (the ``Watcher`` and its state machine), ``_evaluation.py`` (one rule over the
store), ``_sinks.py`` (the sinks, registered by type), ``_alert.py`` (the notification and the ``Sink``
protocol). Sinks: ``WebhookSink`` (POST JSON with a Slack-compatible ``text`` field, timeouts and retries
on its own thread, so a slow receiver delays nobody), ``LogSink`` and ``StdoutSink``. A sink never raises.
"""

from __future__ import annotations

from ragtrace_collector._alerts._alert import Alert, Sink
from ragtrace_collector._alerts._evaluation import evaluate_rule
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
    "Sink",
    "SinkFactory",
    "StdoutSink",
    "Watcher",
    "WebhookSink",
    "build_sinks",
    "evaluate_rule",
    "register_sink",
    "sink_types",
    "unregister_sink",
]
