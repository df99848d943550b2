"""The fleet, for real on this machine: PostgreSQL, three ``serve --store`` replicas, haproxy in front running the
shipped config (and, in one variant, rotel as the OpenTelemetry hop before it), and the OpenTelemetry SDK's own
OTLP/HTTP exporters sending through it: decided RAG spans, undecided ones the replicas score, LangChain traces
traced by OpenInference that the replicas join, and evaluations as log records. Mid-load the leader is
``kill -9``-ed, then another replica; both are restarted.

Asserted: every span whose export returned success is stored exactly once; every acknowledged undecided record
is scored, with one row per metric, and every acknowledged trace becomes one RAG record, scored, including work
the killed replicas had claimed (their claims run out after ``--claim-lease-seconds``); every acknowledged
evaluation is stored; at most one replica says it leads at every sample; a new leader takes over (the time it
took is bench/fleet_failover.py's figure); a hallucination spike after the failovers gives exactly one ALERT row
and one delivery to a local webhook.

``make test`` runs the small load; ``make e2e-fleet`` the full one, directly and through rotel.
"""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs.export import LogExportResult
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._store.leadership import LEADER_LOCK

from tests.collector._fleet import Fleet, haproxy_bin, running_fleet
from tests.collector._ports import free_port
from tests.collector._spans import SpanFactory, hex_span_id
from tests.collector._traced_app import langchain_app, shuffled_parts, span_id
from tests.collector._webhook import Receiver
from tests.collector.test_logs_receiver import Evaluations
from tests.ragtrace.test_foreign_langchain import QUESTION, lcel_chain

pytestmark = pytest.mark.slow

LEASE = 4.0
"""The replicas' ``--claim-lease-seconds``: a killed replica's claimed work is taken over this long after."""


@dataclass(frozen=True)
class _Load:
    """How much is sent: ``batches`` exports of ten decided spans; per phase, ``per_phase`` undecided records,
    LangChain traces and logged evaluations. ``hop``: an OpenTelemetry collector between the apps and haproxy."""

    batches: int
    per_phase: int
    hop: str | None = None


SMALL = _Load(batches=120, per_phase=4)
FULL = _Load(batches=600, per_phase=20)
FULL_THROUGH_ROTEL = _Load(batches=600, per_phase=20, hop="rotel")

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
    """Exports ``batches`` batches of decided RAG spans through ``endpoint`` with the SDK's exporter; keeps the
    span ids of every export that returned success."""

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


class _Work(threading.Thread):
    """The rest of the load, in three phases (before the first kill, between the kills, after the restarts):
    undecided RAG spans the replicas score, LangChain traces traced by OpenInference that they join, each sent in
    two exports, and evaluations sent as OTLP log records, all through ``endpoint`` with the SDK's exporters.
    Keeps what each export that returned success carried."""

    def __init__(self, endpoint: str, per_phase: int) -> None:
        super().__init__(name="fleet-work", daemon=True)
        self.spans = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=30)
        self.logs = OTLPLogExporter(endpoint=f"{endpoint}/v1/logs", timeout=30)
        self.per_phase = per_phase
        self.phases: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.undecided: list[str] = []
        """Span ids of undecided RAG spans acknowledged: each must be scored, once."""
        self.traces: dict[str, str] = {}
        """Trace id -> root span id of each LangChain trace whose every export was acknowledged: each must become
        one RAG record."""
        self.partial: set[str] = set()
        """Trace ids of which only some exports were acknowledged."""
        self.evaluations: list[tuple[str, str]] = []
        """(span id, metric) of each evaluation whose log export was acknowledged."""
        with langchain_app(service="lc-fleet") as app:
            for i in range(3 * per_phase):
                lcel_chain().invoke(f"{QUESTION} ({i})")
            self._traced = app.spans()

    def _export(self, spans: list[Any]) -> bool:
        return self.spans.export(spans) == SpanExportResult.SUCCESS

    def run(self) -> None:
        by_trace: dict[int, list[Any]] = {}
        for span in self._traced:
            by_trace.setdefault(span.context.trace_id, []).append(span)
        traces = list(by_trace.values())
        while (phase := self.phases.get()) is not None:
            factory = SpanFactory(service="unscored")
            for i in range(self.per_phase):
                factory.rag(query=f"phase {phase} question {i}: what is the capital of Brazil?")
            undecided = factory.all()
            for part in (undecided[: len(undecided) // 2], undecided[len(undecided) // 2 :]):
                if self._export(part):
                    self.undecided.extend(hex_span_id(s) for s in part if s.name == "answer")
            for spans in traces[phase * self.per_phase : (phase + 1) * self.per_phase]:
                acked = [self._export(part) for part in shuffled_parts(spans, 2, seed=phase)]
                (root,) = [s for s in spans if s.parent is None]
                trace_id = format(root.context.trace_id, "032x")
                if all(acked):
                    self.traces[trace_id] = span_id(root)
                elif any(acked):
                    self.partial.add(trace_id)
            evaluated = SpanFactory(service="logged")
            logs = Evaluations(service="logged")
            for i in range(self.per_phase):
                logs.of(evaluated.rag(query=f"logged {phase} {i}", scores={"faithfulness": 0.9}, decision="evaluated"))
            if self.logs.export(logs.records()) == LogExportResult.SUCCESS:
                self.evaluations.extend((hex_span_id(s), "faithfulness") for s in evaluated.all() if s.name == "answer")
            self.done.put(phase)
        self.spans.shutdown()
        self.logs.shutdown()


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


@contextlib.contextmanager
def _hop(load: _Load, balancer: str, workdir: Path) -> Iterator[str]:
    """Where the apps send: the balancer itself, or a rotel agent (the Rust OpenTelemetry collector from PyPI, the
    collector test extra) on loopback that batches and forwards to it over OTLP/HTTP."""
    if load.hop is None:
        yield balancer
        return
    rotel = pytest.importorskip("rotel", reason="rotel (the collector test extra) is not installed")
    agent = Path(rotel.__file__).parent / "rotel-agent"
    grpc_in, http_in = free_port(), free_port()
    argv = [str(agent), "start", "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_in}",
            "--otlp-http-endpoint", f"127.0.0.1:{http_in}", "--exporter", "otlp",
            "--otlp-exporter-endpoint", balancer, "--otlp-exporter-protocol", "http", "--batch-timeout", "100ms",
            "--pid-file", str(workdir / "rotel.pid"), "--log-file", str(workdir / "rotel.log")]  # fmt: skip
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            deadline = time.monotonic() + 30
            while not _listening(http_in):
                assert process.poll() is None, f"rotel-agent exited with {process.returncode}"
                assert time.monotonic() < deadline, "rotel-agent did not listen"
                time.sleep(0.05)
            yield f"http://127.0.0.1:{http_in}"
        finally:
            process.terminate()  # rotel flushes what it holds on SIGTERM
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _until_stored(postgres_server: Any, url: str, acked: set[str], seconds: float = 60) -> None:
    """Through a hop, an acknowledgement means the hop has the spans: wait (bounded) until it has forwarded them."""
    deadline = time.monotonic() + seconds
    while not acked <= {row[0] for row in postgres_server.psql(url, "SELECT span_id FROM spans")}:
        if time.monotonic() > deadline:
            return  # the assertion that follows names what is missing
        time.sleep(0.2)


def _until_settled(postgres_server: Any, url: str, work: _Work, seconds: float = 180) -> None:
    """Wait until every acknowledged undecided record is decided and every acknowledged trace is joined and decided
    (the killed replicas' claims run out after their lease, then another replica takes the work over)."""
    deadline = time.monotonic() + seconds
    while True:
        undecided = postgres_server.psql(url, "SELECT span_id FROM rag_records WHERE decision IS NULL")
        decided = {
            row[0] for row in postgres_server.psql(url, "SELECT span_id FROM rag_records WHERE decision IS NOT NULL")
        }
        waiting = (set(work.undecided) | set(work.traces.values())) - decided
        if not waiting:
            return
        assert time.monotonic() < deadline, f"{len(waiting)} record(s) never decided; undecided rows: {len(undecided)}"
        time.sleep(0.2)


def _run(postgres_server: Any, tmp_path: Path, receiver: Receiver, load: _Load) -> None:
    """The fleet under ``load``: see the module docstring."""
    if haproxy_bin() is None:
        pytest.skip("Debian's haproxy is not installed: run `make system-deps`")
    url = postgres_server.database()
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(url=receiver.url), encoding="utf-8")
    # Short claims and settle windows, so a killed replica's claimed work is taken over within the test.
    extra = ("--rules", str(rules), "--claim-lease-seconds", str(LEASE), "--join-settle-seconds", "1",
             "--join-max-seconds", "20")  # fmt: skip
    with running_fleet(url, tmp_path, extra=extra) as fleet, _hop(load, fleet.endpoint, tmp_path) as endpoint:
        leader = fleet.leader()
        sampler = _Sampler(postgres_server, url)
        sampler.start()
        work = _Work(endpoint, load.per_phase)
        work.start()
        sender = _Sender(endpoint, batches=load.batches)
        sender.start()
        work.phases.put(0)
        while sender.sent < load.batches // 6:
            time.sleep(0.05)
        assert work.done.get(timeout=300) == 0
        leader.kill()  # mid-load, maybe mid-request, maybe holding claims
        failover = _failover_seconds(fleet, leader)
        work.phases.put(1)
        while sender.sent < load.batches // 2:
            time.sleep(0.05)
        other = next(r for r in fleet.replicas if r is not leader and not r.leads())
        assert work.done.get(timeout=300) == 1
        other.kill()
        leader.start()
        other.start()
        work.phases.put(2)
        assert work.done.get(timeout=300) == 2
        work.phases.put(None)
        sender.join(600)
        work.join(120)
        assert not sender.is_alive() and not work.is_alive()
        sampler.done.set()
        sampler.join(30)
        if load.hop is not None:
            _until_stored(postgres_server, url, set(sender.acked))  # the hop acknowledged before it forwarded

        stored = [row[0] for row in postgres_server.psql(url, "SELECT span_id FROM spans")]
        assert len(stored) == len(set(stored))  # the key makes a duplicate impossible; retries stored nothing twice
        assert set(sender.acked) <= set(stored), f"{len(set(sender.acked) - set(stored))} acknowledged spans lost"
        assert len(sender.acked) >= load.batches * 10 * 3 // 4  # most batches succeeded (the SDK retries 503s)
        assert max(sampler.counts) <= 1 and sampler.counts.count(1) > len(sampler.counts) // 2
        assert len(fleet.leaders()) == 1  # and the replicas agree once the kills are over
        assert failover < 30

        # Claimed work: every acknowledged undecided record scored, every acknowledged trace joined, once.
        assert len(work.undecided) >= load.per_phase and len(work.traces) >= load.per_phase
        _until_settled(postgres_server, url, work)
        per_trace = dict(postgres_server.psql(url, "SELECT trace_id, count(*) FROM rag_records GROUP BY trace_id"))
        assert {t: int(per_trace.get(t, 0)) for t in work.traces} == dict.fromkeys(work.traces, 1)
        assert all(int(per_trace.get(t, 0)) <= 1 for t in work.partial)
        roots = postgres_server.psql(url, "SELECT span_id, decision FROM rag_records WHERE service = 'lc-fleet'")
        assert set(work.traces.values()) <= {span for span, decision in roots if decision == "evaluated"}
        scored = postgres_server.psql(
            url, "SELECT r.span_id, count(s.metric) FROM rag_records r JOIN scores s ON s.span_id = r.span_id "
            "WHERE r.decision = 'evaluated' AND s.source = 'collector' GROUP BY r.span_id"
        )  # fmt: skip
        suite = {int(n) for _, n in scored}
        assert len(suite) == 1 and {span for span, _ in scored} >= set(work.undecided)  # one row per metric each
        logged = set(postgres_server.psql(url, "SELECT span_id, metric FROM scores WHERE service = 'logged'"))
        assert set(work.evaluations) <= logged

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


def test_three_replicas_lose_nothing_when_the_leader_and_another_are_killed(
    postgres_server: Any, tmp_path: Path, receiver: Receiver, offline_judge: None
) -> None:
    _run(postgres_server, tmp_path, receiver, SMALL)


@pytest.mark.e2e
@pytest.mark.parametrize("load", [FULL, FULL_THROUGH_ROTEL], ids=["haproxy", "rotel-haproxy"])
def test_the_full_fleet_load(
    postgres_server: Any, tmp_path: Path, receiver: Receiver, offline_judge: None, load: _Load
) -> None:
    _run(postgres_server, tmp_path, receiver, load)
