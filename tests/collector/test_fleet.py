"""The fleet, for real on this machine: PostgreSQL, three ``serve --store`` replicas, haproxy in front running the
shipped config, and the OpenTelemetry SDK's own OTLP/HTTP exporter sending RAG spans through it. Mid-load the
leader is ``kill -9``-ed, then another replica; both are restarted.

Asserted: every span whose export returned success is stored exactly once; at most one replica says it leads at
every sample; a new leader takes over (the time it took is bench/fleet_failover.py's figure); a hallucination
spike after the failovers gives exactly one ALERT row and one delivery to a local webhook.

Server-side scoring and the join run on every replica, as deployed (their work is claimed: the spans here come
decided, so they claim nothing; tests/collector/test_claims.py has two replicas compete for the same records and
traces).
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._store.leadership import LEADER_LOCK

from tests.collector._fleet import Fleet, haproxy_bin, running_fleet
from tests.collector._spans import SpanFactory, hex_span_id
from tests.collector._webhook import Receiver

pytestmark = pytest.mark.slow

RULES = """
interval = "200ms"

[[sinks]]
type = "webhook"
name = "hook"
url = "{url}"
retries = 0

[[rules]]
name = "hallucination-spike"
kind = "spike"
metric = "hallucination"
window = "1h"
baseline = "1d"
min_records = 20
baseline_rate = 0.05
group_by = "service"
sinks = ["hook"]
"""


class _Sender(threading.Thread):
    """Exports ``batches`` batches of RAG spans through the balancer with the SDK's exporter; keeps the span ids
    of every export that returned success."""

    def __init__(self, endpoint: str, batches: int, per_batch: int = 10) -> None:
        super().__init__(name="fleet-sender", daemon=True)
        self.exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=30)
        self.batches, self.per_batch = batches, per_batch
        self.acked: list[str] = []
        self.failed = 0
        self.sent = 0

    def run(self) -> None:
        for _ in range(self.batches):
            factory = SpanFactory(service="shop")
            for _ in range(self.per_batch):
                factory.rag(scores={"hallucination": 0.2, "faithfulness": 0.8}, decision="evaluated")
            spans = factory.all()
            if self.exporter.export(spans) == SpanExportResult.SUCCESS:
                self.acked.extend(hex_span_id(s) for s in spans)
            else:
                self.failed += 1
            self.sent += 1
        self.exporter.shutdown()


class _Sampler(threading.Thread):
    """Counts the sessions that hold the leader's lock, every 100 ms, until stopped: PostgreSQL's own view, at one
    instant (asking the replicas one after another would see the old leader before a kill and the new one after
    it, in one "sample")."""

    def __init__(self, server: Any, url: str) -> None:
        super().__init__(name="fleet-sampler", daemon=True)
        self.server, self.url = server, url
        self.counts: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            rows = self.server.psql(
                self.url,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                f"AND ((classid::bigint << 32) | objid::bigint) = {LEADER_LOCK} AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())",
            )
            self.counts.append(int(rows[0][0]))


_EVALUATED = re.compile(
    r'^ragtrace_collector_alert_last_evaluation_timestamp_seconds\{[^}]*service="spiky"[^}]*\} (\S+)', re.M
)


def _until_evaluated_after(fleet: Fleet, after: float) -> None:
    """Wait until the leader has evaluated the spiky group at a time past ``after`` (seconds since the epoch)."""
    deadline = time.monotonic() + 60
    while True:
        text = httpx.get(f"http://127.0.0.1:{fleet.leader().http_port}/metrics", timeout=5).text
        found = _EVALUATED.search(text)
        if found is not None and float(found.group(1)) > after:
            return
        assert time.monotonic() < deadline, "the leader did not evaluate again"
        time.sleep(0.05)


def _deliveries_until_alert(receiver: Receiver, service: str) -> list[dict[str, Any]]:
    """The webhook deliveries for ``service`` up to its first ALERT (those of other groups are passed over: the
    busy group's first rounds may say NO_DATA, then OK, which is delivered)."""
    mine: list[dict[str, Any]] = []
    while not mine or mine[-1]["alert"]["state"] != "ALERT":
        body = receiver.next()
        if body["alert"]["service"] == service:
            mine.append(body)
    return mine


def _failover_seconds(fleet: Fleet, killed: Any) -> float:
    started = time.monotonic()
    deadline = started + 60
    while True:
        leaders = [r for r in fleet.leaders() if r is not killed]
        if leaders:
            return time.monotonic() - started
        assert time.monotonic() < deadline, "no replica took over the lead within 60 s"
        time.sleep(0.05)


def test_three_replicas_lose_nothing_when_the_leader_and_another_are_killed(
    postgres_server: Any, tmp_path: Path, receiver: Receiver
) -> None:
    if haproxy_bin() is None:
        pytest.skip("Debian's haproxy is not installed: run `make system-deps`")
    url = postgres_server.database()
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(url=receiver.url), encoding="utf-8")
    with running_fleet(url, tmp_path, extra=("--rules", str(rules))) as fleet:
        leader = fleet.leader()
        sampler = _Sampler(postgres_server, url)
        sampler.start()
        sender = _Sender(fleet.endpoint, batches=120)
        sender.start()
        while sender.sent < 20:
            time.sleep(0.05)
        leader.kill()  # mid-load, maybe mid-request
        failover = _failover_seconds(fleet, leader)
        while sender.sent < 50:
            time.sleep(0.05)
        other = next(r for r in fleet.replicas if r is not leader and not r.leads())
        other.kill()
        leader.start()
        other.start()
        sender.join(300)
        assert not sender.is_alive()
        sampler.done.set()
        sampler.join(30)

        stored = [row[0] for row in postgres_server.psql(url, "SELECT span_id FROM spans")]
        assert len(stored) == len(set(stored))  # the key makes a duplicate impossible; retries stored nothing twice
        assert set(sender.acked) <= set(stored), f"{len(set(sender.acked) - set(stored))} acknowledged spans lost"
        assert len(sender.acked) >= 10 * 100  # most batches succeeded (the SDK retried the refused ones)
        assert max(sampler.counts) <= 1 and sampler.counts.count(1) > len(sampler.counts) // 2
        assert len(fleet.leaders()) == 1  # and the replicas agree once the kills are over
        assert failover < 30

        # A spike after the failovers: one ALERT, one delivery, whichever replica leads now.
        spike = SpanFactory(service="spiky")
        for i in range(60):
            hallucination = 0.9 if i % 3 == 0 else 0.2
            spike.rag(scores={"hallucination": hallucination, "faithfulness": 1 - hallucination}, decision="evaluated")
        exporter = OTLPSpanExporter(endpoint=f"{fleet.endpoint}/v1/traces", timeout=30)
        assert exporter.export(spike.all()) == SpanExportResult.SUCCESS
        exporter.shutdown()
        spiky = _deliveries_until_alert(receiver, "spiky")
        assert [b["alert"]["state"] for b in spiky] == ["ALERT"]
        # Two more rounds of whichever replica leads: none may record or send the same episode again.
        _until_evaluated_after(fleet, time.time() + 0.5)
        rows = postgres_server.psql(url, "SELECT state FROM alerts WHERE service = 'spiky' AND state = 'ALERT'")
        assert rows == [("ALERT",)]
        later = [receiver.bodies.get() for _ in range(receiver.bodies.qsize())]
        assert [b for b in later if b["alert"]["service"] == "spiky"] == []
