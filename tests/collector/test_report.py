"""Reports over a real SQLite store: summary numbers, direction-aware problems, markdown, HTML, the page route."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._otlp import Batch
from ragtrace_collector._report import page_routes, problems, report, summary, write_report
from ragtrace_collector._store import Store
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ragtrace.environment_variables import ConfigurationError
from tests.collector._stores import store_args, whole_row
from tests.collector._triage_seed import insert_alerts

NS = 1_000_000_000
T0 = 1_800_000_000 * NS

# span id -> (decision, query, answer, scores)
RECORDS: dict[str, tuple[str, str, str, dict[str, float]]] = {
    "a" * 16: (
        "evaluated",
        "Capital of Brazil?",
        "Brasilia.",
        {"faithfulness": 1.0, "hallucination": 0.0, "context_relevance": 0.9},
    ),
    "b" * 16: (
        "evaluated",
        "First Super Bowl?",
        "January 15, 1967, in Florida.",
        {"faithfulness": 0.4, "hallucination": 0.6, "context_relevance": 0.8},
    ),
    "c" * 16: (
        "evaluated",
        "Who <b>painted</b> the Mona Lisa?",
        "Charlotte Bronte | 1503",
        {"faithfulness": 0.0, "hallucination": 1.0, "context_relevance": 0.3},
    ),
    "d" * 16: ("not_sampled", "Unscored question", "Unscored answer", {}),
}


def seed(store: Store, *, start: int = T0) -> None:
    """The four records above, one second apart, with their chunks and scores."""
    rag_rows: list[dict[str, Any]] = []
    score_rows: list[dict[str, Any]] = []
    for i, (span_id, (decision, query, answer, scores)) in enumerate(RECORDS.items()):
        time_ns = start + i * NS
        trace_id = span_id * 2
        chunks = [{"id": f"doc-{i}", "content": f"chunk text {i} <script>x</script>", "score": 0.5, "metadata": {}}]
        rag_rows.append(
            {
                "span_id": span_id,
                "trace_id": trace_id,
                "service": "shop",
                "route": "/ask",
                "time_ns": time_ns,
                "query": query,
                "answer": answer,
                "chunks": json.dumps(chunks),
                "decision": decision,
            }
        )
        for metric, value in scores.items():
            score_rows.append(
                {
                    "span_id": span_id,
                    "metric": metric,
                    "value": value,
                    "trace_id": trace_id,
                    "service": "shop",
                    "route": "/ask",
                    "time_ns": time_ns,
                    "source": "app",
                }
            )
    store.write(
        Batch(
            rag_records=[whole_row(r, RAG_COLUMNS) for r in rag_rows],
            scores=[whole_row(r, SCORE_COLUMNS) for r in score_rows],
        )
    )


@pytest.fixture
def store(open_store: Callable[[], Any]) -> Any:
    """The four records, on either engine (``open_store``'s parameter)."""
    s = open_store()
    seed(s)
    return s


def test_summary(store: Any) -> None:
    head = summary(store)
    assert (head.records, head.scored) == (4, 3)
    expected = {"context_relevance": 2.0 / 3, "faithfulness": 1.4 / 3, "hallucination": 1.6 / 3}
    assert head.means == pytest.approx(expected)
    assert {m.metric: m.direction for m in head.metrics}["hallucination"] == "lower"
    assert {m.metric: m.count for m in head.metrics} == {"context_relevance": 3, "faithfulness": 3, "hallucination": 3}
    # overall = mean of direction-adjusted scores: 2.9/3, 1.6/3, 0.3/3
    assert head.overall_min == pytest.approx(0.1)
    assert head.overall_max == pytest.approx(2.9 / 3)
    assert head.overall_mean == pytest.approx((2.9 + 1.6 + 0.3) / 9)
    assert (head.first_ns, head.last_ns) == (T0, T0 + 3 * NS)
    assert dict(head.decisions) == {"evaluated": 3, "not_sampled": 1}
    assert head.firing == ()


def test_summary_accepts_a_target_a_database_and_a_time_range(store: Any) -> None:
    assert summary(store.target).records == 4  # a SQLite file's path, or a PostgreSQL URL
    if isinstance(store, Store):
        assert summary(store.db).records == 4  # an open sqlite_utils.Database, as Datasette hands one
    late = summary(store, since_ns=T0 + 2 * NS)
    assert (late.records, late.scored) == (2, 1)
    assert late.means["faithfulness"] == 0.0


def test_problems_are_direction_aware_worst_first_with_their_issues(store: Any) -> None:
    found = problems(store, threshold=0.6)
    assert [p.span_id for p in found] == ["c" * 16, "b" * 16]
    worst = found[0]
    assert worst.overall == pytest.approx(0.1)
    assert [str(i) for i in worst.issues] == [
        "faithfulness 0.00 < 0.60",
        "hallucination 1.00 > 0.40",
        "context_relevance 0.30 < 0.60",
    ]
    assert (worst.query, worst.answer, worst.service, worst.route) == (
        "Who <b>painted</b> the Mona Lisa?",
        "Charlotte Bronte | 1503",
        "shop",
        "/ask",
    )
    assert worst.chunks[0]["id"] == "doc-2"
    assert [str(i) for i in found[1].issues] == ["faithfulness 0.40 < 0.60", "hallucination 0.60 > 0.40"]
    # A lower threshold only keeps the record with a metric past it.
    assert [p.span_id for p in problems(store, threshold=0.45)] == ["c" * 16, "b" * 16]
    assert [p.span_id for p in problems(store, threshold=0.2)] == ["c" * 16]
    assert problems(store, limit=1)[0].span_id == "c" * 16
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\]"):
        problems(store, threshold=60)


def test_markdown_report(store: Any) -> None:
    assert "## Recent alert transitions\n\nNone." in report(store, "markdown")
    insert_alerts(
        store,
        [
            {"time_ns": T0, "rule": "quiet", "metric": "faithfulness", "state": "OK", "message": "first sighting"},
            {"time_ns": T0 + NS, "rule": "low", "metric": "faithfulness", "service": "shop", "state": "ALERT",
             "previous_state": "OK", "message": "mean 0.467 | below 0.7"},
        ],
    )  # fmt: skip
    text = report(store, "markdown")
    assert (
        "| 2027-01-15 08:00:01 UTC | low | faithfulness | service=shop | OK -> ALERT | mean 0.467 \\| below 0.7 |"
        in text
    )
    assert "first sighting" not in text
    assert text.startswith("# ragtrace report\n")
    assert "- 4 records, 3 of them scored" in text
    assert "| faithfulness | 0.467 | 3 | higher |" in text
    assert "| hallucination | 0.533 | 3 | lower |" in text
    assert "| not_sampled | 1 | 25.0% |" in text
    assert "### 1. Who <b>painted</b> the Mona Lisa? (overall 0.10)" in text
    assert "- Issues: faithfulness 0.00 < 0.60, hallucination 1.00 > 0.40, context_relevance 0.30 < 0.60" in text
    assert text.index("Mona Lisa") < text.index("First Super Bowl")
    assert "Capital of Brazil" not in text  # not a problem


def test_html_report_is_self_contained_with_charts_and_escaped_content(store: Any) -> None:
    insert_alerts(
        store,
        [
            {
                "time_ns": T0 + 2 * NS,
                "rule": "hallucination-spike",
                "kind": "spike",
                "metric": "hallucination",
                "service": "shop",
                "state": "ALERT",
                "value": 9.1,
                "threshold": 8.0,
                "message": "bad rate up",
                "sinks": "[]",
            }
        ],
    )
    page = report(store, "html")
    assert page.startswith("<!DOCTYPE html>")
    # plotly.js is inlined: no script or stylesheet is fetched from anywhere.
    assert re.search(r"<(script|link)[^>]+(src|href)=", page) is None
    assert "Plotly.newPlot" in page
    assert page.count('class="plotly-graph-div"') == 4  # three metrics + decision coverage
    assert "hallucination over time (lower is better)" in page
    assert '"name":"alert"' in page  # the alert marker trace on the hallucination chart
    assert "Who &lt;b&gt;painted&lt;/b&gt; the Mona Lisa?" in page
    assert "chunk text 2 &lt;script&gt;x&lt;/script&gt;" in page
    assert '<b id="firing">1</b>' in page and "bad rate up" in page
    assert "<td>service=shop</td><td>- &rarr; ALERT</td><td>bad rate up</td>" in page
    with pytest.raises(ValueError, match="format must be"):
        report(store, "pdf")  # type: ignore[arg-type]


def test_empty_and_missing_stores(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    Store(empty).close()
    head = summary(empty)
    assert (head.records, head.scored, head.overall_mean, head.first_ns) == (0, 0, None, None)
    assert "No scores stored yet." in report(empty, "html")
    assert "None." in report(empty, "markdown")
    with pytest.raises(ConfigurationError, match="does not exist; pass the --db file"):
        summary(tmp_path / "missing.db")


def test_write_report_picks_the_format_from_the_suffix(store: Any, tmp_path: Path) -> None:
    md = write_report(store.target, tmp_path / "out" / "report.md")
    assert md.read_text(encoding="utf-8").startswith("# ragtrace report")
    page = write_report(store.target, tmp_path / "report.html")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    forced = write_report(store.target, tmp_path / "report.txt", "markdown", threshold=0.2)
    assert "### 2." not in forced.read_text(encoding="utf-8")


def test_page_routes_serve_html_markdown_and_reject_bad_input(store: Any) -> None:
    app = Starlette(routes=page_routes(store, refresh_seconds=30))
    with TestClient(app) as client:
        response = client.get("/")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/html")
        # The live page never reloads itself (the reader would lose their place): it polls for new records
        # every 30 s and says so, from the newest record it shows.
        assert 'http-equiv="refresh"' not in response.text
        assert 'id="fresh"' in response.text and "30000" in response.text
        (after,) = re.findall(r'data-after-row="([\d.]+)"', response.text)
        newer = client.get("/api/records", params={"after_row": after}).json()["records"]
        assert newer == []  # nothing is newer than what the page shows
        markdown = client.get("/", params={"format": "markdown", "threshold": "0.2"})
        assert markdown.headers["content-type"].startswith("text/markdown")
        assert "threshold 0.2" in markdown.text
        assert client.get("/", params={"threshold": "lots"}).status_code == 400


@pytest.mark.parametrize("name", ["run#1.db", "a?b.db", "100%25.db", "with space.db"])
def test_a_store_whose_name_has_uri_characters_is_read_not_another_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    s = Store(path)
    seed(s)
    s.close()
    assert summary(path).records == 4
    app = Starlette(routes=page_routes(path))
    with TestClient(app) as client:
        assert "4 records, 3 of them scored" in client.get("/", params={"format": "markdown"}).text
    # No stray file opened beside it (only the store and its WAL files).
    assert {p.name for p in tmp_path.iterdir()} <= {name, f"{name}-wal", f"{name}-shm"}


def test_a_chunk_without_an_id_shows_no_none(open_store: Callable[[], Any]) -> None:
    # A chunk captured from a plain string has no id: the decoder stores it as null.
    chunks = [
        {"id": None, "content": "plain text chunk", "score": None, "metadata": {}},
        {"id": "doc-9", "content": "chunk with an id", "score": 0.5, "metadata": {}},
    ]
    store = open_store()
    record = {"span_id": "e" * 16, "trace_id": "e" * 32, "service": "shop", "route": "/ask", "time_ns": T0,
              "query": "Plain?", "answer": "No.", "chunks": json.dumps(chunks), "decision": "evaluated"}  # fmt: skip
    score = {"span_id": "e" * 16, "metric": "faithfulness", "value": 0.0, "trace_id": "e" * 32, "service": "shop",
             "route": "/ask", "time_ns": T0, "source": "app"}  # fmt: skip
    store.write(Batch(rag_records=[whole_row(record, RAG_COLUMNS)], scores=[whole_row(score, SCORE_COLUMNS)]))
    text = report(store, "markdown")
    page = report(store, "html")
    assert "  - Chunk 0: plain text chunk\n" in text
    assert "  - Chunk 1 (doc-9): chunk with an id\n" in text
    assert "(None)" not in text
    assert "<li><pre>plain text chunk</pre></li>" in page
    assert "<li><b>doc-9 (score 0.5)</b><pre>chunk with an id</pre></li>" in page
    assert "<b>None" not in page  # (plotly.js, inlined, has "None" of its own)


PHISH = '<a href="https://evil.example/phish">click</a>'


def _plotly_strings(page: str) -> list[str]:
    """Every string in the page's Plotly figures (the JSON of its ``Plotly.newPlot`` calls), decoded."""
    found = []
    for call in re.findall(r"Plotly\.newPlot\((.*?)\)\s*};?\s*</script>", page, flags=re.S) or [page]:
        found += [json.loads(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', call)]
    return found


def test_span_values_never_become_markup_in_a_chart(store: Any, tmp_path: Path) -> None:
    """Plotly renders a subset of HTML in labels and hover text: a decision (or an alert's text) holding an ``<a
    href>`` must show as text, on the page and in ``ragtrace-collector report``, never as a live link."""
    from ragtrace_collector.__main__ import main

    record = {"span_id": "ph" * 8, "trace_id": "ph" * 16, "service": "shop", "time_ns": T0 + NS, "decision": PHISH}
    store.write(Batch(rag_records=[whole_row(record, RAG_COLUMNS)]))
    insert_alerts(
        store,
        [{"time_ns": T0 + 2 * NS, "rule": PHISH, "kind": "spike", "metric": "hallucination", "service": PHISH,
          "state": "ALERT", "value": 9.1, "threshold": 8.0, "message": PHISH, "sinks": "[]"}],
    )  # fmt: skip
    out = tmp_path / "report.html"
    assert main(["report", *store_args(store.target), "--out", str(out)]) == 0
    for page in (report(store, "html"), out.read_text(encoding="utf-8")):
        texts = [s for s in _plotly_strings(page) if "evil.example" in s]
        assert texts, "the decision and the alert are in the charts"
        assert all("<a" not in s and "&lt;a href" in s for s in texts), texts


def _late_and_lone_scores(store: Any) -> None:
    """A record from before T0 whose score came at T0 + 5 s (a late score), and a score whose span has no record
    (a score-only export): both scored "in" a period starting at T0, neither a record of it."""
    early = "e" * 16
    store.write(
        Batch(
            rag_records=[
                whole_row(
                    {"span_id": early, "trace_id": early * 2, "service": "shop", "time_ns": T0 - 600 * NS,
                     "query": "q", "answer": "a", "chunks": "[]", "decision": "evaluated"},
                    RAG_COLUMNS,
                )
            ],
            scores=[
                whole_row(
                    {"span_id": span, "metric": "faithfulness", "value": 0.5, "trace_id": span * 2,
                     "service": "shop", "time_ns": T0 + 5 * NS, "source": "app"},
                    SCORE_COLUMNS,
                )
                for span in (early, "f" * 16)
            ],
        )
    )  # fmt: skip


def test_scored_counts_records_of_the_period_and_says_what_else_was_scored(store: Any) -> None:
    """Issue 25 saw "scored 152" beside "records 140": scores were counted by their spans and their own time. Now
    scored is the period's records with a score, and the others are said apart."""
    _late_and_lone_scores(store)
    head = summary(store, since_ns=T0)
    assert (head.records, head.scored, head.scored_elsewhere) == (4, 3, 2)
    assert head.scored <= head.records
    assert head.means["faithfulness"] == pytest.approx((1.0 + 0.4 + 0.0 + 0.5 + 0.5) / 5)  # their scores count
    everything = summary(store)
    assert (everything.records, everything.scored, everything.scored_elsewhere) == (5, 4, 1)
    assert summary(store, service="shop").scored_elsewhere == 1
    app = Starlette(routes=page_routes(store))
    with TestClient(app) as client:
        page = client.get("/", params={"since": str(T0)}).text
        markdown = client.get("/", params={"format": "markdown", "since": str(T0)}).text
    assert '<b id="records">4</b>' in page and '<b id="scored">3</b>' in page
    assert re.search(r'id="scored-elsewhere">2 more scored spans whose record is not in this period', page)
    assert "- 4 records, 3 of them scored; and 2 scored spans whose record is not in this period" in markdown


def test_an_empty_period_says_so(store: Any) -> None:
    """Not "- to -": an empty scope's period, in words."""
    app = Starlette(routes=page_routes(store))
    with TestClient(app) as client:
        page = client.get("/", params={"service": "nobody"}).text
        markdown = client.get("/", params={"format": "markdown", "since": str(T0 + 3600 * NS)}).text
    assert "all time, service nobody: nothing stored in this period yet" in page
    assert "- Stored: nothing stored in this period yet" in markdown
    text = report(store, "html", since_ns=T0 + 3600 * NS)
    assert "nothing stored in this period yet" in text
    for said in (page, markdown, text):
        assert "- to -" not in said
    assert "- Stored: from 2027-01-15 08:00:00 UTC to " in report(store, "markdown")


@pytest.mark.parametrize("names", [3, 250])
def test_a_time_bounded_summary_keeps_the_period_whatever_the_number_of_metric_names(
    open_store: Callable[[], Any], names: int
) -> None:
    """A time bound on scores is read through ``metric IN`` the store's metric names (an index range each), or,
    past 200 names, without it: either way every score of the period counts and none outside it."""
    store = open_store()

    def score(span: str, metric: str, value: float, time_ns: int) -> dict[str, Any]:
        row = {"span_id": span, "metric": metric, "value": value, "time_ns": time_ns, "service": "shop"}
        return whole_row(row, SCORE_COLUMNS)

    inside = [score(f"{k:016x}", f"m{k:03d}", 0.25, 10) for k in range(names)]
    outside = [score(f"{k + 1000:016x}", f"m{k:03d}", 0.75, 1) for k in range(names)]
    store.write(Batch(scores=inside + outside))
    head = summary(store, since_ns=5, service="shop")
    assert [(m.metric, m.count, m.mean) for m in head.metrics] == [(f"m{k:03d}", 1, 0.25) for k in range(names)]
    assert (head.first_ns, head.last_ns) == (10, 10)
    worst = problems(store, 0.6, limit=None, since_ns=5, until_ns=20)
    assert sorted(p.span_id for p in worst) == sorted(row["span_id"] for row in inside)
