"""The collector's state in the Prometheus text exposition format: ``render(sources)``.

Read at scrape time, never kept: the counters of ``Stats`` (spans, log records, refusals, decisions), the
queues' depths and the in-flight bytes as gauges, and each alert group's state, statistic (the CUSUM statistic
for a spike rule, the window mean for a threshold rule, the PSI or KS p-value for a drift rule), level, silence
and acknowledgement from the store's ``alert_groups`` (what the watcher wrote at its last evaluation). Every alert
series carries the labels ``rule``, ``kind``, ``metric``, ``service`` and ``route`` (empty when the rule does not
split by it), so Alertmanager can route, group and silence them like any other alert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ragtrace_collector._drift import STATES
from ragtrace_collector._stats import Stats
from ragtrace_collector._store.alerts import GroupView, group_views_at
from ragtrace_collector._version import __version__

__all__ = ["PREFIX", "Sources", "render"]

PREFIX = "ragtrace_collector"
_ALERT_LABELS = ("rule", "kind", "metric", "service", "route")


@dataclass(frozen=True, slots=True)
class Sources:
    """Where each figure comes from: the counters, the store's file, and the parts' live gauges (None: that
    part is off, and its series are left out)."""

    stats: Stats
    db_path: str | Path
    inflight_bytes: Callable[[], int]
    inflight_limit_bytes: int
    scoring_queue: Callable[[], int] | None = None
    forward_queue: Callable[[], int] | None = None
    forward_dropped: Callable[[], int] | None = None
    join_waiting: Callable[[], int] | None = None
    join_dropped: Callable[[], int] | None = None
    phoenix: Callable[[], tuple[int, int, Mapping[str, int]]] | None = None
    """The Phoenix annotator's annotations sent, pending, and given up by reason."""
    watching: bool = False
    leading: Callable[[], bool] | None = None
    """Whether this replica leads the store (runs the watcher); None: no watcher here."""
    alert_groups_untracked: Callable[[], Mapping[str, int]] | None = None
    """Per rule, the groups the watcher leaves out for its bound per rule (None: the watcher is off)."""


def _alert_labels(group: GroupView) -> list[str]:
    return [group.rule, group.kind, group.metric, group.service or "", group.route or ""]


def _alert_families(db_path: str | Path, now_ns: int) -> Iterator[Metric]:
    groups = group_views_at(db_path, now_ns)
    state = GaugeMetricFamily(
        f"{PREFIX}_alert_state",
        "1 for the state each alert group is in (OK, WARNING, ALERT, NO_DATA), 0 for the others",
        labels=[*_ALERT_LABELS, "state"],
    )
    statistic = GaugeMetricFamily(
        f"{PREFIX}_alert_statistic",
        "The detector's statistic at the last evaluation: CUSUM (spike), window mean (threshold), PSI or KS "
        "p-value (drift); absent under NO_DATA",
        labels=list(_ALERT_LABELS),
    )
    level = GaugeMetricFamily(f"{PREFIX}_alert_threshold", "The level that raises ALERT", labels=list(_ALERT_LABELS))
    silenced = GaugeMetricFamily(
        f"{PREFIX}_alert_silenced", "1 while a silence mutes the group", labels=list(_ALERT_LABELS)
    )
    acked = GaugeMetricFamily(
        f"{PREFIX}_alert_acknowledged", "1 while the group's current ALERT is acknowledged", labels=list(_ALERT_LABELS)
    )
    evaluated = GaugeMetricFamily(
        f"{PREFIX}_alert_last_evaluation_timestamp_seconds",
        "When the watcher last evaluated the group (seconds since the epoch)",
        labels=list(_ALERT_LABELS),
    )
    for group in groups:
        labels = _alert_labels(group)
        for name in STATES:
            state.add_metric([*labels, name], 1.0 if group.state == name else 0.0)
        if group.value is not None:
            statistic.add_metric(labels, group.value)
        if group.threshold is not None:
            level.add_metric(labels, group.threshold)
        silenced.add_metric(labels, 1.0 if group.silenced_by else 0.0)
        acked.add_metric(labels, 1.0 if group.ack is not None else 0.0)
        if group.evaluated_ns is not None:
            evaluated.add_metric(labels, group.evaluated_ns / 1e9)
    yield from (state, statistic, level, silenced, acked, evaluated)


class _Families:
    """A prometheus_client collector over ``Sources``: builds every family when scraped."""

    def __init__(self, sources: Sources, now_ns: int) -> None:
        self.sources = sources
        self.now_ns = now_ns

    def collect(self) -> Iterator[Metric]:

        sources = self.sources
        snap = sources.stats.snapshot()
        info = GaugeMetricFamily(f"{PREFIX}_info", "The collector's version", labels=["version"])
        info.add_metric([__version__], 1.0)
        yield info
        yield CounterMetricFamily(
            f"{PREFIX}_spans_received",
            "Spans in exports the collector took in",
            snap.spans_stored + snap.spans_rejected,
        )
        yield CounterMetricFamily(f"{PREFIX}_spans_stored", "Spans committed to the store", snap.spans_stored)
        yield CounterMetricFamily(
            f"{PREFIX}_spans_rejected", "Spans refused one by one (partial success): not stored", snap.spans_rejected
        )
        yield CounterMetricFamily(
            f"{PREFIX}_log_records_received",
            "Log records in exports the collector took in (stored + ignored + rejected)",
            snap.logs_stored + snap.logs_ignored + snap.logs_rejected,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_log_records_stored",
            "Evaluation log records (gen_ai.evaluation.result) committed to the store as scores",
            snap.logs_stored,
        )
        yield CounterMetricFamily(
            f"{PREFIX}_log_records_ignored", "Log records that are not evaluations: not stored", snap.logs_ignored
        )
        yield CounterMetricFamily(
            f"{PREFIX}_log_records_rejected",
            "Log records refused one by one (partial success): not stored",
            snap.logs_rejected,
        )
        refused = CounterMetricFamily(
            f"{PREFIX}_requests_refused", "Exports refused whole, nothing stored", labels=["receiver", "reason"]
        )
        for (receiver, reason), count in sorted(snap.refused.items()):
            refused.add_metric([receiver, reason], count)
        yield refused
        decisions = CounterMetricFamily(
            f"{PREFIX}_decisions",
            "RAG records by scoring decision and by who decided (the app, or the collector's scoring)",
            labels=["decision", "decided_by"],
        )
        for (decision, by), count in sorted(snap.decisions.items()):
            decisions.add_metric([decision, by], count)
        yield decisions
        yield GaugeMetricFamily(f"{PREFIX}_inflight_bytes", "Request bytes held right now", sources.inflight_bytes())
        yield GaugeMetricFamily(
            f"{PREFIX}_inflight_limit_bytes",
            "The in-flight budget (--max-inflight-bytes)",
            sources.inflight_limit_bytes,
        )
        if sources.scoring_queue is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_scoring_queue_records",
                "RAG records waiting for server-side scoring",
                sources.scoring_queue(),
            )
        if sources.forward_queue is not None and sources.forward_dropped is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_forward_queue_exports", "Exports waiting to be forwarded", sources.forward_queue()
            )
            yield CounterMetricFamily(
                f"{PREFIX}_forward_dropped", "Exports given up forwarding", sources.forward_dropped()
            )
        if sources.join_waiting is not None and sources.join_dropped is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_join_waiting_traces",
                "Traces of other instrumentations' RAG calls waiting to settle and be joined",
                sources.join_waiting(),
            )
            yield CounterMetricFamily(
                f"{PREFIX}_join_dropped_traces",
                "Waiting traces dropped unjoined to stay within the bounds (--join-max-*)",
                sources.join_dropped(),
            )
        if sources.phoenix is not None:
            sent, pending, dropped_by = sources.phoenix()
            yield CounterMetricFamily(
                f"{PREFIX}_phoenix_annotations_sent", "Scores posted to Phoenix as span annotations", sent
            )
            yield GaugeMetricFamily(
                f"{PREFIX}_phoenix_annotations_pending", "Annotations read from the store, not yet posted", pending
            )
            dropped = CounterMetricFamily(
                f"{PREFIX}_phoenix_annotations_dropped", "Annotations given up, by reason", labels=["reason"]
            )
            for reason, count in sorted(dropped_by.items()):
                dropped.add_metric([reason], count)
            yield dropped
        if sources.leading is not None:
            yield GaugeMetricFamily(
                f"{PREFIX}_leader",
                "1 while this replica leads the store: it runs the alert watcher and its sinks (one replica of a "
                "PostgreSQL store; always 1 on SQLite once the watcher ran)",
                1 if sources.leading() else 0,
            )
        if sources.watching:
            yield from _alert_families(sources.db_path, self.now_ns)
        if sources.alert_groups_untracked is not None:
            untracked = GaugeMetricFamily(
                f"{PREFIX}_alert_groups_untracked",
                "Groups (service, route) a rule leaves out, past its bound of groups per rule",
                labels=["rule"],
            )
            for rule, count in sorted(sources.alert_groups_untracked().items()):
                untracked.add_metric([rule], count)
            yield untracked


def render(sources: Sources, now_ns: int) -> bytes:
    """Every family in the text exposition format (version 0.0.4), as of ``now_ns``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(sources, now_ns))
    return bytes(generate_latest(registry))
