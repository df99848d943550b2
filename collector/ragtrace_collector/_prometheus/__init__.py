"""The collector's own state as Prometheus metrics at ``GET /metrics`` (text exposition format), so its alerts
can be routed, grouped and silenced by Alertmanager like any other.

The counters it reads are ``ragtrace_collector._stats.Stats`` (the receivers, the pipeline and scoring add to
them); ``_exposition.py`` builds every family at scrape time with prometheus_client, ``_route.py``
serves it. docs/collector.md lists the metrics.
"""

from __future__ import annotations

from ragtrace_collector._prometheus._exposition import PREFIX, Sources, render
from ragtrace_collector._prometheus._route import SCRAPE_PATH, metrics_routes

__all__ = [
    "PREFIX",
    "SCRAPE_PATH",
    "Sources",
    "metrics_routes",
    "render",
]
