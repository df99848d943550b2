"""People correct the judge: reviews through the API and from the record page in Chromium, their export as the
labels ``ragtrace calibrate`` reads, the review queue, and the judge's agreement with them; on both engines."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._server import Collector

from ragtrace._eval_input import read_jsonl
from ragtrace.cli.calibration import balanced_accuracy, rank_auc
from tests.collector._devtools import browser, devtools
from tests.collector._spans import SpanFactory, hex_span_id, start_collector
from tests.collector._stores import rows
from tests.collector._triage_seed import SPIKE_FROM, seed_triage, span_id

__all__ = ["browser"]  # the fixture, imported for pytest

# (faithfulness the judge gave, what the person says): mostly agreeing, two disagreements.
VERDICTS = [(0.95, True), (0.9, True), (0.85, True), (0.8, True), (0.4, True),
            (0.1, False), (0.15, False), (0.2, False), (0.3, False), (0.7, False)]  # fmt: skip


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, page=True)
    yield running
    running.stop()


def _send(collector: Collector, faithfulness: list[float]) -> list[str]:
    """RAG records with a claim each, scored by the app; their span ids."""
    factory = SpanFactory()
    spans = [
        factory.rag(query=f"question {i}", answer=f"Answer {i}.", decision="evaluated",
                    scores={"faithfulness": f, "hallucination": 1 - f})
        for i, f in enumerate(faithfulness)
    ]  # fmt: skip
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
    assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
    exporter.shutdown()
    return [hex_span_id(s) for s in spans]


def _api(collector: Collector) -> str:
    return f"http://127.0.0.1:{collector.http_port}/api/reviews"


def test_a_review_is_stored_replaced_by_the_next_and_refused_when_malformed(collector: Collector) -> None:
    (span,) = _send(collector, [0.9])
    first = httpx.post(_api(collector), json={"span_id": span, "grounded": True, "author": "alice"}, timeout=30)
    assert first.status_code == 201
    claim = {"span_id": span, "claim": 0, "grounded": False, "note": "the year is wrong", "author": "bob"}
    assert httpx.post(_api(collector), json=claim, timeout=30).status_code == 201
    again = {"span_id": span, "grounded": False, "note": "on second reading", "author": "alice"}
    assert httpx.post(_api(collector), json=again, timeout=30).status_code == 201  # replaces alice's first
    listed = httpx.get(_api(collector), params={"span_id": span}, timeout=30).json()["reviews"]
    assert [(r["claim"], r["grounded"], r["author"], r["note"]) for r in listed] == [
        (None, False, "alice", "on second reading"),
        (0, False, "bob", "the year is wrong"),
    ]
    assert rows(collector, "SELECT count(*) FROM reviews") == [(2,)]
    for body, status, says in [
        ({"span_id": "f" * 16, "grounded": True}, 404, "no record"),
        ({"span_id": span, "grounded": "yes"}, 400, "`grounded` must be true"),
        ({"span_id": span, "grounded": True, "claim": -1}, 400, "`claim` must be a claim's index"),
        ({"span_id": span, "grounded": True, "claim": True}, 400, "`claim` must be a claim's index"),
        ({"grounded": True}, 400, "`span_id` is required"),
        ({"span_id": span, "grounded": True, "note": "x" * 5000}, 400, "`note` must be"),
    ]:
        reply = httpx.post(_api(collector), json=body, timeout=30)
        assert (reply.status_code, says in reply.json()["error"]) == (status, True), body
    # A form post (what another site can make a browser send) is refused: JSON only.
    form = httpx.post(_api(collector), data={"span_id": span, "grounded": "true"}, timeout=30)
    assert form.status_code == 415


def test_reviews_export_as_the_labels_calibrate_reads(collector: Collector, tmp_path: Path) -> None:
    spans = _send(collector, [f for f, _ in VERDICTS])
    for span, (_, grounded) in zip(spans, VERDICTS, strict=True):
        body = {"span_id": span, "grounded": grounded, "author": "alice"}
        assert httpx.post(_api(collector), json=body, timeout=30).status_code == 201
    claim_only = {"span_id": spans[0], "claim": 0, "grounded": False}  # claims are not records' labels
    assert httpx.post(_api(collector), json=claim_only, timeout=30).status_code == 201
    export = httpx.get(_api(collector) + ".jsonl", timeout=30)
    assert export.headers["content-type"].startswith("application/x-ndjson")
    path = tmp_path / "labels.jsonl"
    path.write_text(export.text, encoding="utf-8")
    read = read_jsonl(path, strict=True)  # what `ragtrace calibrate labels.jsonl` reads
    assert [r.query for r in read.records] == [f"question {i}" for i in range(len(VERDICTS))]
    labels = [json.loads(line)["grounded"] for line in export.text.splitlines()]
    assert labels == [g for _, g in VERDICTS]
    assert [c.text for c in read.records[0].chunks] == [
        "Brazil is a country in South America.",
        "Its capital is Brasilia.",
    ]
    later = httpx.get(_api(collector) + ".jsonl", params={"since": str(2**62)}, timeout=30)
    assert later.text == ""
    assert httpx.get(_api(collector) + ".jsonl", params={"since": "soon"}, timeout=30).status_code == 400


def test_the_judges_agreement_with_people_and_the_review_queue(collector: Collector) -> None:
    spans = _send(collector, [f for f, _ in VERDICTS] + [0.52, 0.98, 0.45])  # three left unreviewed
    for span, (_, grounded) in zip(spans[: len(VERDICTS)], VERDICTS, strict=True):
        assert httpx.post(_api(collector), json={"span_id": span, "grounded": grounded}, timeout=30).status_code == 201
    measured = httpx.get(f"http://127.0.0.1:{collector.http_port}/api/agreement", timeout=30).json()
    overall = measured["groups"][0]
    scores, labels = [f for f, _ in VERDICTS], [g for _, g in VERDICTS]
    assert (overall["judge"], overall["records"], overall["grounded"]) == ("all", 10, 5)
    assert overall["auroc"] == pytest.approx(rank_auc(scores, labels))
    assert overall["balanced_accuracy"] == pytest.approx(balanced_accuracy(scores, labels, 0.5))
    low, high = overall["auroc_interval"]
    assert low <= overall["auroc"] <= high
    assert [g["judge"] for g in measured["groups"]] == ["all", "fake:judge"]
    page = httpx.get(f"http://127.0.0.1:{collector.http_port}/agreement", timeout=30).text
    assert f'<td>{overall["auroc"]:.3f} <span class="muted">[{low:.2f}, {high:.2f}]</span></td>' in page
    queue = httpx.get(f"http://127.0.0.1:{collector.http_port}/review", timeout=30).text
    listed = re.findall(r'<a href="/records/([0-9a-f]{16})">', queue)
    assert listed == [spans[10], spans[12], spans[11]]  # unreviewed, nearest the cut first: 0.52, 0.45, 0.98


def test_empty_review_pages_say_what_to_do(collector: Collector) -> None:
    base = f"http://127.0.0.1:{collector.http_port}"
    assert "No review yet." in httpx.get(f"{base}/agreement", timeout=30).text
    assert "Nothing to review" in httpx.get(f"{base}/review", timeout=30).text


def test_a_person_reviews_a_claim_and_the_answer_from_the_record_page(
    store_target: str, open_store: Callable[[], Any], browser: subprocess.Popen[bytes]
) -> None:
    seed_triage(open_store())  # records with claims, as the judge stored them
    span = span_id(SPIKE_FROM + 1)  # a bad one: its second claim is contradicted
    collector = start_collector(store_target, page=True, token="s3cret")  # signed in by the link, CSRF checked
    try:
        _review_in_the_browser(collector, browser, span)
    finally:
        collector.stop()
    assert rows(store_target, "SELECT claim, grounded, author, note FROM reviews ORDER BY claim") == [
        (-1, 0, "carol", None),  # the note went with the claim's review; the page came back with an empty one
        (1, 0, "carol", "the claim is wrong"),
    ]


def _review_in_the_browser(collector: Collector, browser: subprocess.Popen[bytes], span: str) -> None:
    with devtools(browser, f"http://127.0.0.1:{collector.http_port}/records/{span}?token=s3cret") as tools:
        assert "Not reviewed yet." in tools.run("document.body.innerText")
        tools.run("document.querySelector('#review input[name=author]').value = 'carol'")
        tools.run("document.querySelector('#review input[name=note]').value = 'the claim is wrong'")
        tools.click_and_reload('#claim-1 button[data-grounded="false"]')
        assert "wrong by carol" in tools.run("document.getElementById('claim-1').innerText")
        # The name is remembered for the next review; the answer's review goes beside the claim's.
        assert tools.run("document.querySelector('#review input[name=author]').value") == "carol"
        tools.click_and_reload('#review button[data-grounded="false"]')
        assert "Reviewed: wrong by carol" in tools.run("document.body.innerText")


def test_the_review_queue_ranks_the_newest_scored_records_of_its_week(
    open_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue ranks the period's newest ``QUEUE_WINDOW`` scored records: an older record nearer the cut waits
    until the newer ones are reviewed or it is among them (a bounded read at any store size)."""
    from ragtrace_collector._otlp import Batch
    from ragtrace_collector._store import reviews
    from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS

    from tests.collector._stores import whole_row

    store = open_store()
    base = 1_800_000_000 * 10**9
    values = [0.5, 0.9, 0.2, 0.75, 0.6]  # oldest first: the oldest sits right at the cut
    spans = [format(i + 1, "016x") for i in range(len(values))]
    store.write(
        Batch(
            rag_records=[
                whole_row({"span_id": s, "trace_id": "ab" * 16, "time_ns": base + i, "service": "shop"}, RAG_COLUMNS)
                for i, s in enumerate(spans)
            ],
            scores=[
                whole_row({"span_id": s, "metric": "faithfulness", "value": v, "time_ns": base + i}, SCORE_COLUMNS)
                for i, (s, v) in enumerate(zip(spans, values, strict=True))
            ],
        )
    )
    ranked = store.read(lambda conn: [r["span_id"] for r in reviews.review_queue(conn)[0]])
    assert ranked == [spans[0], spans[4], spans[3], spans[2], spans[1]]  # 0.5, 0.6, 0.75, 0.2, 0.9
    monkeypatch.setattr(reviews, "QUEUE_WINDOW", 3)
    ranked = store.read(lambda conn: [r["span_id"] for r in reviews.review_queue(conn)[0]])
    assert ranked == [spans[4], spans[3], spans[2]]  # the newest three only: 0.6, 0.75, 0.2
