"""ragtrace-collector: receive OTLP, store spans and scores, watch drift, alert.

Run it with ``ragtrace-collector serve --db ragtrace.db``; embed it with ``Collector(CollectorConfig(...))``.
The public API is exactly ``__all__``; everything in a ``_module`` is private and may change.

Extension point: an alert sink of your own is a class with ``name``, ``send(alert)`` (never raises, returns
quickly) and ``close(timeout)`` (the ``Sink`` protocol), registered by type with
``register_sink("my-type", factory)`` where ``factory`` takes the ``SinkConfig`` of a ``[[sinks]]`` table of
the rules file; a rules file then names ``type = "my-type"`` like a built-in one.

The parts, one folder or module per job: ``_http/`` and ``_grpc.py`` (receive), ``_otlp/`` (decode, with the
public ``ragtrace.wire`` codec), ``_pipeline.py`` (bound, decode, store), ``_store/`` (the one owner of SQL),
``_join/`` (foreign traces), ``_scoring.py`` (server-side scoring), ``_drift/`` (pure detectors),
``_alerts/`` (rules, lifecycle, sinks), ``_report/`` and ``_triage/`` (the pages), ``_prometheus/``
(``/metrics``, reading ``_stats.py``), ``_phoenix/`` (annotations), ``_server.py`` (wiring).
"""

from ragtrace_collector._alerts import Alert, Sink, Watcher, register_sink, sink_types, unregister_sink
from ragtrace_collector._forward import Forwarder
from ragtrace_collector._rule_types import SinkConfig
from ragtrace_collector._scoring import ServerScorer
from ragtrace_collector._server import Collector, CollectorConfig
from ragtrace_collector._store import Store, StoreError
from ragtrace_collector._version import __version__

__all__ = [
    "Alert",
    "Collector",
    "CollectorConfig",
    "Forwarder",
    "ServerScorer",
    "Sink",
    "SinkConfig",
    "Store",
    "StoreError",
    "Watcher",
    "__version__",
    "register_sink",
    "sink_types",
    "unregister_sink",
]
