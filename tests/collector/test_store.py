"""The store: schema, WAL, upserts that never duplicate, route filling, retention; on both engines (``open_store``)
where the behaviour is the engine's, on SQLite where it is the file's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._otlp import decode_protobuf
from ragtrace_collector._store import Store

from ragtrace import semconv
from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes
from tests.collector._stores import count, rows

OpenStore = Callable[[], Any]


def test_schema_indexes_and_wal(tmp_path: Path) -> None:
    store = Store(tmp_path / "c.db")
    try:
        assert set(store.db.table_names()) >= {"spans", "rag_records", "scores", "alerts"}
        assert store.db.journal_mode == "wal"
        assert store.db["scores"].pks == ["span_id", "metric"]  # type: ignore[union-attr]
        indexed = {tuple(ix.columns) for ix in store.db["scores"].indexes}  # type: ignore[union-attr]
        assert {("metric", "time_ns"), ("service", "metric", "time_ns"), ("route", "metric", "time_ns")} <= indexed
        assert ("trace_id",) in {tuple(ix.columns) for ix in store.db["spans"].indexes}  # type: ignore[union-attr]
    finally:
        store.close()
    # Re-opening an existing file keeps it as it is.
    Store(tmp_path / "c.db").close()


def test_retried_export_never_duplicates(open_store: OpenStore) -> None:
    factory = SpanFactory()
    factory.rag(scores={"faithfulness": 0.9, "hallucination": 0.1}, decision="evaluated")
    body = otlp_bytes(factory.all())
    store = open_store()
    for _ in range(3):
        store.write(decode_protobuf(body, 1))
    assert count(store, "spans") == 2
    assert count(store, "rag_records") == 1
    assert count(store, "scores") == 2
    store.close()
    reopened = open_store()  # a restart keeps the rows and the schema as they are
    assert (count(reopened, "spans"), count(reopened, "scores")) == (2, 2)


def test_carrier_scores_get_the_route_of_their_target(open_store: OpenStore) -> None:
    factory = SpanFactory(service="shop")
    rag = factory.rag(route="/ask", decision=semconv.DECISION_TIMEOUT)
    rag_body = otlp_bytes([rag])
    carrier_body = otlp_bytes([factory.carrier(rag, {"faithfulness": 0.4})])
    store = open_store()
    for order in ((rag_body, carrier_body), (carrier_body, rag_body)):
        store.prune(older_than_ns=2**62)  # empty, for the other order
        for body in order:
            store.write(decode_protobuf(body, 0))
        found = rows(store, "SELECT span_id, route, service, source, value FROM scores")
        assert found == [(hex_span_id(rag), "/ask", "shop", "carrier", 0.4)]


def test_a_retried_unscored_span_keeps_the_collector_scoring(open_store: OpenStore) -> None:
    factory = SpanFactory()
    factory.rag()
    body = otlp_bytes(factory.all())
    store = open_store()
    batch = decode_protobuf(body, 0)
    store.write(batch)
    scored = dict(batch.rag_records[0], decision="evaluated", judge="offline:x", calls=3)
    from ragtrace_collector._otlp import Batch

    store.write(Batch(rag_records=[scored]))
    store.write(decode_protobuf(body, 0))  # the app retries the same export
    record = store.rag_record(batch.rag_records[0]["span_id"])
    assert record is not None
    assert (record["decision"], record["judge"], record["calls"]) == ("evaluated", "offline:x", 3)


def test_prune_deletes_by_age(open_store: OpenStore) -> None:
    factory = SpanFactory()
    old = factory.rag(scores={"faithfulness": 1.0})
    new = factory.rag(scores={"faithfulness": 0.0})
    store = open_store()
    store.write(decode_protobuf(otlp_bytes(factory.all()), 0))
    assert old.end_time is not None and new.end_time is not None
    deleted = store.prune(older_than_ns=new.end_time)
    assert deleted["rag_records"] == 1 and deleted["scores"] == 1
    assert rows(store, "SELECT span_id FROM rag_records") == [(hex_span_id(new),)]


def test_prune_deletes_in_rounds_each_its_own_transaction(open_store: OpenStore) -> None:
    from ragtrace_collector._store import retention

    factory = SpanFactory()
    for i in range(7):
        factory.rag(query=f"old {i}", scores={"faithfulness": 1.0})
    newest = factory.rag(query="new", scores={"faithfulness": 0.5})
    store = open_store()
    store.write(decode_protobuf(otlp_bytes(factory.all()), 0))
    assert newest.end_time is not None
    rounds: list[dict[str, int]] = []

    def transaction(round_: Any) -> dict[str, int]:  # the store's own transaction, what each round deleted kept
        deleted: dict[str, int] = store.change(round_)
        rounds.append(deleted)
        return deleted

    cut = newest.end_time
    old = {table: rows(store, f"SELECT count(*) FROM {table} WHERE {column} < ?", (cut,))[0][0]
           for table, column in retention.AGED}  # fmt: skip
    assert (old["rag_records"], old["scores"]) == (7, 7) and old["spans"] >= 7
    deleted = retention.prune(transaction, cut, batch_rows=3)
    assert deleted == old
    assert max(n for r in rounds for n in r.values()) == 3  # no round deleted more than a batch of a table
    # A table stays in the rounds while its batch came back full: 7 old rows go 3, 3, 1; no row at all, one look.
    assert len(rounds) == max(n // 3 + 1 for n in old.values())
    assert [sorted(r) for r in rounds[1:]] == [sorted(t for t, n in old.items() if n >= 3 * (i + 1))
                                               for i in range(len(rounds) - 1)]  # fmt: skip
    assert rows(store, "SELECT query FROM rag_records") == [("new",)]
    assert store.prune(older_than_ns=newest.end_time, batch_rows=3)["spans"] == 0  # nothing left to delete
    with pytest.raises(ValueError, match="batch_rows must be at least 1"):
        store.prune(older_than_ns=newest.end_time, batch_rows=0)


def test_empty_batch_is_a_no_op(open_store: OpenStore) -> None:
    from ragtrace_collector._otlp import Batch

    store = open_store()
    store.write(Batch())
    assert count(store, "spans") == 0


def test_serve_with_retention_prunes_old_rows(store_target: str, open_store: OpenStore) -> None:
    import json
    import time

    from ragtrace_collector._otlp import decode_json

    from tests.collector._spans import start_collector

    old_ns = 1_600_000_000_000_000_000  # September 2020
    spans = [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "old", "endTimeUnixNano": str(old_ns)}]
    open_store().write(decode_json(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode(), 0))
    assert count(store_target, "spans") == 1
    running = start_collector(store_target, retention_days=30)
    try:
        deadline = time.monotonic() + 30  # the first prune runs at start-up, on a worker thread
        while count(store_target, "spans") and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()
    assert count(store_target, "spans") == 0


def test_a_nul_character_in_a_sent_string_is_stored_not_refused(open_store: OpenStore) -> None:
    """SQLite stores NUL; PostgreSQL's text cannot hold it: there it is written as U+FFFD rather than refusing the
    whole export on every retry."""
    factory = SpanFactory(service="sh\x00p")
    rag = factory.rag(query="who\x00?", scores={"faithfulness": 0.5})
    store = open_store()
    store.write(decode_protobuf(otlp_bytes(factory.all()), 0))
    (service, query), *_ = rows(store, "SELECT service, query FROM rag_records WHERE span_id = ?", (hex_span_id(rag),))
    sqlite = store.path is not None
    assert (service, query) == (("sh\x00p", "who\x00?") if sqlite else ("sh\ufffdp", "who\ufffd?"))


@pytest.mark.parametrize("url", ["postgresql://u@127.0.0.1:5432/db", "postgresql:/u@127.0.0.1:5432/db"])
def test_a_url_given_as_a_path_is_refused_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    # A URL that went through Path() loses a slash; either form must not become a directory and a SQLite file.
    monkeypatch.chdir(tmp_path)
    for target in (url, Path(url)):
        with pytest.raises(ValueError, match="is a URL, not a SQLite file"):
            Store(target)
    assert list(tmp_path.iterdir()) == []
