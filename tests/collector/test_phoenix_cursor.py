"""The Phoenix annotator keeps how far it delivered in the store's file (``phoenix_cursor``) and resumes there.

The same stand-in Phoenix, store and helpers as ``test_phoenix_annotations.py``: a real HTTP server, a real
SQLite file or PostgreSQL database written by the collector's store. A crash is the annotator's task cancelled:
what it stored is all the next annotator gets. Waits poll a real condition against a deadline; nothing sleeps to pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._phoenix import annotations_url
from ragtrace_collector._phoenix._cursor import DurableCursor
from ragtrace_collector._store import PHOENIX_CURSOR, SCORES, Store

from tests.collector import test_phoenix_annotations as annotations
from tests.collector.test_phoenix_annotations import FakePhoenix, make_annotator, score_row, store_scores, wait_until

phoenix = annotations.phoenix
store = annotations.store


def stored_cursor(store: Any, phoenix: FakePhoenix) -> int | None:
    """The rowid of the cursor the store holds for ``phoenix``'s annotation URL (on PostgreSQL the cursor's
    transaction goes with it, which these tests need not name)."""
    sql = f"SELECT after_row FROM {PHOENIX_CURSOR} WHERE url = ?"
    found = store.read(lambda conn: conn.execute(sql, (annotations_url(phoenix.url),)).fetchone())
    return None if found is None else int(found[0])


def newest_row(store: Any) -> int:
    """The rowid of the newest score the store holds."""
    return int(store.read(lambda conn: conn.execute(f"SELECT max(rowid) FROM {SCORES}").fetchone()[0]))


async def run_once(phoenix: FakePhoenix, store: Store) -> None:
    """Start and stop an annotator: the file then holds a cursor for ``phoenix`` at the table's end."""
    annotator = make_annotator(phoenix, store)
    annotator.start()
    await annotator.stop()


async def test_scores_stored_while_no_annotator_ran_are_sent_by_the_next_one(
    phoenix: FakePhoenix, store: Store
) -> None:
    await run_once(phoenix, store)
    assert stored_cursor(store, phoenix) == 0
    span_ids = store_scores(store, 250)  # the collector ran without --phoenix-url, or was down
    annotator = make_annotator(phoenix, store, queue_size=100, batch_size=40)
    annotator.start()
    store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.5)]))  # and one after the start
    await wait_until(lambda: annotator.sent == 251, "the missed scores and the new one")
    await annotator.stop()
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in [*span_ids, "00000000000000ff"]}
    assert set(phoenix.writes.values()) == {1}
    assert max(len(request.data) for request in phoenix.requests()) <= 40
    assert (annotator.dropped, stored_cursor(store, phoenix)) == (0, 251)


@pytest.mark.parametrize("how", ["stop", "crash"])
async def test_annotations_waiting_for_a_span_are_sent_after_a_restart(
    phoenix: FakePhoenix, store: Store, how: str
) -> None:
    held, late = "000000000000000a", "000000000000000b"
    phoenix.spans = {held}
    first = make_annotator(phoenix, store)
    first.start()
    store.write(Batch(scores=[score_row(held, "faithfulness", 0.9), score_row(late, "faithfulness", 0.1)]))
    await wait_until(lambda: first.sent == 1 and first.pending == 1, "the held span's annotation sent")
    # Row 1 delivered, row 2 waiting: the file may hold 1, never 2.
    await wait_until(lambda: stored_cursor(store, phoenix) == 1, "the cursor stored below the waiting annotation")
    if how == "crash":
        (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "ragtrace-phoenix-annotator"]
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await first.stop()  # only closes its connections: the task is gone, and the cursor did not move
    else:
        await first.stop(timeout=0.2)
        assert (first.pending, first.dropped_by) == (1, {})
    assert stored_cursor(store, phoenix) == 1
    with phoenix.lock:
        phoenix.spans.add(late)  # the app's export reaches Phoenix while no annotator runs
    second = make_annotator(phoenix, store)
    second.start()
    await wait_until(lambda: second.sent == 1, "the late span's annotation, after the restart")
    await second.stop()
    assert phoenix.writes == {(held, "faithfulness", "ragtrace"): 1, (late, "faithfulness", "ragtrace"): 1}
    assert (second.dropped, stored_cursor(store, phoenix)) == (0, 2)


async def test_a_first_start_skips_the_history_and_stores_where_it_started(phoenix: FakePhoenix, store: Store) -> None:
    store_scores(store, 3)  # before any annotator: history, not sent
    annotator = make_annotator(phoenix, store)
    annotator.start()
    await wait_until(lambda: stored_cursor(store, phoenix) == 3, "the cursor stored at the table's end")
    store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.5)]))
    await wait_until(lambda: annotator.sent == 1, "the score stored after the start")
    await annotator.stop()
    assert phoenix.names() == {("00000000000000ff", "faithfulness")}
    assert stored_cursor(store, phoenix) == 4


@pytest.mark.slow
async def test_each_phoenix_url_has_a_cursor_of_its_own(phoenix: FakePhoenix, store: Store) -> None:
    other = FakePhoenix()
    try:
        await run_once(phoenix, store)
        await run_once(other, store)
        span_ids = store_scores(store, 2)
        only = make_annotator(phoenix, store)  # the collector ran with the first URL only
        only.start()
        await wait_until(lambda: only.sent == 2, "the first URL's two annotations")
        await only.stop()
        store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.5)]))
        both = [make_annotator(phoenix, store), make_annotator(other, store)]
        for annotator in both:
            annotator.start()
        await wait_until(lambda: (both[0].sent, both[1].sent) == (1, 3), "each URL's missed annotations")
        for annotator in both:
            await annotator.stop()
        expected = {(span_id, "faithfulness") for span_id in [*span_ids, "00000000000000ff"]}
        assert phoenix.names() == other.names() == expected
        assert set(phoenix.writes.values()) == set(other.writes.values()) == {1}  # nothing sent twice
        assert stored_cursor(store, phoenix) == stored_cursor(store, other) == 3
    finally:
        other.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "c.db", checkpoints=False)
    yield opened
    opened.close()


async def test_a_locked_file_delays_the_cursor_not_the_delivery(
    phoenix: FakePhoenix, sqlite_store: Store, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = sqlite_store  # another writer holding the file: SQLite's kind of lock
    await run_once(phoenix, store)
    span_ids = store_scores(store, 3)
    tries: list[Any] = []
    write = DurableCursor._write

    def counted(cursor: DurableCursor, after_row: Any) -> None:
        tries.append(after_row)
        write(cursor, after_row)

    monkeypatch.setattr(DurableCursor, "_write", counted)
    caplog.set_level(logging.WARNING, logger="ragtrace_collector")
    locker = sqlite3.connect(store.path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another writer holds the file: every cursor write fails
    try:
        annotator = make_annotator(phoenix, store, cursor_timeout=0.01)
        annotator.start()
        await wait_until(lambda: annotator.sent == 3 and len(tries) >= 3, "delivery, and cursor writes failing")
        assert stored_cursor(store, phoenix) == 0
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    warnings = [r for r in caplog.records if "could not record how far it delivered" in r.getMessage()]
    assert len(warnings) == 1  # one warning for all the failed writes
    await wait_until(lambda: stored_cursor(store, phoenix) == 3, "the cursor written once the file is free")
    await annotator.stop()
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in span_ids}
    assert annotator.dropped == 0


async def test_a_cursor_past_the_newest_row_starts_over(phoenix: FakePhoenix, store: Store) -> None:
    annotator = make_annotator(phoenix, store)
    annotator.start()
    store_scores(store, 3)
    await wait_until(lambda: stored_cursor(store, phoenix) == 3, "three annotations delivered")
    store.prune(older_than_ns=2)  # retention deletes every score (time 1): rowids start again at 1
    await wait_until(lambda: stored_cursor(store, phoenix) == 0, "the cursor back at the emptied table's start")
    store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.5)]))  # rowid 1
    await wait_until(lambda: annotator.sent == 4, "the score stored after the prune")
    await annotator.stop()
    assert ("00000000000000ff", "faithfulness") in phoenix.names()


async def test_scores_stored_after_retention_emptied_the_table_are_sent_after_a_restart(
    phoenix: FakePhoenix, store: Store
) -> None:
    first = make_annotator(phoenix, store)
    first.start()
    store_scores(store, 3)
    await wait_until(lambda: first.sent == 3, "three annotations delivered")
    await first.stop()
    assert stored_cursor(store, phoenix) == 3
    store.prune(older_than_ns=2)  # while no annotator runs, retention deletes every score (time 1)...
    late = ["00000000000000f1", "00000000000000f2"]
    store.write(Batch(scores=[score_row(span_id, "faithfulness", 0.5) for span_id in late]))  # ...rowids 1 and 2
    second = make_annotator(phoenix, store)
    second.start()
    await wait_until(lambda: second.sent == 2, "both scores stored at rowids below the stored cursor")
    await second.stop()
    assert {(span_id, "faithfulness") for span_id in late} <= phoenix.names()
    assert stored_cursor(store, phoenix) == newest_row(store)


async def test_a_start_over_never_stores_a_cursor_above_rows_not_read(phoenix: FakePhoenix, store: Store) -> None:
    held, late = "000000000000000a", "000000000000000b"
    phoenix.spans = {held}  # the late span has not reached Phoenix: its annotation waits
    first = make_annotator(phoenix, store)
    first.start()
    store.write(Batch(scores=[score_row(held, "faithfulness", 0.9), score_row(late, "faithfulness", 0.1)]))
    await wait_until(lambda: first.sent == 1 and first.pending == 1, "row 2 waiting for its span")
    # The first start stored 0 (the empty table's end): wait for row 1's cursor, so that the 0 awaited below
    # can only be the start-over's.
    await wait_until(lambda: stored_cursor(store, phoenix) == 1, "the cursor below the held row 2")
    store.prune(older_than_ns=2)  # retention empties the table: rowids start again at 1, below row 2
    # The next read starts over: the file must not hold 1 (row 2, still held, minus one), which would skip the
    # new rows 1 and 2 should the collector crash before reading them.
    await wait_until(lambda: stored_cursor(store, phoenix) == 0, "the cursor stored at the start-over")
    (task,) = [t for t in asyncio.all_tasks() if t.get_name() == "ragtrace-phoenix-annotator"]
    task.cancel()  # a crash
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await first.stop()
    fresh = ["00000000000000f1", "00000000000000f2"]
    store.write(Batch(scores=[score_row(span_id, "faithfulness", 0.5) for span_id in fresh]))
    with phoenix.lock:
        phoenix.spans.update(fresh)
    second = make_annotator(phoenix, store)
    second.start()
    await wait_until(lambda: second.sent == 2, "both new rows after the restart")
    await second.stop()
    assert {(span_id, "faithfulness") for span_id in fresh} <= phoenix.names()
