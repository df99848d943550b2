"""The collector's own state as Prometheus metrics at ``GET /metrics`` (text exposition format), so its alerts
can be routed, grouped and silenced by Alertmanager like any other.

The parts: ``_stats.py`` (the counters the receivers, the pipeline and scoring add to), ``_exposition.py`` (every
family, built at scrape time with prometheus_client), ``_route.py`` (the Starlette route). docs/collector.md lists
the metrics.
"""

from __future__ import annotations

from ragtrace_collector._prometheus._exposition import PREFIX, Sources, render
from ragtrace_collector._prometheus._route import SCRAPE_PATH, metrics_routes
from ragtrace_collector._prometheus._stats import Stats, StatsSnapshot, http_refusal_reason

__all__ = [
    "PREFIX",
    "SCRAPE_PATH",
    "Sources",
    "Stats",
    "StatsSnapshot",
    "http_refusal_reason",
    "metrics_routes",
    "render",
]
