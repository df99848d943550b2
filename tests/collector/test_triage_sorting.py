"""The records list in every order (``sort=``) and the pages' shared scope (``range=``, ``service=``), on both
store engines: paged by keyset to the end, each order lists every record it holds exactly once and in order, also
when records arrive between two pages; the scope's links carry it from page to page; the queries a sorted page runs
walk an index (SQLite's plan names it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS
from ragtrace_collector._store.triage import list_records
from ragtrace_collector._triage import FilterError, parse_filter
from ragtrace_collector._triage._layout import NAV
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.testclient import TestClient

from tests.collector._stores import whole_row
from tests.collector._triage_seed import N_RECORDS, T0, seed_triage, span_id

ORDERS = ["-time", "time", "service", "hallucination", "-hallucination", "faithfulness"]


@pytest.fixture
def store(open_store: Callable[[], Any]) -> Any:
    opened = open_store()
    seed_triage(opened)
    return opened


@pytest.fixture
def client(store: Any) -> Iterator[TestClient]:
    with TestClient(Starlette(routes=page_routes(store))) as c:
        yield c


def _walk(store: Any, query: str, *, between: Callable[[int], None] | None = None) -> list[dict[str, Any]]:
    """Every record of the list ``query`` gives, page after page by its own next links."""
    seen: list[dict[str, Any]] = []
    f = parse_filter(QueryParams(query))
    for n in range(1000):
        page = store.read(lambda conn, f=f: list_records(conn, f))
        seen += page.records
        if page.next is None:
            return seen
        if between is not None:
            between(n)
        f = parse_filter(QueryParams(page.next.query(paging=True)))  # through the URL, as a reader's click goes
    raise AssertionError("the pages never ended")


def _key(order: str, record: dict[str, Any]) -> tuple[Any, ...]:
    metric = order.lstrip("-")
    if metric == "time":
        return (record["time_ns"], record["span_id"])
    if metric == "service":
        return (record["service"], -record["time_ns"], record["span_id"])
    return (record["scores"][metric]["value"], record["span_id"])


@pytest.mark.parametrize("order", ORDERS)
def test_every_order_pages_through_every_record_once_and_in_order(store: Any, order: str) -> None:
    records = _walk(store, f"sort={order}&limit=7")
    ids = [r["span_id"] for r in records]
    assert len(ids) == len(set(ids)) == N_RECORDS  # every record has both scores: none is left out
    keys = [_key(order, r) for r in records]
    assert keys == sorted(keys, reverse=order.startswith("-"))


def test_a_sorted_list_keeps_its_filters_and_leaves_out_records_without_the_score(store: Any) -> None:
    shop = _walk(store, "sort=-hallucination&service=docs&limit=5")
    assert {r["service"] for r in shop} == {"docs"} and len(shop) == N_RECORDS // 5
    assert _walk(store, "sort=context_recall") == []  # no record has that score


def test_records_arriving_between_pages_neither_repeat_nor_skip_a_row(store: Any) -> None:
    def arrive(n: int) -> None:
        # A newer record, and one as old as the oldest, each with the scores a sorted page reads.
        for i, time_ns in ((10_000 + n, T0 + 10**6 * 60 * 10**9), (20_000 + n, T0 - 10**9)):
            sid = span_id(i)
            record = {"span_id": sid, "trace_id": sid * 2, "service": "shop", "time_ns": time_ns}
            scores = [
                {"span_id": sid, "metric": m, "value": 0.5, "service": "shop", "time_ns": time_ns}
                for m in ("hallucination", "faithfulness")
            ]
            store.write(
                Batch(
                    rag_records=[whole_row(record, RAG_COLUMNS)],
                    scores=[whole_row(s, SCORE_COLUMNS) for s in scores],
                )
            )

    for order in ("time", "-hallucination", "service"):
        records = _walk(store, f"sort={order}&limit=9", between=arrive)
        ids = [r["span_id"] for r in records]
        assert len(ids) == len(set(ids)), order
        assert {span_id(i) for i in range(N_RECORDS)} <= set(ids), order  # none of the first ones skipped


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("sort=<script>", "sort="),
        ("sort=-service", "sort="),
        ("sort=time&cursor=notbase64!", "paging cursor"),
        ("sort=time&cursor=WyJ4Il0", "paging cursor"),  # ["x"]: not this order's key
        ("cursor=WzEsImEiXQ", "give its sort= too"),
        ("range=2w", "range="),
    ],
)
def test_a_sort_cursor_or_range_that_does_not_parse_is_named(query: str, says: str) -> None:
    with pytest.raises(FilterError, match=re.escape(says)):
        parse_filter(QueryParams(query))


def test_the_scope_travels_in_every_link_of_the_navigation(client: TestClient) -> None:
    for path, _ in NAV:
        page = client.get(path, params={"range": "30d", "service": "docs"})
        assert page.status_code == 200, (path, page.text[:300])
        links = re.findall(r'<nav aria-label="pages">(.*?)</nav>', page.text)[0]
        hrefs = re.findall(r'href="([^"]+)"', links)
        assert len(hrefs) == len(NAV)
        assert all("range=30d" in h and "service=docs" in h for h in hrefs), (path, hrefs)
        assert 'aria-current="page"' in links
        # The picker shows the scope it was given.
        assert '<option value="30d" selected>' in page.text and '<option value="docs" selected>' in page.text


def test_range_is_the_period_before_now_and_since_until_fix_one(store: Any, client: TestClient) -> None:
    old = {"span_id": "0ld" * 5 + "0", "trace_id": "0" * 32, "service": "shop", "time_ns": 10**18}  # in 2001
    store.write(Batch(rag_records=[whole_row(old, RAG_COLUMNS)]))
    everything = client.get("/records", params={"limit": "500"}).text
    assert old["span_id"] in everything
    recent = client.get("/records", params={"limit": "500", "range": "30d"}).text
    assert old["span_id"] not in recent and span_id(0) in recent
    fixed = client.get("/records", params={"since": str(T0), "until": str(T0 + 10 * 60 * 10**9)}).text
    assert len(re.findall(r'<tr class="row"', fixed)) == 11
    assert "No review yet." in client.get("/agreement", params={"range": "24h"}).text
    assert "No record matches" in client.get("/records", params={"until": "2001-01-01T00:00Z"}).text


def test_the_sort_links_on_the_list_lead_to_each_order(client: TestClient) -> None:
    page = client.get("/records", params={"service": "shop"}).text
    orders = re.findall(r'<p class="muted" id="orders">(.*?)</p>', page)[0]
    hrefs = [h.replace("&amp;", "&") for h in re.findall(r'href="([^"]+)"', orders)]
    assert {dict(QueryParams(h.split("?", 1)[1])).get("sort", "-time") for h in hrefs} >= set(ORDERS)
    assert all("service=shop" in h for h in hrefs)
    oldest = client.get(next(h for h in hrefs if "sort=time" in h)).text
    assert re.findall(r'data-span="([0-9a-f]+)"', oldest)[0] == span_id(0)
    assert 'data-live="0"' in oldest  # a list in another order is not updated live


def test_sqlite_walks_an_index_for_each_order(tmp_path: Any) -> None:
    """The plans of a sorted page on SQLite: no scan of the records or scores tables, no sort of all rows."""
    from ragtrace_collector._store import Store

    store = Store(tmp_path / "plan.db")
    seed_triage(store)
    captured: list[str] = []

    def plans(conn: Any) -> None:
        for order in ORDERS:
            f = parse_filter(QueryParams(f"sort={order}"))

            def explain(sql: str, args: Any = (), real: Any = conn.execute) -> Any:
                if sql.lstrip().upper().startswith("SELECT"):
                    captured.extend(str(row[-1]) for row in real(f"EXPLAIN QUERY PLAN {sql}", args).fetchall())
                return real(sql, args)

            list_records(_Spy(conn, explain), f)

    store.read(plans)
    store.close()
    scans = [p for p in captured if p.startswith("SCAN") and "USING" not in p and "CONSTANT" not in p]
    assert scans == [], scans
    assert not any("USE TEMP B-TREE FOR ORDER BY" in p for p in captured), captured


class _Spy:
    """A connection whose ``execute`` is ``explain`` (it plans each statement, then runs it)."""

    def __init__(self, conn: Any, explain: Callable[..., Any]) -> None:
        from ragtrace_collector._store.dialect import SQLITE

        self._conn = conn
        self.execute = explain
        self.dialect = SQLITE

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_sqlite_reads_an_alerts_records_by_its_period_not_by_their_values(tmp_path: Any) -> None:
    """The alert page's records (past the alert's cutoff, in its period): SQLite's planner, without statistics,
    walked the value index over all time (0.5-0.7 s at 1,000,000 records); the plan must bound the scores by time."""
    from ragtrace_collector._store import Store
    from ragtrace_collector._store.schema import ALERTS
    from ragtrace_collector._store.triage import alert_detail

    store = Store(tmp_path / "plan.db")
    seed_triage(store)
    captured: list[str] = []

    def plans(conn: Any) -> None:
        def explain(sql: str, args: Any = (), real: Any = conn.execute) -> Any:
            if "JOIN" in sql and sql.lstrip().upper().startswith("SELECT"):
                captured.extend(str(row[-1]) for row in real(f"EXPLAIN QUERY PLAN {sql}", args).fetchall())
            return real(sql, args)

        for (alert_id,) in conn.execute(f"SELECT id FROM {ALERTS} WHERE state = 'ALERT'").fetchall():
            assert alert_detail(_Spy(conn, explain), alert_id) is not None

    store.read(plans)
    store.close()
    on_scores = [p for p in captured if p.startswith("SEARCH s ")]
    assert on_scores, captured
    assert all("time_ns>? AND time_ns<?" in p for p in on_scores), on_scores
