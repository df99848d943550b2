"""Senders name the services: one export naming many must not make the watcher track a group for each
(20,000 names made 20,000 groups and a 23 MB ``/metrics``). A real collector, real OTLP, ``/metrics`` scraped."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from ragtrace_collector._alerts import _watcher

from tests.collector._spans import SpanFactory, otlp_bytes, start_collector

NS = 1_000_000_000
NOW = 1_800_000_000 * NS
BOUND = 10
RULES = """
interval = "1h"   # the test evaluates by hand

[[sinks]]
type = "log"

[[rules]]
name = "hallucination-high"
kind = "threshold"
metric = "hallucination"
window = "1h"
threshold = 0.5
"""


def _export(*services: str) -> bytes:
    spans = []
    for service in services:
        factory = SpanFactory(service=service)
        factory.rag(scores={"hallucination": 0.9}, decision="evaluated", end_ns=NOW - 60 * NS)
        spans += factory.all()
    return otlp_bytes(spans)


def test_an_export_naming_many_services_makes_at_most_the_bound_of_groups_per_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, store_target: str
) -> None:
    monkeypatch.setattr(_watcher, "MAX_GROUPS_PER_RULE", BOUND)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    collector = start_collector(store_target, watch=True, rules=rules)
    url = f"http://127.0.0.1:{collector.http_port}"
    headers = {"content-type": "application/x-protobuf"}
    try:
        assert httpx.post(f"{url}/v1/traces", content=_export("shop"), headers=headers, timeout=30).status_code == 200
        collector.watcher.evaluate_once(NOW)
        flood = [f"svc-{number:03d}\n" for number in range(3 * BOUND)]
        assert httpx.post(f"{url}/v1/traces", content=_export(*flood), headers=headers, timeout=30).status_code == 200
        with caplog.at_level(logging.WARNING, logger="ragtrace_collector.alerts"):
            collector.watcher.evaluate_once(NOW)
            collector.watcher.evaluate_once(NOW + NS)
        text = httpx.get(f"{url}/metrics", timeout=30).text
    finally:
        collector.stop()
    services = set()
    untracked = None
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "ragtrace_collector_alert_state":
                services.add(sample.labels["service"])
            if sample.name == "ragtrace_collector_alert_groups_untracked":
                untracked = (sample.labels["rule"], sample.value)
    assert len(services) == BOUND
    assert "shop" in services  # tracked before the flood: kept through it
    assert untracked == ("hallucination-high", 3 * BOUND + 1 - BOUND)
    warnings = [r.getMessage() for r in caplog.records if "not tracked" in r.getMessage()]
    assert len(warnings) == 1 and "hallucination-high" in warnings[0]


def _export_at(end_ns: int, *services: str) -> bytes:
    spans = []
    for service in services:
        factory = SpanFactory(service=service)
        factory.rag(scores={"hallucination": 0.9}, decision="evaluated", end_ns=end_ns)
        spans += factory.all()
    return otlp_bytes(spans)


def test_groups_that_fall_out_of_the_bound_are_pruned_from_the_store_and_stay_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_target: str
) -> None:
    """Tracked groups without data, pushed past the bound by new groups with data, lose their ``alert_groups``
    row (the table holds at most the bound per rule) and are not brought back from ``alerts`` when a watcher
    loads the tracks again; their history in ``alerts`` stays."""
    from ragtrace_collector._alerts._persist import load_tracks
    from ragtrace_collector._store import connect

    from tests.collector._stores import rows

    monkeypatch.setattr(_watcher, "MAX_GROUPS_PER_RULE", BOUND)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    collector = start_collector(store_target, watch=True, rules=rules)
    url = f"http://127.0.0.1:{collector.http_port}"
    headers = {"content-type": "application/x-protobuf"}
    old = [f"old-{number:02d}" for number in range(BOUND)]
    new = [f"new-{number:02d}" for number in range(BOUND + 5)]
    later = NOW + 3 * 3600 * NS  # the old groups' records are out of the rule's 1 h window by then
    try:
        body = _export_at(NOW - 60 * NS, *old)
        assert httpx.post(f"{url}/v1/traces", content=body, headers=headers, timeout=30).status_code == 200
        collector.watcher.evaluate_once(NOW)
        body = _export_at(later - 60 * NS, *new)
        assert httpx.post(f"{url}/v1/traces", content=body, headers=headers, timeout=30).status_code == 200
        collector.watcher.evaluate_once(later)
        collector.watcher.evaluate_once(later + NS)
    finally:
        collector.stop()
    grouped = {service for (service,) in rows(store_target, "SELECT service FROM alert_groups")}
    assert grouped == set(new[:BOUND])
    assert {service for (service,) in rows(store_target, "SELECT service FROM alerts")} >= set(old)
    conn = connect(store_target)
    try:
        assert {service for (_, service, _) in load_tracks(conn)} == set(new[:BOUND])
    finally:
        conn.close()
