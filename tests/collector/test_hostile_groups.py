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
