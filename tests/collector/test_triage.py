"""The triage pages over a real SQLite store, through the real Starlette app: the records list and its
URL filters and paging, a record with its claims highlighted and linked to their chunks, an alert with
the records that made it fire, cost and coverage, and the live-update API."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes
from ragtrace_collector._store import is_postgres, migrations
from ragtrace_collector._store.schema import RAG_COLUMNS, RECORD_METADATA, SPAN_COLUMNS
from ragtrace_collector._triage import FilterError, RecordFilter, ScoreBound, parse_filter
from ragtrace_collector._triage._record_html import locate_claims
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.testclient import TestClient

from tests.collector._stores import count, whole_row
from tests.collector._triage_seed import (
    BAD_ANSWER,
    MINUTE,
    N_RECORDS,
    SPIKE_FROM,
    T0,
    claims_of,
    insert_alerts,
    seed_triage,
    span_id,
)


@pytest.fixture
def client(open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The pages over the seeded store, on either engine (``open_store``'s parameter)."""
    monkeypatch.setenv("RAGTRACE_COLLECTOR_TRACE_URL", "http://127.0.0.1:16686/trace/{trace_id}")
    store = open_store()
    seed_triage(store)
    with TestClient(Starlette(routes=page_routes(store))) as test_client:
        yield test_client


def _rows(html: str) -> list[str]:
    return re.findall(r'data-span="([0-9a-f]{16})"', html)


def test_the_list_is_newest_first_and_pages_by_keyset(client: TestClient) -> None:
    first = client.get("/records?limit=50")
    assert first.status_code == 200
    ids = _rows(first.text)
    assert ids == [span_id(i) for i in range(N_RECORDS - 1, N_RECORDS - 51, -1)]
    (older,) = re.findall(r'rel="next" href="([^"]+)"', first.text)
    second = client.get(older.replace("&amp;", "&"))
    assert _rows(second.text)[0] == span_id(N_RECORDS - 51)
    assert data_live(second.text) == "0" and data_live(first.text) == "1"  # history does not update itself


def data_live(html: str) -> str:
    (value,) = re.findall(r'data-live="(\d)"', html)
    return value


def test_filters_narrow_the_list_and_stay_in_the_links(client: TestClient) -> None:
    reply = client.get("/records", params={"service": "shop", "score": "hallucination>0.5", "meta": "user:alice"})
    ids = _rows(reply.text)
    expected = [
        span_id(i) for i in range(N_RECORDS - 1, -1, -1) if i % 5 != 4 and i >= SPIKE_FROM and i % 3 != 0 and i % 2 == 1
    ]
    assert ids == expected[:50] and ids
    # Each record's link carries the filters back; the form shows them.
    assert "/records/" + ids[0] + "?service=shop&amp;score=hallucination%3E0.5&amp;meta=user%3Aalice" in reply.text
    assert 'value="hallucination&gt;0.5"' in reply.text
    assert _rows(client.get("/records", params={"q": "Question 7:"}).text) == [span_id(7)]
    assert _rows(client.get("/records", params={"decision": "not_sampled"}).text) == []
    window = client.get("/records", params={"since": str(T0 + 10 * MINUTE), "until": str(T0 + 12 * MINUTE)})
    assert _rows(window.text) == [span_id(12), span_id(11), span_id(10)]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("score=hallucination~0.5", "write it as metric<value"),
        ("decision=maybe", "use one of"),
        ("since=yesterday", "ISO 8601"),
        ("limit=0", "whole number"),
        ("meta=alice", "key:value"),
        ("before=12", "paging cursor"),
    ],
)
def test_a_filter_that_does_not_parse_is_a_400_that_says_why(client: TestClient, query: str, says: str) -> None:
    reply = client.get(f"/records?{query}")
    assert reply.status_code == 400 and says in html.unescape(reply.text)


def test_parse_filter_round_trips_through_its_query() -> None:
    f = RecordFilter(since_ns=5, service="shop", scores=(ScoreBound("faithfulness", "<=", 0.3),), meta=(("u", "x"),))
    assert parse_filter(QueryParams(f.query())) == f
    assert parse_filter(QueryParams(f.page_after({"time_ns": 7, "span_id": "ab"}).query(paging=True))).before == (
        7,
        "ab",
    )
    assert parse_filter({"since": "2027-01-15T08:00:00Z"}).since_ns == 1_800_000_000 * 1_000_000_000
    with pytest.raises(FilterError):
        parse_filter({"score": "faithfulness"})


def test_a_record_shows_each_claim_by_verdict_linked_to_its_chunk(client: TestClient) -> None:
    bad = next(i for i in range(SPIKE_FROM, N_RECORDS) if i % 5 != 4 and i % 3 != 0)
    page = client.get(f"/records/{span_id(bad)}?service=shop").text
    # The answer, with its three claims highlighted in place, by verdict, each linked to what decided it.
    assert '<a class="claim v-supported" id="answer-claim-0" href="#chunk-0"' in page
    assert '<a class="claim v-contradicted" id="answer-claim-1" href="#chunk-0"' in page
    assert '<a class="claim v-unsupported" id="answer-claim-2" href="#claim-2"' in page
    assert 'title="contradicted by chunk 1 (support 0.04)"' in page
    assert '<li id="chunk-0"><b>chunk 1</b> <span class="muted">id doc-eiffel, retrieval score 0.91' in page
    # Every score with its explanation and judge; the trace id links to the configured backend.
    assert "1 of 3 claims supported" in page and "offline:minilm-int8" in page
    assert f'<a href="http://127.0.0.1:16686/trace/{span_id(bad) * 2}">' in page
    assert '<a href="/records?service=shop">← records</a>' in page
    assert client.get("/records/ffffffffffffffff").status_code == 404


def test_claims_are_located_in_the_answer_without_overlap() -> None:
    claims = claims_of(True)
    spans = locate_claims(BAD_ANSWER, claims)
    assert [BAD_ANSWER[s:e] for s, e, _ in spans] == [c["claim"].rstrip(".") + "." for c in claims]
    # A bare answer joined to its question, a claim not in the answer, and one without text (not captured).
    located = locate_claims("Paris.", [{"claim": "Where is it? Paris"}, {"claim": "Lyon"}, {"verdict": "supported"}])
    assert located == [(0, 5, 0)]


def test_an_alert_shows_its_statistic_and_the_records_that_made_it_fire(client: TestClient) -> None:
    redirect = client.get("/alert?rule=hallucination-spike&service=shop", follow_redirects=False)
    assert redirect.status_code == 303
    page = client.get(redirect.headers["location"]).text
    assert "Alert: hallucination-spike (hallucination, service=shop)" in page
    assert '<svg class="chart" role="img" aria-label="mean hallucination of service=shop over time"' in page
    assert "(the group was last OK)" in page
    # The chart marks when the alert fired (minute 110), has a value axis, and says each point's value on hover.
    chart = page[page.index('<svg class="chart"') : page.index("</svg>")]
    assert re.search(r'<line x1="[\d.]+" x2="[\d.]+" y1="10" y2="154" stroke="#8a5a00" stroke-dasharray="3 3">'
                     r"<title>fired 2027-01-15 09:50:00 UTC</title></line>", chart)  # fmt: skip
    assert len(re.findall(r'text-anchor="end" font-size="11" fill="#444">[\d.]+</text>', chart)) >= 3
    assert re.search(r"<circle [^>]*><title>2027-01-15 \d\d:\d\d:\d\d UTC: 0\.\d+</title></circle>", chart)
    fired = [i for i in range(SPIKE_FROM, 111) if i % 5 != 4 and i % 3 != 0]
    # Since the group was last OK (minute 90) up to the alert (minute 110), the bad shop records.
    assert sorted(_rows(page)) == sorted(span_id(i) for i in fired)
    assert "/records?since=" in page and "score=hallucination%3E0.5" in page
    assert client.get("/alerts/999").status_code == 404
    assert client.get("/alert?rule=nope").status_code == 404


def test_cost_and_coverage(client: TestClient) -> None:
    page = client.get("/costs").text
    # Spend a day, then judge calls, tokens and seconds by hour: four charts.
    assert "Judge calls per scored record, by hour" in page and page.count('<svg class="chart"') == 4
    # The offline judge bills nothing: its records are counted, at $0.
    assert (
        "<tr><td>docs</td><td>judge</td><td>offline:minilm-int8</td><td>28</td><td>0</td><td>0</td><td>$0.000000</td></tr>"
        in page
    )
    assert (
        "<tr><td>shop</td><td>judge</td><td>offline:minilm-int8</td><td>112</td><td>0</td><td>0</td><td>$0.000000</td></tr>"
        in page
    )
    assert "<tr><td>docs</td><td>28</td><td>28</td></tr>" in page
    assert "<tr><td>shop</td><td>112</td><td>112</td></tr>" in page
    # A narrowed page says how in words, not in its query's nanoseconds.
    narrowed = client.get("/costs", params={"since": "1800000000000000000", "service": "shop", "route": "/ask"}).text
    assert "filtered: 2027-01-15 08:00:00 UTC to now, service shop; route=/ask" in narrowed
    assert "filtered: since=" not in narrowed


def test_live_updates_return_what_arrived_after_the_page_in_arrival_order(
    client: TestClient, open_store: Callable[[], Any]
) -> None:
    page = client.get("/records").text
    (last,) = re.findall(r'data-last-row="([\d.]+)"', page)  # the rowid; on PostgreSQL "transaction.rowid"
    assert client.get("/api/records", params={"after_row": last}).json() == {
        "records": [], "rows_html": [], "last_row": last, "more": False
    }  # fmt: skip
    # Three records arrive: one with an older time than every record shown (a late exporter) among them.
    late = [
        {"span_id": f"late{i:012x}", "trace_id": "t" * 32, "service": "docs" if i == 1 else "shop", "route": "/ask",
         "time_ns": T0 + (N_RECORDS + i) * MINUTE if i else T0 - MINUTE, "query": f"late {i}", "answer": "a",
         "chunks": "[]", "decision": "evaluated"}
        for i in range(3)
    ]  # fmt: skip
    open_store().write(Batch(rag_records=[whole_row(r, RAG_COLUMNS) for r in late]))
    data = client.get("/api/records", params={"after_row": last, "limit": 2}).json()
    assert [r["span_id"] for r in data["records"]] == [late[0]["span_id"], late[1]["span_id"]]
    assert data["more"] is True and len(data["rows_html"]) == 2  # a burst comes a page at a time
    rest = client.get("/api/records", params={"after_row": data["last_row"], "limit": 2}).json()
    assert [r["span_id"] for r in rest["records"]] == [late[2]["span_id"]] and rest["more"] is False
    filtered = client.get("/api/records", params={"after_row": last, "service": "docs"}).json()
    assert [r["span_id"] for r in filtered["records"]] == [late[1]["span_id"]]
    assert filtered["last_row"] == rest["last_row"]  # past the filter's misses too
    assert client.get("/api/records", params={"after_row": rest["last_row"]}).json()["records"] == []
    for bad in ("x", "1.", ".1", "1.2.3", "-1", "9" * 19):
        assert client.get("/api/records", params={"after_row": bad}).status_code == 400, bad


def test_the_overview_links_into_the_triage_pages(client: TestClient) -> None:
    page = client.get("/").text
    assert "open the record and its claims" in page


def test_a_threshold_alert_by_route_lists_its_routes_records_beyond_its_threshold(
    client: TestClient, open_store: Callable[[], Any]
) -> None:
    insert_alerts(open_store(), [
        {"time_ns": T0 + 100 * MINUTE, "rule": "faithfulness-low", "kind": "threshold", "metric": "faithfulness",
         "service": None, "route": "/ask", "state": "OK", "previous_state": "NO_DATA", "value": 0.9,
         "threshold": 0.7, "message": "mean 0.90", "sinks": "[]"},
        {"time_ns": T0 + 108 * MINUTE, "rule": "faithfulness-low", "kind": "threshold", "metric": "faithfulness",
         "service": None, "route": "/ask", "state": "ALERT", "previous_state": "OK", "value": 0.55,
         "threshold": 0.7, "message": "mean 0.55 below 0.7", "sinks": "[]"},
    ])  # fmt: skip
    page = client.get("/alert?rule=faithfulness-low&route=%2Fask", follow_redirects=True).text
    assert "Alert: faithfulness-low (faithfulness, route=/ask)" in page
    assert "faithfulness below 0.7 records in route=/ask" in page
    # Both services' records of the route, below the rule's own threshold (not the default 0.5).
    fired = [i for i in range(100, 109) if i % 5 != 4 and i % 3 != 0]
    assert sorted(_rows(page)) == sorted(span_id(i) for i in fired)
    assert "threshold dashed" in page


def _record_with(open_store: Callable[[], Any], sid: str, attributes: dict[str, Any]) -> None:
    """One more record, its span carrying ``attributes``, through the store's own writes."""
    span = {"span_id": sid, "trace_id": sid * 2, "name": "answer", "service": "shop", "start_ns": T0, "end_ns": T0,
            "attributes": json.dumps(attributes, ensure_ascii=False)}  # fmt: skip
    record = {"span_id": sid, "trace_id": sid * 2, "service": "shop", "route": "/ask", "time_ns": T0, "query": "q"}
    open_store().write(Batch(spans=[whole_row(span, SPAN_COLUMNS)], rag_records=[whole_row(record, RAG_COLUMNS)]))


def test_metadata_filters_match_numbers_and_non_ascii_keys(client: TestClient, open_store: Callable[[], Any]) -> None:
    sid = "00000000000000ee"
    _record_with(open_store, sid, {"metadata": json.dumps({"rank": 3, "usuário": "ana"}, ensure_ascii=False)})
    assert _rows(client.get("/records", params={"meta": "rank:3"}).text) == [sid]
    assert _rows(client.get("/records", params={"meta": "usuário:ana"}).text) == [sid]
    assert _rows(client.get("/records", params={"meta": "rank:4"}).text) == []


def test_metadata_is_the_metadata_object_and_the_user_and_session_of_the_span(
    client: TestClient, open_store: Callable[[], Any]
) -> None:
    sid = "00000000000000ef"
    metadata = {"tier": "gold", "nested": {"a": 1}, "tags": ["x"], "none": None}
    attributes = {"metadata": json.dumps(metadata), "user.id": "u-42", "session.id": 7, "http.route": "/ask"}
    _record_with(open_store, sid, attributes)
    for found in ("tier:gold", "user.id:u-42", "session.id:7"):
        assert _rows(client.get("/records", params={"meta": found}).text) == [sid], found
    # Objects, arrays and nulls are not values to filter on; other span attributes are not metadata.
    for missed in ('nested:{"a":1}', 'tags:["x"]', "none:None", "http.route:/ask"):
        assert _rows(client.get("/records", params={"meta": missed}).text) == [], missed


def test_a_metadata_attribute_that_is_not_json_is_no_metadata(
    client: TestClient, open_store: Callable[[], Any]
) -> None:
    _record_with(open_store, "00000000000000ed", {"metadata": "tier=gold"})
    assert _rows(client.get("/records", params={"meta": "tier:gold"}).text) == []
    assert _rows(client.get("/records", params={"meta": "user:alice"}).text)  # the seeded records still match


def test_a_store_from_before_the_metadata_rows_gets_them_for_its_records_on_upgrade(
    client: TestClient, store_target: str, open_store: Callable[[], Any]
) -> None:
    # The seeded store as the collector before schema step 6 left it: no record_metadata table.
    before = migrations.STEPS.index(migrations._record_metadata)
    version = (
        f"UPDATE ragtrace_schema SET version = {before}"
        if is_postgres(store_target)
        else f"PRAGMA user_version = {before}"
    )
    open_store().change(lambda conn: [conn.execute(f"DROP TABLE {RECORD_METADATA}"), conn.execute(version)])
    store = open_store()  # a restart migrates
    assert store.read(migrations.version) == migrations.CURRENT
    assert count(store, RECORD_METADATA) == N_RECORDS  # each seeded record's user
    alice = [span_id(i) for i in range(N_RECORDS - 1, -1, -1) if i % 2][:50]
    assert _rows(client.get("/records", params={"meta": "user:alice"}).text) == alice


def test_retention_takes_the_metadata_rows_with_their_records(
    client: TestClient, open_store: Callable[[], Any]
) -> None:
    store = open_store()
    assert count(store, RECORD_METADATA) == N_RECORDS
    deleted = store.prune(older_than_ns=T0 + 10 * MINUTE)
    assert deleted[RECORD_METADATA] == deleted["rag_records"] == 10
    assert count(store, RECORD_METADATA) == N_RECORDS - 10


def test_cost_and_coverage_default_to_the_last_week_of_the_store(client: TestClient) -> None:
    page = client.get("/costs").text
    assert "by default the 7 days before the newest record" in page
    everything = client.get("/costs", params={"since": "0"}).text
    assert "<tr><td>shop</td><td>112</td><td>112</td></tr>" in everything


def test_the_default_week_of_costs_starts_on_an_hour_and_leaves_older_records_out(
    open_store: Callable[[], Any],
) -> None:
    """Without ``since`` the costs read the 7 days before the newest record from the start of that hour: whole
    hours only (the rollup's), and a record older than that is not counted."""
    from ragtrace_collector._store import reading
    from ragtrace_collector._store.triage import HOUR_NS, read_costs

    store = open_store()
    newest = 1_800_000_000 * 10**9 + 1234 * 10**9  # 20 minutes and 34 s into its hour
    week_start = (newest // HOUR_NS - 7 * 24) * HOUR_NS
    times = {"new": newest, "first": week_start, "before": week_start - 1, "old": newest - 8 * 24 * HOUR_NS}
    store.write(
        Batch(
            rag_records=[
                whole_row(
                    {"span_id": f"{i:016x}", "service": "shop", "decision": "evaluated", "time_ns": t}, RAG_COLUMNS
                )
                for i, t in enumerate(times.values())
            ]
        )
    )
    with reading(store.target) as conn:
        costs = read_costs(conn, parse_filter(QueryParams("")))
    assert costs["since_ns"] == week_start
    assert costs["coverage"] == [("shop", "evaluated", 2)]  # the newest and the one at the week's first instant


def test_the_list_filters_by_alert_through_its_own_filters(client: TestClient) -> None:
    alert_id = client.get("/alert?rule=hallucination-spike&service=shop", follow_redirects=False).headers["location"]
    reply = client.get(f"/records?alert={alert_id.rsplit('/', 1)[1]}", follow_redirects=False)
    assert reply.status_code == 303
    assert "service=shop" in reply.headers["location"] and "score=hallucination%3E0.5" in reply.headers["location"]
    listed = _rows(client.get(reply.headers["location"]).text)
    fired = [i for i in range(SPIKE_FROM, 111) if i % 5 != 4 and i % 3 != 0]
    assert sorted(listed) == sorted(span_id(i) for i in fired)
    assert client.get("/records?alert=999").status_code == 404
    assert client.get("/records?alert=x").status_code == 400


def test_a_cursor_past_the_newest_row_comes_back_to_it(client: TestClient) -> None:
    # The store was replaced or pruned empty and rowids start again: the page must not stay silent.
    (last,) = re.findall(r'data-last-row="([\d.]+)"', client.get("/records").text)
    xact, _, row = last.rpartition(".")  # "rowid", or on PostgreSQL "transaction.rowid"
    past = f"{int(xact) + 1000}.{row}" if xact else str(int(row) + 1_000_000)
    data = client.get("/api/records", params={"after_row": past}).json()
    assert data["records"] == [] and data["last_row"] == last
    assert client.get("/api/records", params={"after_row": "²"}).status_code == 400


def test_route_is_a_filter_too(client: TestClient) -> None:
    assert len(_rows(client.get("/records", params={"route": "/ask", "limit": "500"}).text)) == N_RECORDS
    assert _rows(client.get("/records", params={"route": "/other"}).text) == []
    assert "route=%2Fask" in client.get("/records", params={"route": "/ask"}).text


def test_an_alert_page_shows_hostile_text_as_text(client: TestClient, open_store: Callable[[], Any]) -> None:
    """The alert page is a template (autoescaped): a rule, service, route and message carrying HTML and script show
    as text, in the heading, the controls' data-body and the chart's label alike."""
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    store = open_store()
    insert_alerts(
        store,
        [{"rule": f"r{hostile}", "kind": "threshold", "metric": "faithfulness", "service": f"s{hostile}",
          "route": f"/{hostile}", "time_ns": T0 + 50 * MINUTE, "state": "ALERT", "previous_state": "OK",
          "value": 0.2, "threshold": 0.5, "message": f"m{hostile}"}],
    )  # fmt: skip
    found = client.get("/alert", params={"rule": f"r{hostile}", "service": f"s{hostile}", "route": f"/{hostile}"},
                       follow_redirects=False)  # fmt: skip
    page = client.get(found.headers["location"]).text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert page.count("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") >= 4
    assert '<p id="alert-error" class="issue" role="alert"></p>' in page  # the controls are there, escaped
    (body,) = re.findall(r'data-api="/api/silences" data-body="([^"]*)"', page)
    assert json.loads(html.unescape(body)) == {"rule": f"r{hostile}", "service": f"s{hostile}", "route": f"/{hostile}"}
