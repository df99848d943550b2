"""``GET /metrics`` (issue 15): a real collector's own state, scraped after real OTLP and parsed with
prometheus_client's parser (and linted by ``promtool check metrics`` when Debian's prometheus is installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.collector._spans import SpanFactory, otlp_bytes, otlp_json, start_collector

NS = 1_000_000_000
HOUR = 3600 * NS
PROMTOOL = shutil.which("promtool")
RULES = """
interval = "1h"   # the test evaluates by hand

[[sinks]]
type = "log"

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
"""


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _post(port: int, body: bytes | str, content_type: str = "application/x-protobuf") -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/v1/traces", content=body, headers={"Content-Type": content_type}, timeout=30
    )


@pytest.mark.parametrize("decode_processes", [0, 1])
def test_metrics_count_what_arrived_and_show_each_alert_groups_state_and_statistic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decode_processes: int, store_target: str
) -> None:
    monkeypatch.setenv("RAGTRACE_JUDGE", "offline")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "0")  # the collector decides not_sampled: no judge call
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    now = 1_800_000_000 * NS
    shop = SpanFactory(service="shop")
    for i in range(400):  # a day at 5 %, then the last hour at 25 %
        value = 0.9 if i % 20 == 0 else 0.2
        shop.rag(scores={"hallucination": value}, decision="evaluated", end_ns=now - 25 * HOUR + i * 200 * NS)
    for i in range(80):
        value = 0.9 if i % 4 == 0 else 0.2
        shop.rag(scores={"hallucination": value}, decision="evaluated", end_ns=now - HOUR + (i + 1) * 40 * NS)
    unscored = SpanFactory(service="docs")
    for _ in range(5):
        unscored.rag()
    bad = json.loads(otlp_json([unscored.rag()]))
    bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "abc"  # not 16 bytes: rejected alone

    collector = start_collector(store_target, watch=True, score=True, rules=rules,
                                decode_processes=decode_processes)  # fmt: skip
    try:
        port = collector.http_port or 0
        assert _post(port, otlp_bytes(shop.all())).status_code == 200
        assert _post(port, otlp_bytes(unscored.all()[:10])).status_code == 200
        partial = _post(port, json.dumps(bad), "application/json")
        assert partial.status_code == 200 and partial.json()["partialSuccess"]["rejectedSpans"] == "1"
        assert _post(port, b"\xff\xfe not protobuf").status_code == 400
        assert _post(port, b"{}", "text/plain").status_code == 415
        assert collector.scorer.wait_idle(60)
        collector.watcher.evaluate_once(now)

        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = scraped.text
    finally:
        collector.stop()

    got = _samples(text)

    def value(name: str, **labels: str) -> float:
        return got[(name, frozenset(labels.items()))]

    stored = 2 * 480 + 2 * 5  # each RAG span has a retriever child; the bad export is its RAG span alone
    assert value("ragtrace_collector_spans_stored_total") == stored
    assert value("ragtrace_collector_spans_rejected_total") == 1
    assert value("ragtrace_collector_spans_received_total") == stored + 1
    assert value("ragtrace_collector_requests_refused_total", receiver="http", reason="malformed") == 1
    assert value("ragtrace_collector_requests_refused_total", receiver="http", reason="unsupported") == 1
    assert value("ragtrace_collector_decisions_total", decision="evaluated", decided_by="app") == 480
    assert value("ragtrace_collector_decisions_total", decision="not_sampled", decided_by="collector") == 5
    assert value("ragtrace_collector_scoring_queue_records") == 0
    assert value("ragtrace_collector_inflight_bytes") == 0
    group = {"rule": "hallucination-spike", "kind": "spike", "metric": "hallucination", "service": "shop", "route": ""}
    assert value("ragtrace_collector_alert_state", **group, state="ALERT") == 1
    assert value("ragtrace_collector_alert_state", **group, state="OK") == 0
    assert value("ragtrace_collector_alert_statistic", **group) > 8.0  # the CUSUM statistic, past h
    assert value("ragtrace_collector_alert_threshold", **group) == 8.0
    assert value("ragtrace_collector_alert_silenced", **group) == 0
    assert value("ragtrace_collector_alert_last_evaluation_timestamp_seconds", **group) == now / NS
    if PROMTOOL is not None:
        linted = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
        assert linted.returncode == 0, linted.stdout.decode() + linted.stderr.decode()


def test_with_a_token_metrics_need_it_as_prometheus_sends_it(store_target: str) -> None:
    collector = start_collector(store_target, token="s3cret")
    try:
        url = f"http://127.0.0.1:{collector.http_port}/metrics"
        refused = httpx.get(url, timeout=30)
        assert refused.status_code == 401
        # Prometheus: `authorization: {type: Bearer, credentials_file: ...}` in the scrape config.
        scraped = httpx.get(url, headers={"Authorization": "Bearer s3cret"}, timeout=30)
        assert scraped.status_code == 200
        assert _samples(scraped.text)[("ragtrace_collector_spans_stored_total", frozenset())] == 0
        # No watcher, no scoring: their series are left out rather than reported as zeros.
        assert "ragtrace_collector_alert_state" not in scraped.text
        assert "ragtrace_collector_scoring_queue_records" not in scraped.text
    finally:
        collector.stop()
