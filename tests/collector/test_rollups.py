"""The rollups (``_store/rollups.py``) stay equal to the sums of the rows, whatever writes them, on both engines."""

from __future__ import annotations

import itertools
import math
import random
import threading
from collections import defaultdict
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._store import rollups
from ragtrace_collector._store.schema import (
    QUALITY_HOURS,
    RAG_COLUMNS,
    RAG_RECORDS,
    RECORD_HOURS,
    RECORD_QUALITY,
    SCORE_COLUMNS,
    SCORE_HOURS,
    SCORES,
)

from ragtrace.metrics import LOWER_IS_BETTER
from tests.collector._stores import rows, whole_row

HOUR = rollups.HOUR_NS
METRICS = ("faithfulness", "hallucination", "answer_relevancy")


def record(span_id: str, time_ns: int | None, rng: random.Random) -> dict[str, Any]:
    scored = rng.random() < 0.7
    return whole_row(
        {
            "span_id": span_id,
            "trace_id": "ab" * 16,
            "service": rng.choice(["shop", "docs", None]),
            "time_ns": time_ns,
            "decision": rng.choice(["evaluated", "not_sampled", None]) if scored else None,
            "judge": rng.choice(["offline", "openai"]) if scored else None,
            "calls": rng.randint(1, 4) if scored else None,
            "prompt_tokens": rng.randint(10, 900) if scored else None,
            "completion_tokens": rng.choice([None, rng.randint(1, 90)]) if scored else None,
            "seconds": rng.choice([None, rng.random()]) if scored else None,
        },
        RAG_COLUMNS,
    )


def score(span_id: str, metric: str, time_ns: int | None, rng: random.Random, **columns: Any) -> dict[str, Any]:
    value = rng.choice([None, round(rng.random(), 3), round(rng.random(), 3), round(rng.random(), 3)])
    row = {"span_id": span_id, "metric": metric, "value": value, "trace_id": "ab" * 16, "time_ns": time_ns}
    value = columns.pop("value", value)
    row["value"] = value
    row.update({"service": rng.choice(["shop", "docs", None]), "source": "app", **columns})
    return whole_row(row, SCORE_COLUMNS)


def expected(store: Any) -> dict[str, Any]:
    """The rollups computed from the rows, in Python."""
    score_hours: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0.0])
    by_span: dict[str, list[tuple[str, float, Any, Any]]] = defaultdict(list)
    for span_id, metric, value, service, time_ns in rows(
        store, f"SELECT span_id, metric, value, service, time_ns FROM {SCORES} WHERE value IS NOT NULL"
    ):
        key = (-1 if time_ns is None else time_ns // HOUR, service or "", metric)
        score_hours[key][0] += 1
        score_hours[key][1] += value
        by_span[span_id].append((metric, value, service, time_ns))
    record_hours: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0.0] * 7)
    record_times = {}
    for span_id, time_ns, service, decision, judge, calls, prompt, completion, seconds in rows(
        store,
        f"SELECT span_id, time_ns, service, decision, judge, calls, prompt_tokens, completion_tokens, seconds "
        f"FROM {RAG_RECORDS}",
    ):
        record_times[span_id] = time_ns
        sums = record_hours[-1 if time_ns is None else time_ns // HOUR, service or "", decision or "", judge or ""]
        sums[0] += 1
        if calls is not None:
            sums[1] += 1
            sums[2] += calls
            sums[3] += prompt or 0
            sums[4] += completion or 0
            sums[5] += seconds or 0.0
            sums[6] += seconds is not None
    quality = {}
    for span_id, found in by_span.items():
        good = [1.0 - v if m in LOWER_IS_BETTER else v for m, v, _, _ in found]
        services = [s for _, _, s, _ in found if s is not None]
        times = [t for _, _, _, t in found if t is not None]
        quality[span_id] = (
            max(services, default=None),
            max(times, default=None),
            len(good),
            math.fsum(good) / len(good),
            min(good),
            record_times.get(span_id),
        )
    quality_hours: dict[tuple[Any, ...], list[float]] = defaultdict(lambda: [0, 0.0])
    for service, time_ns, _n, overall, _worst, recorded in quality.values():
        hours = [-1 if t is None else t // HOUR for t in (time_ns, recorded)]
        quality_hours[(*hours, service or "")][0] += 1
        quality_hours[(*hours, service or "")][1] += overall
    return {
        "score_hours": {k: tuple(v) for k, v in score_hours.items()},
        "record_hours": {k: tuple(v) for k, v in record_hours.items()},
        "quality": quality,
        "quality_hours": {k: tuple(v) for k, v in quality_hours.items()},
    }


def stored(store: Any) -> dict[str, Any]:
    """The rollups as the store holds them, the slots added up, the rows at zero left out."""
    score_hours = {
        tuple(key): (n, total)
        for *key, n, total in rows(
            store, f"SELECT hour, service, metric, SUM(n), SUM(total) FROM {SCORE_HOURS} GROUP BY hour, service, metric"
        )
        if n
    }
    record_hours = {
        tuple(row[:4]): tuple(row[4:])
        for row in rows(
            store,
            f"SELECT hour, service, decision, judge, SUM(records), SUM(costed), SUM(calls), SUM(prompt_tokens), "
            f"SUM(completion_tokens), SUM(seconds), SUM(timed) FROM {RECORD_HOURS} "
            "GROUP BY hour, service, decision, judge",
        )
        if row[4]
    }
    quality = {
        span_id: tuple(rest)
        for span_id, *rest in rows(
            store, f"SELECT span_id, service, time_ns, n, overall, worst, recorded_ns FROM {RECORD_QUALITY}"
        )
    }
    quality_hours = {
        tuple(key): (n, total)
        for *key, n, total in rows(
            store,
            f"SELECT hour, recorded_hour, service, SUM(n), SUM(total) FROM {QUALITY_HOURS} "
            "GROUP BY hour, recorded_hour, service",
        )
        if n
    }
    return {
        "score_hours": score_hours,
        "record_hours": record_hours,
        "quality": quality,
        "quality_hours": quality_hours,
    }


def assert_in_step(store: Any) -> None:
    want, got = expected(store), stored(store)
    assert set(got["score_hours"]) == set(want["score_hours"])
    for key, (n, total) in want["score_hours"].items():
        assert got["score_hours"][key][0] == n, key
        assert got["score_hours"][key][1] == pytest.approx(total, abs=1e-9), key
    assert set(got["record_hours"]) == set(want["record_hours"])
    for key, sums in want["record_hours"].items():
        assert got["record_hours"][key] == pytest.approx(sums, abs=1e-9), key
    assert set(got["quality"]) == set(want["quality"])
    for span_id, (service, time_ns, n, overall, worst, recorded) in want["quality"].items():
        assert got["quality"][span_id] == (service, time_ns, n, pytest.approx(overall), pytest.approx(worst), recorded)
    assert set(got["quality_hours"]) == set(want["quality_hours"])
    for key, (n, total) in want["quality_hours"].items():
        assert got["quality_hours"][key] == (n, pytest.approx(total, abs=1e-9)), key


def test_the_rollups_follow_every_kind_of_write(open_store: Any) -> None:
    """Inserts, retried and changed upserts, log-record scores, scores before their records, records updated by
    server-side scoring, and retention: after each, the rollups equal the rows' sums."""
    rng = random.Random(7)
    store = open_store()
    base = 1_800_000_000 * 10**9
    times = [base + rng.randrange(0, 30 * HOUR) for _ in range(60)] + [None]
    spans = [format(i + 1, "016x") for i in range(60)]
    # Scores first for some spans (a carrier's late scores come before or without their record).
    store.write(Batch(scores=[score(s, m, rng.choice(times), rng) for s in spans[:20] for m in METRICS]))
    assert_in_step(store)
    store.write(
        Batch(
            rag_records=[record(s, rng.choice(times), rng) for s in spans],
            scores=[score(s, m, rng.choice(times), rng) for s in spans[10:50] for m in rng.sample(METRICS, 2)],
        )
    )
    assert_in_step(store)
    # The same batch again (a retried export), then changed values and a record's decision and cost changing.
    again = [score(s, m, rng.choice(times), rng) for s in spans[30:60] for m in METRICS]
    store.write(Batch(scores=again))
    store.write(Batch(scores=again))
    store.write(Batch(rag_records=[record(s, rng.choice(times), rng) for s in spans[:25]]))
    store.write(Batch(log_scores=[score(s, "faithfulness", rng.choice(times), rng, source="log") for s in spans[::3]]))
    assert_in_step(store)
    # A claim taken (an update of columns the rollups do not read) changes nothing.
    store.change(lambda conn: conn.execute(f"UPDATE {RAG_RECORDS} SET claimed_by = 'r1', claimed_until = 5"))
    assert_in_step(store)
    # Retention: half the hours go, then all of them.
    store.prune(older_than_ns=base + 15 * HOUR, batch_rows=7)
    assert_in_step(store)
    store.prune(older_than_ns=base + 31 * HOUR)
    assert_in_step(store)
    for table in (SCORE_HOURS, QUALITY_HOURS):
        leftover = rows(store, f"SELECT COUNT(*) FROM {table} WHERE n = 0")
        assert leftover == [(0,)], f"retention leaves no emptied hour of {table} behind"


def test_a_store_from_before_the_rollups_gets_them_filled(store_target: str) -> None:
    """Migrating a store written before step 9 fills the rollups from its rows."""
    from ragtrace_collector._store import migrations, open_store, writing

    rng = random.Random(3)
    store = open_store(store_target)
    spans = [format(i + 1, "016x") for i in range(30)]
    store.write(
        Batch(
            rag_records=[record(s, 1_800_000_000 * 10**9 + i * HOUR // 3, rng) for i, s in enumerate(spans)],
            scores=[
                score(s, m, 1_800_000_000 * 10**9 + i * HOUR // 3, rng) for i, s in enumerate(spans) for m in METRICS
            ],
        )
    )
    want = expected(store)

    def forget(conn: Any) -> None:  # the store as step 8 left it: no rollups, version 8
        for table in (QUALITY_HOURS, SCORE_HOURS, RECORD_HOURS, RECORD_QUALITY):
            conn.execute(f"DELETE FROM {table}")

    store.change(forget)
    store.close()
    with writing(store_target) as conn:
        if "postgresql" in store_target:
            conn.execute("UPDATE ragtrace_schema SET version = 8")
        else:
            conn.execute("PRAGMA user_version = 8")
        conn.commit()
        assert migrations.migrate(conn) == 8
    reopened = open_store(store_target)
    try:
        assert stored(reopened)["score_hours"].keys() == want["score_hours"].keys()
        assert_in_step(reopened)
    finally:
        reopened.close()


def test_a_store_from_before_quality_hours_gets_them_filled(store_target: str) -> None:
    """Migrating a store of version 10 (the rollups of step 9, no ``quality_hours``) adds the table and fills it
    from ``record_quality``; the overview then reads it."""
    from ragtrace_collector._store import migrations, open_store, writing

    rng = random.Random(4)
    store = open_store(store_target)
    spans = [format(i + 1, "016x") for i in range(30)]
    at = [1_800_000_000 * 10**9 + i * HOUR // 3 for i in range(30)]
    store.write(
        Batch(
            rag_records=[record(s, at[i], rng) for i, s in enumerate(spans)],
            # Scored up to two hours after the record: a record's two hours differ.
            scores=[score(s, m, at[i] + rng.randrange(2 * HOUR), rng) for i, s in enumerate(spans) for m in METRICS],
        )
    )
    store.close()

    def as_step_10_left_it(conn: Any) -> None:
        conn.execute(f"DROP TABLE {QUALITY_HOURS}")
        if "postgresql" in store_target:
            conn.execute("DROP FUNCTION ragtrace_rollup_quality CASCADE")  # its triggers with it
            conn.execute("UPDATE ragtrace_schema SET version = 10")
        else:
            for event in ("ai", "ad", "au"):
                conn.execute(f"DROP TRIGGER rollup_quality_{event}")
            conn.execute("PRAGMA user_version = 10")
        conn.commit()

    with writing(store_target) as conn:
        as_step_10_left_it(conn)
        assert migrations.migrate(conn) == 10
    reopened = open_store(store_target)
    try:
        assert stored(reopened)["quality_hours"], "filled from the records already scored"
        assert_in_step(reopened)
        # And kept from then on: a record scored again moves its hours.
        reopened.write(Batch(scores=[score(spans[0], "faithfulness", at[0] + 5 * HOUR, rng, value=0.1)]))
        assert_in_step(reopened)
    finally:
        reopened.close()


def test_the_triggers_know_every_metric_lower_is_better(store_target: str) -> None:
    """The stores' triggers hold the lower-is-better metrics written out (``LOWER_AT_STEP_9``): a metric added to
    ``LOWER_IS_BETTER`` fails here until a migration step installs them again. And an installed store's record rows
    read them so: a record of one hallucination of 0.2 is an overall 0.8."""
    from ragtrace_collector._store import open_store

    assert set(rollups.LOWER_AT_STEP_9) == set(LOWER_IS_BETTER), (
        "a metric's direction changed: add a migration step that installs the rollups' triggers again and refills "
        "record_quality, then update LOWER_AT_STEP_9"
    )
    store = open_store(store_target)
    try:
        store.write(
            Batch(scores=[score("00000000000000ab", m, 5, random.Random(0), value=0.2) for m in LOWER_IS_BETTER])
        )
        ((overall,),) = rows(store, f"SELECT overall FROM {RECORD_QUALITY}")
        assert overall == pytest.approx(0.8)
        store.prune(older_than_ns=10)  # SQLite's delete trigger recomputes too: nothing left
        assert rows(store, f"SELECT COUNT(*) FROM {RECORD_QUALITY}") == [(0,)]
    finally:
        store.close()


def test_a_copied_store_adds_up_its_own_rollups(store_target: str, tmp_path: Any) -> None:
    """``copy`` leaves the rollups out and the target adds them up from the rows it took (SQLite into either)."""
    from ragtrace_collector._store import Store, open_store
    from ragtrace_collector._store.transfer import copy_store

    rng = random.Random(5)
    source = Store(tmp_path / "source.db")
    spans = [format(i + 1, "016x") for i in range(40)]
    base = 1_800_000_000 * 10**9
    source.write(
        Batch(
            rag_records=[record(s, base + rng.randrange(0, 9 * HOUR), rng) for s in spans],
            scores=[score(s, m, base + rng.randrange(0, 9 * HOUR), rng) for s in spans for m in METRICS],
        )
    )
    want = stored(source)
    source.close()
    copy_store(tmp_path / "source.db", store_target)
    copy_store(tmp_path / "source.db", store_target)  # a copy run again adds nothing
    target = open_store(store_target)
    try:
        assert_in_step(target)
        got = stored(target)["score_hours"]
        assert got.keys() == want["score_hours"].keys()
        assert all(got[k] == (n, pytest.approx(total)) for k, (n, total) in want["score_hours"].items())
    finally:
        target.close()


def test_the_overview_reads_from_the_rollups_what_the_rows_say(open_store: Any) -> None:
    """``summary``, ``problems`` and ``series`` read through the rollups (whole hours) and the rows (the part-hours
    at a period's ends) give what reading every row gives, over periods of every shape."""
    from ragtrace_collector._store import report
    from ragtrace_collector._store.dialect import table_names

    rng = random.Random(11)
    store = open_store()
    base = 1_800_000_000 * 10**9
    spans = [format(i + 1, "016x") for i in range(300)]
    records, scores = [], []
    for span_id in spans:
        at = base + rng.randrange(0, 60 * HOUR)
        row = record(span_id, at, rng)
        records.append(row)
        # A record's scores share its service, as a span's evaluations do; most its time too, some come later
        # (scored on the server, a reviewer's rescoring), a few earlier (a carrier's scores before its record).
        later = rng.choice([0, 0, 0, rng.randrange(-HOUR, 3 * HOUR)])
        metrics = rng.sample(METRICS, rng.randint(1, 3))
        scores += [score(span_id, m, at + later, rng, service=row["service"]) for m in metrics]
    store.write(Batch(rag_records=records[:250], scores=scores))  # 50 scored records never arrive
    target = store.target
    periods = [
        (None, None),
        (base + 7 * HOUR, None),
        (None, base + 20 * HOUR - 1),
        (base + 5 * HOUR, base + 9 * HOUR - 1),
    ]
    periods += [(base + 3 * HOUR + 17, base + 3 * HOUR + 1_000_000)]  # inside one hour
    for _ in range(6):
        since = base + rng.randrange(-HOUR, 61 * HOUR)
        periods.append((since, since + rng.randrange(1, 40 * HOUR)))
    for since, until in periods:
        for service in (None, "shop"):
            with report.open_source(target) as conn:
                tables = table_names(conn)
                rolled = report._summary(conn, tables, rollups.Period(since, until), service)
                raw = report._raw_summary(conn, tables, since, until, service)
                assert (rolled.records, rolled.scored, rolled.scored_elsewhere) == (
                    raw.records,
                    raw.scored,
                    raw.scored_elsewhere,
                ), (since, until, service)
                assert dict(rolled.decisions) == dict(raw.decisions)
                assert [(m.metric, m.count) for m in rolled.metrics] == [(m.metric, m.count) for m in raw.metrics]
                assert [m.mean for m in rolled.metrics] == pytest.approx([m.mean for m in raw.metrics])
                for got, want in (
                    (rolled.overall_mean, raw.overall_mean),
                    (rolled.overall_min, raw.overall_min),
                    (rolled.overall_max, raw.overall_max),
                ):
                    assert (got is None and want is None) or got == pytest.approx(want)
                assert (rolled.first_ns, rolled.last_ns) == (raw.first_ns, raw.last_ns)
                for threshold in (0.3, 0.6, 0.9):
                    assert report._ranked_by_quality(conn, threshold, 20, since, until, service) == (
                        report._ranked_by_scores(conn, threshold, 20, since, until, service)
                    )
                drawn = report.series(conn, tables, since, until, service=service)
                for metric in drawn:
                    want_count = [m.count for m in raw.metrics if m.metric == metric]
                    assert sum(count for _, _, count in drawn[metric]) == want_count[0]
    with report.open_source(target) as conn:
        long = report.series(conn, table_names(conn), None, None)
    times = [t for t, _, _ in long["faithfulness"]]
    assert len(times) > 24 and all((b - a) % HOUR == 0 for a, b in itertools.pairwise(times))


def concurrently(url: str, first_batch: Batch, second_batch: Batch) -> None:
    """Write ``first_batch`` in a transaction left open, ``second_batch`` in another (a second replica) meanwhile,
    and check the second waits for the first: it cannot finish before the first commits."""
    from ragtrace_collector._store import ingest, writing

    with writing(url) as first, writing(url) as second:
        first.begin()  # a transaction each, as a receiver's write is
        ingest.upsert(first, first_batch)
        done = threading.Event()

        def write_second() -> None:
            second.begin()
            ingest.upsert(second, second_batch)
            second.commit()
            done.set()

        thread = threading.Thread(target=write_second)
        thread.start()
        assert not done.wait(0.5), "the second write waits for the first's row of the record"
        first.commit()
        thread.join(timeout=30)
        assert done.is_set()


@pytest.mark.parametrize("first", ["record", "scores"])
def test_two_replicas_writing_one_record_at_once_both_count(postgres_server: Any, first: str) -> None:
    """PostgreSQL: a record and its scores, and two scores of one record, written at once by two replicas (a
    carrier's late scores, server-side scoring): the rollup of the record holds all of them, whichever commits
    first. (Without the rows held, the record's time was lost: the scores' transaction read it as missing.)"""
    from ragtrace_collector._store import open_store

    url = postgres_server.database()
    open_store(url).close()  # migrated
    span = "00000000000000aa"
    rng = random.Random(1)
    the_record = Batch(rag_records=[record(span, 7 * HOUR, rng)])
    # Another hour for each score: the two share no row of score_hours, where the second would wait anyway.
    one = Batch(scores=[score(span, "faithfulness", 5, rng, value=0.9)])
    other = Batch(scores=[score(span, "answer_relevancy", 3 * HOUR, rng, value=0.2)])
    concurrently(url, the_record, one) if first == "record" else concurrently(url, one, the_record)
    concurrently(url, one if first == "record" else other, other if first == "record" else one)
    ((n, overall, recorded),) = rows(
        url, f"SELECT n, overall, recorded_ns FROM {RECORD_QUALITY} WHERE span_id = ?", (span,)
    )
    assert (n, overall, recorded) == (2, pytest.approx(0.55), 7 * HOUR)
    assert_in_step(url)


def test_sqlite_reads_a_periods_overall_range_by_its_time(tmp_path: Any) -> None:
    """The overview's lowest and highest overall score: over all time a seek of ``record_quality``'s overall index;
    for a period its rows by the time index. (An ordered walk of the overall index for a period passed every
    older record whose score was higher than the period's highest: 800,000 of them for the last day of a
    1,000,000-record store.)"""
    from ragtrace_collector._store import Store, report

    store = Store(tmp_path / "plan.db")
    rng = random.Random(2)
    base = 1_800_000_000 * 10**9
    spans = [format(i + 1, "016x") for i in range(40)]
    store.write(Batch(scores=[score(s, "faithfulness", base + i * HOUR, rng, value=0.5) for i, s in enumerate(spans)]))
    target = store.target
    store.close()
    plans: dict[str, list[str]] = {}
    with report.open_source(target) as conn:

        class Explaining:
            def __init__(self, seen: list[str]) -> None:
                self.seen = seen

            def execute(self, sql: str, args: Any = ()) -> Any:
                self.seen += [str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall()]
                return conn.execute(sql, args)

        for name, period in (("all time", rollups.Period()), ("a day", rollups.Period(base + 39 * HOUR, None))):
            plans[name] = []
            assert report._overall_range(Explaining(plans[name]), period, None) == (0.5, 0.5)  # type: ignore[arg-type]
    reads = {name: [p for p in found if RECORD_QUALITY in p] for name, found in plans.items()}
    assert reads["all time"] and all("idx_record_quality_overall" in p for p in reads["all time"]), reads
    assert reads["a day"] and all("(time_ns>?)" in p for p in reads["a day"]), reads
