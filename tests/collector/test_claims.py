"""Claimed work: replicas sharing a store take each undecided record to score, and each settled trace to join,
once; what a dead replica had taken, or stored and never took, is taken by another. On both engines."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ragtrace_collector._otlp import Batch, decode_protobuf
from ragtrace_collector._scoring import ServerScorer
from ragtrace_collector._store import claims

from ragtrace.metrics import build_suite
from ragtrace.testing import FakeJudge
from tests.collector._spans import SpanFactory, otlp_bytes
from tests.collector._stores import rows

NS = 1_000_000_000


def _undecided(count: int, received_ns: int) -> Batch:
    factory = SpanFactory(service="shop")
    for i in range(count):
        factory.rag(query=f"Question {i}?", answer=f"Answer {i}.", chunks=("Some context.",))
    return decode_protobuf(otlp_bytes([s for s in factory.all() if s.name == "answer"]), received_ns)


def _scorer(store: Any, judge: FakeJudge, **options: Any) -> ServerScorer:
    scorer = ServerScorer(store, suite=build_suite(["context_relevance"]), judge=judge, sample_rate=1.0, **options)
    scorer.start()
    return scorer


def _until_decided(store: Any, count: int) -> None:
    deadline = time.monotonic() + 60
    while rows(store, "SELECT count(*) FROM rag_records WHERE decision IS NOT NULL")[0][0] < count:
        assert time.monotonic() < deadline, "the records were not all scored"
        time.sleep(0.05)


def test_two_replicas_handed_the_same_records_score_each_once(open_store: Callable[[], Any]) -> None:
    batch = _undecided(40, time.time_ns())
    first, second = open_store(), open_store()  # two replicas' own connections to one store
    first.write(batch)
    judge = FakeJudge(rate_chunks=[0.8])
    a, b = _scorer(first, judge), _scorer(second, judge)
    try:
        a.submit(batch)  # an exporter's retry reached the other replica too
        b.submit(batch)
        assert a.wait_idle(60) and b.wait_idle(60)
    finally:
        a.stop()
        b.stop()
    assert a.scored + b.scored == 40
    assert rows(first, "SELECT decision, count(*) FROM rag_records GROUP BY decision") == [("evaluated", 40)]
    assert rows(first, "SELECT count(DISTINCT span_id) FROM scores") == [(40,)]


def test_a_dead_replicas_records_are_scored_by_another(open_store: Callable[[], Any]) -> None:
    store = open_store()
    now = time.time_ns()
    taken_by_the_dead = _undecided(10, now)
    never_taken = _undecided(5, now - 1800 * NS)  # stored half an hour ago by a replica that died before claiming them
    store.write(taken_by_the_dead)
    store.write(never_taken)
    store.change(
        lambda conn: conn.execute(
            "UPDATE rag_records SET claimed_by = 'dead:1:x', claimed_until = ? WHERE span_id IN "
            f"({', '.join('?' for _ in taken_by_the_dead.rag_records)})",
            (now - NS, *(r["span_id"] for r in taken_by_the_dead.rag_records)),
        )
    )
    scorer = _scorer(store, FakeJudge(rate_chunks=[0.8]), sweep_seconds=0.1, unclaimed_grace_seconds=60)
    try:
        _until_decided(store, 15)
    finally:
        scorer.stop()
    assert scorer.scored == 15
    assert rows(store, "SELECT count(*) FROM rag_records WHERE claimed_by = ?", (scorer.owner,)) == [(15,)]


def test_a_live_claim_is_left_alone(open_store: Callable[[], Any]) -> None:
    store = open_store()
    batch = _undecided(3, time.time_ns() - 3600 * NS)
    store.write(batch)
    ids = [r["span_id"] for r in batch.rag_records]
    assert store.change(claims.claim_records, ids, "alive:1:x", time.time_ns()) == set(ids)
    assert store.change(claims.claim_records, ids, "other:2:y", time.time_ns()) == set()
    orphans = store.change(
        lambda conn: claims.claim_orphans(
            conn, "other:2:y", time.time_ns(), unclaimed_before_ns=time.time_ns(), unclaimed_after_ns=0, limit=9
        )
    )
    assert orphans == []


def test_replicas_claiming_due_traces_at_once_take_each_trace_once(open_store: Callable[[], Any]) -> None:
    seed = open_store()
    seed.change(
        lambda conn: conn.executemany(
            "INSERT INTO join_pending (trace_id, first_ns, last_ns, spans, bytes) VALUES (?, 1, 1, 1, 1)",
            [(f"{i:032x}",) for i in range(60)],
        )
    )
    stores = [open_store() for _ in range(3)]
    start = threading.Barrier(len(stores))
    taken: list[list[tuple[str, int]]] = [[] for _ in stores]

    def take(i: int) -> None:
        start.wait()
        while found := stores[i].change(claims.claim_due_traces, 10, 10, 7, f"replica-{i}", time.time_ns()):
            taken[i].extend(found)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [trace for found in taken for trace, _ in found]
    assert sorted(every) == [f"{i:032x}" for i in range(60)]  # all of them, none twice


def test_the_sweep_leaves_records_older_than_its_look_back(open_store: Callable[[], Any]) -> None:
    """A store once served without scoring is not scored wholesale when scoring starts: the sweep takes records
    never claimed only within the last hour."""
    store = open_store()
    store.write(_undecided(4, time.time_ns() - 2 * 3600 * NS))  # two hours ago
    recent = _undecided(2, time.time_ns() - 600 * NS)  # ten minutes ago
    store.write(recent)
    scorer = _scorer(store, FakeJudge(rate_chunks=[0.8]), sweep_seconds=0.1, unclaimed_grace_seconds=60)
    try:
        _until_decided(store, 2)
    finally:
        scorer.stop()
    decided = {r[0] for r in rows(store, "SELECT span_id FROM rag_records WHERE decision IS NOT NULL")}
    assert decided == {r["span_id"] for r in recent.rag_records}


def test_a_claim_taken_over_after_its_lease_is_not_renewed_by_its_old_owner(open_store: Callable[[], Any]) -> None:
    """A record that waited for a judge slot past its lease, and was taken by another replica, is left to it."""
    store = open_store()
    batch = _undecided(1, time.time_ns())
    store.write(batch)
    (span_id,) = [r["span_id"] for r in batch.rag_records]
    long_ago = time.time_ns() - 3 * int(claims.LEASE_SECONDS * NS)
    assert store.change(claims.claim_records, [span_id], "slow:1:x", long_ago) == {span_id}
    assert store.change(claims.claim_records, [span_id], "other:2:y", time.time_ns()) == {span_id}  # lease ran out
    assert not store.change(claims.renew_record, span_id, "slow:1:x", time.time_ns())
    assert store.change(claims.renew_record, span_id, "other:2:y", time.time_ns())
