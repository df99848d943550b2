"""On PostgreSQL, readers of new rows never pass over a row committed after a later one (``_store/arrival.py``).

Several replicas write one database at once, and a row's rowid is taken when it is inserted, not when its
transaction commits. Here one connection holds a batch open (a replica mid-request) while another replica's
batch, inserted after it, commits first: the Phoenix annotator's tail and the pages' live updates must then wait
for the open batch rather than move past it. Real PostgreSQL; SQLite has one writer at a time, so the case does
not arise there (its readers are covered by the engine-parametrized suites).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import connect, open_store
from ragtrace_collector._store.arrival import START, Arrival
from ragtrace_collector._store.ingest import upsert
from ragtrace_collector._store.phoenix import ScoreTail
from ragtrace_collector._store.schema import RAG_COLUMNS
from ragtrace_collector._store.triage import last_row, newer_records
from ragtrace_collector._triage import RecordFilter

from tests.collector import test_phoenix_annotations as annotations
from tests.collector._postgres import PostgresServer
from tests.collector._stores import whole_row
from tests.collector.test_phoenix_annotations import FakePhoenix, make_annotator, score_row, store_scores, wait_until

phoenix = annotations.phoenix  # the stand-in Phoenix, a real HTTP server


@pytest.fixture
def target(postgres_server: PostgresServer) -> str:
    return str(postgres_server.database())


@pytest.fixture
def store(target: str) -> Iterator[Any]:
    opened = open_store(target)
    yield opened
    opened.close()


def record(span_id: str) -> dict[str, Any]:
    row = {"span_id": span_id, "trace_id": "ab" * 16, "service": "docs", "time_ns": 1, "decision": "evaluated"}
    return whole_row(row, RAG_COLUMNS)


def test_the_score_tail_waits_for_a_batch_committed_late(target: str, store: Any) -> None:
    tail = ScoreTail(target)
    early = connect(target)
    try:
        store.write(Batch(scores=[score_row("0000000000000001", "faithfulness", 0.1)]))
        start = tail.end()
        assert start != START
        with early:  # a replica's batch: it inserts first ...
            upsert(early, Batch(scores=[score_row("0000000000000002", "faithfulness", 0.2)]))
            # ... and another replica's batch, inserted after it, commits first
            store.write(Batch(scores=[score_row("0000000000000003", "faithfulness", 0.3)]))
            found, cursor, drained = tail.read(start, 100)
            # Reading row 3 now would move the cursor past row 2 for good: nothing is read yet.
            assert (found, cursor, drained, tail.end()) == ([], start, True, start)
        found, cursor, drained = tail.read(cursor, 100)
        assert [row.span_id for row in found] == ["0000000000000002", "0000000000000003"]
        assert found[0].row < found[1].row == cursor and drained
        assert tail.read(cursor, 100)[0] == []
    finally:
        early.close()
        tail.close()


def test_the_live_updates_wait_for_a_batch_committed_late(target: str, store: Any) -> None:
    early = connect(target)
    reader = connect(target)
    try:
        store.write(Batch(rag_records=[record("0000000000000001")]))
        page = last_row(reader)  # what a page read now carries
        with early:
            upsert(early, Batch(rag_records=[record("0000000000000002")]))
            store.write(Batch(rag_records=[record("0000000000000003")]))
            rows, cursor, more = newer_records(reader, RecordFilter(), page)
            assert (rows, cursor, more) == ([], page, False)
        rows, cursor, more = newer_records(reader, RecordFilter(), Arrival.parse(page.text()))
        assert [row["span_id"] for row in rows] == ["0000000000000002", "0000000000000003"] and not more
        assert newer_records(reader, RecordFilter(), cursor)[0] == []
        assert cursor == last_row(reader)
    finally:
        early.close()
        reader.close()


async def test_one_replica_posts_to_phoenix_and_another_takes_over(phoenix: FakePhoenix, store: Any) -> None:
    replicas = [make_annotator(phoenix, store), make_annotator(phoenix, store)]
    for annotator in replicas:
        annotator.start()
    first = store_scores(store, 3)
    await wait_until(lambda: sum(a.sent for a in replicas) == 3, "three annotations from the fleet")
    leader, other = replicas if replicas[0].sent else replicas[::-1]
    assert (leader.sent, other.sent) == (3, 0)  # one replica posts; the other reads nothing
    await leader.stop()  # the lock goes with it
    store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.5)]))
    await wait_until(lambda: other.sent >= 1, "the other replica taking over")
    await other.stop()
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in [*first, "00000000000000ff"]}
    assert phoenix.writes[("00000000000000ff", "faithfulness", "ragtrace")] == 1
