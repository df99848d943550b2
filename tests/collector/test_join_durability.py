"""A trace waiting to be joined survives a restart, and its scores reach a downstream backend on a carrier span.

Real collector processes' parts on a real SQLite file: the first collector acknowledges half of an OpenInference
LangChain trace and stops; the second, on the same file, gets the rest, joins the whole trace once it settles
and scores it once. The settler is driven with ``settle_once`` at chosen times (the window is an hour).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._join import Settler
from ragtrace_collector._otlp import Batch, decode_protobuf
from ragtrace_collector._store import Store, StoreError, open_store

from ragtrace import semconv
from ragtrace.metrics import build_suite
from tests.collector._join import HOUR, LIMITS, settle
from tests.collector._spans import otlp_bytes, start_collector
from tests.collector._stores import rows
from tests.collector._traced_app import langchain_app, send, shuffled_parts, span_id
from tests.ragtrace.test_foreign_langchain import ANSWER, QUESTION, RANKED, lcel_chain

pytestmark = [
    pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method is deprecated"),
    pytest.mark.usefixtures("offline_judge"),
]

SUITE = build_suite()


@pytest.mark.slow
@pytest.mark.parametrize("decode_processes", [0, 1])
def test_a_restart_mid_trace_loses_nothing_acknowledged_and_scores_once(
    store_target: str, decode_processes: int
) -> None:
    db = store_target
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    (root,) = [s for s in spans if s.parent is None]
    first, second = shuffled_parts(spans, 2, seed=5)
    options: dict[str, Any] = {"score": True, "join_limits": LIMITS, "decode_processes": decode_processes}
    before = start_collector(db, **options)
    try:
        send(before, first)  # acknowledged: from here on the collector owes this trace a join
    finally:
        before.stop()
    trace_id = format(root.context.trace_id, "032x")
    assert rows(db, "SELECT trace_id FROM join_pending") == [(trace_id,)]
    after = start_collector(db, **options)
    try:
        send(after, second)
        assert settle(after, time.time_ns() + 2 * HOUR) == [span_id(root)]
        assert settle(after, time.time_ns() + 4 * HOUR) == []
    finally:
        after.stop()
    ((query, answer, chunks, decision),) = rows(db, "SELECT query, answer, chunks, decision FROM rag_records")
    assert (query, answer, decision) == (QUESTION, ANSWER, semconv.DECISION_EVALUATED)
    assert [c["content"] for c in json.loads(chunks)] == RANKED
    assert rows(db, "SELECT count(*), count(DISTINCT metric) FROM scores") == [(len(SUITE.names),) * 2]
    assert rows(db, "SELECT count(*) FROM join_pending") == [(0,)]


def test_joining_resumes_after_a_restart_with_no_new_span(store_target: str) -> None:
    db = store_target
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    before = start_collector(db, score=True, join_limits=LIMITS)
    try:
        for part in shuffled_parts(spans, 3, seed=1):
            send(before, part)
    finally:
        before.stop()  # stopped before the trace settled
    after = start_collector(db, score=True, join_limits=LIMITS)
    try:
        assert len(settle(after, time.time_ns() + 2 * HOUR)) == 1
    finally:
        after.stop()
    assert rows(db, "SELECT decision FROM rag_records") == [(semconv.DECISION_EVALUATED,)]


def test_scores_go_downstream_on_an_evaluator_carrier_linked_to_the_root(tmp_path: Path) -> None:
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    (root,) = [s for s in spans if s.parent is None]
    downstream = start_collector(tmp_path / "down.db", join=False)
    try:
        upstream = start_collector(
            tmp_path / "up.db",
            score=True,
            join_limits=LIMITS,
            forward=f"http://127.0.0.1:{downstream.http_port}",
        )
        try:
            for part in shuffled_parts(spans, 3, seed=9):
                send(upstream, part)
            assert settle(upstream, time.time_ns() + 2 * HOUR) == [span_id(root)]
        finally:
            upstream.stop()  # drains the forward queue
        assert upstream.forwarder is not None and upstream.forwarder.dropped == 0
    finally:
        downstream.stop()
    down = tmp_path / "down.db"
    assert rows(down, "SELECT count(*) FROM spans") == [(len(spans) + 1,)]
    carrier = f"SELECT attributes, links FROM spans WHERE name = '{semconv.CARRIER_SPAN_NAME}'"
    ((attributes, links),) = rows(down, carrier)
    assert json.loads(attributes)[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_EVALUATOR
    assert [link["span_id"] for link in json.loads(links)] == [span_id(root)]
    scores = rows(down, "SELECT span_id, metric, source FROM scores")
    assert sorted(m for _, m, _ in scores) == sorted(SUITE.names)
    assert {(s, src) for s, _, src in scores} == {(span_id(root), "carrier")}


def test_a_call_joined_but_not_yet_scored_when_the_collector_stopped_is_scored_after_the_restart(
    store_target: str,
) -> None:
    db = store_target
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    # No scorer in the first run: its joined record is stored undecided, as after a stop between the two.
    before = start_collector(db, join_limits=LIMITS)
    try:
        send(before, spans)
        assert before.settler is not None and len(before.settler.settle_once(time.time_ns() + 2 * HOUR)) == 1
    finally:
        before.stop()
    assert rows(db, "SELECT decision FROM rag_records") == [(None,)]
    after = start_collector(db, score=True, join_limits=LIMITS)
    try:
        assert after.settler is not None and after.scorer is not None
        after.settler.resume()  # the settler's thread does this as it starts; twice is harmless
        assert after.scorer.wait_idle(120)
        assert after.scorer.scored == 1
    finally:
        after.stop()
    assert rows(db, "SELECT decision FROM rag_records") == [(semconv.DECISION_EVALUATED,)]
    assert rows(db, "SELECT count(*) FROM scores") == [(len(SUITE.names),)]


def test_a_file_written_before_records_had_a_reason_gets_the_column_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE rag_records DROP COLUMN reason")
        conn.execute("PRAGMA user_version = 0")  # as every file from before schema versions
        conn.execute(
            "INSERT INTO rag_records (span_id, query, decision) VALUES ('00000000000000aa', 'q?', 'evaluated')"
        )
    Store(db).close()
    assert rows(db, "SELECT span_id, query, decision, reason FROM rag_records") == [
        ("00000000000000aa", "q?", "evaluated", None)
    ]


def test_a_join_that_could_not_be_written_stays_waiting_and_is_tried_again(
    store_target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with langchain_app() as app:
        lcel_chain().invoke(QUESTION)
        spans = app.spans()
    store = open_store(store_target)
    try:
        store.write(decode_protobuf(otlp_bytes(spans), time.time_ns()))
        settler = Settler(store, LIMITS)
        write = store.write

        def full_disk_once(batch: Batch) -> None:
            monkeypatch.setattr(store, "write", write)
            raise StoreError("database or disk is full")

        monkeypatch.setattr(store, "write", full_disk_once)
        assert settler.settle_once(time.time_ns() + 2 * HOUR) == []
        assert settler.waiting() == 1
        assert len(settler.settle_once(time.time_ns() + 2 * HOUR)) == 1
        assert settler.waiting() == 0
    finally:
        store.close()
