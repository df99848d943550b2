"""The collector posts its stored scores to Phoenix as span annotations (``_phoenix``), from either store engine.

Phoenix is played by a real HTTP server on 127.0.0.1 that answers ``POST /v1/span_annotations?sync=true`` as
Phoenix 20.x does: 404 ``Spans with IDs ... do not exist.`` (writing nothing) while a span is missing, else an
upsert on (span, name, identifier). Waits poll a real condition against a deadline; nothing sleeps to pass.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from ragtrace_collector.__main__ import main
from ragtrace_collector._otlp import Batch
from ragtrace_collector._phoenix import PhoenixAnnotator, annotations_url
from ragtrace_collector._phoenix._wire import Delivery, classify
from ragtrace_collector._server import CollectorConfig
from ragtrace_collector._store import Store, open_store
from ragtrace_collector._store.phoenix import ScoreTail, TailRow
from ragtrace_collector._store.schema import RAG_COLUMNS, SCORE_COLUMNS

import ragtrace
from ragtrace.environment_variables import ConfigurationError
from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes, start_collector
from tests.collector._stores import count

DEADLINE_SECONDS = 20.0


@dataclass(frozen=True)
class Posted:
    """One request the stand-in received."""

    path: str
    query: dict[str, list[str]]
    authorization: str | None
    data: list[dict[str, Any]]
    status: int


class FakePhoenix:
    """A real HTTP server on 127.0.0.1 standing in for Phoenix's span-annotation endpoint."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.posted: list[Posted] = []
        self.stored: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.writes: dict[tuple[str, str, str], int] = {}
        """How many times each (span, name, identifier) was written: a duplicate shows as 2."""
        self.spans: set[str] | None = None
        """The span ids Phoenix holds; None: every span."""
        self.statuses: deque[int] = deque()
        """Statuses to answer first, one per request (before looking at the spans)."""
        self.always: int | None = None
        self.release = threading.Event()
        self.release.set()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.release.wait(DEADLINE_SECONDS)
                status, text = fake.answer(body["data"])
                parts = urlsplit(self.path)
                with fake.lock:
                    fake.posted.append(
                        Posted(parts.path, parse_qs(parts.query), self.headers["authorization"], body["data"], status)
                    )
                payload = text.encode()
                self.send_response(status)
                self.send_header("content-type", "application/json" if status < 300 else "text/plain")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-phoenix", daemon=True
        )
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, data: list[dict[str, Any]]) -> tuple[int, str]:
        with self.lock:
            if self.statuses:
                return self.statuses.popleft(), "boom"
            if self.always is not None:
                return self.always, "nope"
            missing = sorted({item["span_id"] for item in data} - self.spans) if self.spans is not None else []
            if missing:
                return 404, f"Spans with IDs {', '.join(missing)} do not exist."
            for item in data:
                key = (item["span_id"], item["name"], item["identifier"])
                self.stored[key] = item
                self.writes[key] = self.writes.get(key, 0) + 1
            return 200, json.dumps({"data": [{"id": f"SpanAnnotation:{i}"} for i in range(len(data))]})

    def names(self) -> set[tuple[str, str]]:
        with self.lock:
            return {(span_id, name) for span_id, name, _ in self.stored}

    def requests(self) -> list[Posted]:
        with self.lock:
            return list(self.posted)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def phoenix() -> Iterator[FakePhoenix]:
    fake = FakePhoenix()
    yield fake
    fake.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The collector's store on one engine: a SQLite file (in a directory whose name a file: URI must quote), or
    a fresh database on the session's PostgreSQL server."""
    if request.param == "sqlite":
        opened: Any = Store(tmp_path / "a dir #1?" / "c.db", checkpoints=False)
    else:
        opened = open_store(request.getfixturevalue("postgres_server").database())
    yield opened
    opened.close()


def score_row(span_id: str, metric: str, value: float | None, **columns: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(SCORE_COLUMNS)
    row.update(span_id=span_id, metric=metric, value=value, trace_id="ab" * 16, time_ns=1, source="app")
    row.update(columns)
    return row


def _record(span_id: str, judge: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(RAG_COLUMNS)
    row.update(span_id=span_id, trace_id="ab" * 16, time_ns=1, decision="evaluated", judge=judge)
    return row


def store_scores(store: Store, count: int, metric: str = "faithfulness") -> list[str]:
    """Store ``count`` scores of ``metric`` on spans 0000000000000001 ...; return the span ids."""
    span_ids = [format(i + 1, "016x") for i in range(count)]
    store.write(Batch(scores=[score_row(span_id, metric, i / count) for i, span_id in enumerate(span_ids)]))
    return span_ids


async def wait_until(check: Callable[[], bool], what: str) -> None:
    """Wait (on the loop, so the annotator runs) until ``check()`` holds; fail after ``DEADLINE_SECONDS``."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def make_annotator(phoenix: FakePhoenix, store: Store, **options: Any) -> PhoenixAnnotator:
    settings: dict[str, Any] = {"poll_seconds": 0.02, "retry_seconds": 0.01, "span_retry_seconds": 0.01}
    settings.update(options)
    return PhoenixAnnotator(phoenix.url, store.target, **settings)


async def test_every_measured_score_becomes_one_annotation_with_the_stored_values(
    phoenix: FakePhoenix, store: Store
) -> None:
    store.write(Batch(scores=[score_row("00000000000000aa", "faithfulness", 0.5)]))  # before start: not sent
    annotator = make_annotator(phoenix, store, api_key="s3cret")
    annotator.start()
    store.write(
        Batch(
            rag_records=[_record("00000000000000BB", "offline:support-minilm")],
            scores=[
                score_row("00000000000000BB", "faithfulness", 0.25, label="hallucinated", explanation="1 of 4 claims"),
                score_row("00000000000000BB", "hallucination", 0.75, label="hallucinated", source="collector"),
                score_row("00000000000000BB", "context_precision", None, reason="no_reference"),  # not measured
            ],
        )
    )
    await wait_until(lambda: annotator.sent == 2, "two annotations")
    await annotator.stop()
    (request,) = phoenix.requests()
    assert (request.path, request.query, request.authorization) == (
        "/v1/span_annotations",
        {"sync": ["true"]},
        "Bearer s3cret",
    )
    metadata = {"judge": "offline:support-minilm", "ragtrace_version": ragtrace.__version__}
    assert request.data == [
        {
            "span_id": "00000000000000bb",
            "name": "faithfulness",
            "annotator_kind": "LLM",
            "identifier": "ragtrace",
            "result": {"score": 0.25, "label": "hallucinated", "explanation": "1 of 4 claims"},
            "metadata": {**metadata, "source": "app"},
        },
        {
            "span_id": "00000000000000bb",
            "name": "hallucination",
            "annotator_kind": "LLM",
            "identifier": "ragtrace",
            "result": {"score": 0.75, "label": "hallucinated"},
            "metadata": {**metadata, "source": "collector"},
        },
    ]
    assert (annotator.dropped, annotator.pending) == (0, 0)


async def test_posts_go_in_batches_of_at_most_batch_size(phoenix: FakePhoenix, store: Store) -> None:
    annotator = make_annotator(phoenix, store, batch_size=100)
    annotator.start()
    span_ids = store_scores(store, 250)
    await wait_until(lambda: annotator.sent == 250, "250 annotations")
    await annotator.stop()
    assert [len(request.data) for request in phoenix.requests()] == [100, 100, 50]
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in span_ids}
    assert set(phoenix.writes.values()) == {1}


async def test_a_5xx_is_retried_with_the_same_batch(phoenix: FakePhoenix, store: Store) -> None:
    phoenix.statuses.extend([503, 500])
    annotator = make_annotator(phoenix, store)
    annotator.start()
    span_ids = store_scores(store, 3)
    await wait_until(lambda: annotator.sent == 3, "the batch after two failures")
    await annotator.stop()
    requests = phoenix.requests()
    assert [r.status for r in requests] == [503, 500, 200]
    assert requests[0].data == requests[1].data == requests[2].data
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in span_ids}
    assert annotator.dropped == 0


async def test_spent_retries_give_the_batch_up_count_it_and_go_on(phoenix: FakePhoenix, store: Store) -> None:
    phoenix.always = 503
    annotator = make_annotator(phoenix, store, max_retries=2)
    annotator.start()
    store_scores(store, 4)
    await wait_until(lambda: annotator.dropped == 4, "the batch given up")
    assert (annotator.dropped_by, len(phoenix.requests())) == ({"retries": 4}, 3)
    phoenix.always = None
    store.write(Batch(scores=[score_row("00000000000000ff", "faithfulness", 0.9)]))
    await wait_until(lambda: annotator.sent == 1, "the next score")
    await annotator.stop()
    assert phoenix.names() == {("00000000000000ff", "faithfulness")}


async def test_a_refusal_is_given_up_at_once(phoenix: FakePhoenix, store: Store) -> None:
    phoenix.always = 422
    annotator = make_annotator(phoenix, store)
    annotator.start()
    store_scores(store, 2)
    await wait_until(lambda: annotator.dropped == 2, "the refused batch")
    await annotator.stop()
    assert (annotator.dropped_by, len(phoenix.requests()), annotator.sent) == ({"refused": 2}, 1, 0)


async def test_an_annotation_waits_for_its_span_and_the_rest_go_at_once(phoenix: FakePhoenix, store: Store) -> None:
    first, late = "000000000000000a", "000000000000000b"
    phoenix.spans = {first}
    annotator = make_annotator(phoenix, store)
    annotator.start()
    store.write(Batch(scores=[score_row(first, "faithfulness", 0.9), score_row(late, "faithfulness", 0.1)]))
    await wait_until(lambda: annotator.sent == 1, "the annotation of the span Phoenix holds")
    assert (phoenix.names(), annotator.pending) == ({(first, "faithfulness")}, 1)
    with phoenix.lock:
        phoenix.spans.add(late)  # the app's export reaches Phoenix
    await wait_until(lambda: annotator.sent == 2, "the late span's annotation")
    await annotator.stop()
    assert phoenix.names() == {(first, "faithfulness"), (late, "faithfulness")}
    assert set(phoenix.writes.values()) == {1}
    statuses = [r.status for r in phoenix.requests()]
    assert statuses[0] == 404 and statuses[-1] == 200 and annotator.dropped == 0


async def test_a_span_that_never_reaches_phoenix_is_given_up_and_counted(phoenix: FakePhoenix, store: Store) -> None:
    phoenix.spans = {"000000000000000a"}
    annotator = make_annotator(phoenix, store, span_wait_seconds=0.2)
    annotator.start()
    store.write(
        Batch(scores=[score_row("000000000000000a", "faithfulness", 0.9), score_row("0000000000000bad", "x", 0.1)])
    )
    await wait_until(lambda: annotator.dropped == 1, "the annotation of the missing span given up")
    await annotator.stop()
    assert (annotator.dropped_by, annotator.sent) == ({"span_missing": 1}, 1)
    assert phoenix.names() == {("000000000000000a", "faithfulness")}


async def test_at_most_queue_size_annotations_are_held(phoenix: FakePhoenix, store: Store) -> None:
    phoenix.spans = set()  # Phoenix holds none of the spans yet
    annotator = make_annotator(phoenix, store, queue_size=5, batch_size=5)
    annotator.start()
    span_ids = store_scores(store, 25)
    await wait_until(lambda: len(phoenix.requests()) >= 3, "three tries of the first five")
    assert annotator.pending == 5
    assert {item["span_id"] for r in phoenix.requests() for item in r.data} == set(span_ids[:5])
    with phoenix.lock:
        phoenix.spans = None
    await wait_until(lambda: annotator.sent == 25, "all 25 once the spans are there")
    await annotator.stop()
    assert phoenix.names() == {(span_id, "faithfulness") for span_id in span_ids}
    assert set(phoenix.writes.values()) == {1}


async def test_stop_sends_what_was_stored_before_it(phoenix: FakePhoenix, store: Store) -> None:
    annotator = make_annotator(phoenix, store, poll_seconds=3600.0)  # no poll before stop: only its last read
    annotator.start()
    store_scores(store, 7)
    await annotator.stop()
    assert (annotator.sent, annotator.dropped) == (7, 0)


async def test_stop_called_during_a_read_still_makes_the_last_read(
    phoenix: FakePhoenix, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read that began before a score was stored, and returns after stop() was called: stop() must read
    # once more, not sleep out its timeout with the score unsent.
    entered, release = threading.Event(), threading.Event()
    gate = {"on": True}
    real_read = ScoreTail.read

    def read(tail: ScoreTail, cursor: int, limit: int) -> tuple[list[TailRow], int, bool]:
        found = real_read(tail, cursor, limit)
        if gate["on"]:
            entered.set()
            release.wait(DEADLINE_SECONDS)
        return found

    monkeypatch.setattr(ScoreTail, "read", read)
    annotator = make_annotator(phoenix, store, poll_seconds=3600.0)
    annotator.start()
    await wait_until(entered.is_set, "a read under way")
    (span_id,) = store_scores(store, 1)  # after the read's snapshot
    stopping = asyncio.create_task(annotator.stop(timeout=5.0))  # the bug slept 10 s, past this
    await asyncio.sleep(0)  # stop() runs up to its wait for the task: the task is told to close
    gate["on"] = False
    release.set()
    await stopping
    assert annotator.sent == 1 and (span_id, "faithfulness") in phoenix.names()


async def test_stop_ends_after_its_timeout_and_leaves_the_unsent_to_the_next_start(
    phoenix: FakePhoenix, store: Store
) -> None:
    phoenix.spans = set()
    annotator = make_annotator(phoenix, store)
    annotator.start()
    store_scores(store, 3)
    await wait_until(lambda: len(phoenix.requests()) >= 1, "a first try")
    await annotator.stop(timeout=0.2)
    # Not given up: the stored cursor stays below them (tests/collector/test_phoenix_cursor.py resumes them).
    assert (annotator.sent, annotator.pending, annotator.dropped_by) == (0, 3, {})


def test_ingest_does_not_wait_for_a_stuck_phoenix(phoenix: FakePhoenix, tmp_path: Path) -> None:
    phoenix.release.clear()  # Phoenix accepts connections and answers nothing
    collector = start_collector(tmp_path / "c.db", phoenix_url=phoenix.url)
    try:
        factory = SpanFactory()
        spans = [factory.rag(query=f"q{i}", scores={"faithfulness": i / 10}) for i in range(5)]
        base = f"http://127.0.0.1:{collector.http_port}"
        with httpx.Client(timeout=5.0) as client:
            for span in spans:  # each acknowledged within the client's 5 s while Phoenix hangs
                reply = client.post(
                    f"{base}/v1/traces", content=otlp_bytes([span]), headers={"content-type": "application/x-protobuf"}
                )
                assert reply.status_code == 200
        assert count(collector, "scores") == 5
        assert phoenix.requests() == []
        phoenix.release.set()
        expected = {(hex_span_id(span), "faithfulness") for span in spans}
        deadline = time.monotonic() + DEADLINE_SECONDS
        while phoenix.names() != expected:
            assert time.monotonic() < deadline, f"Phoenix holds {phoenix.names()}"
            time.sleep(0.05)  # the collector's own thread posts
        # The collector's /metrics says what went to Phoenix (the counter moves once the reply is read).
        sent = "ragtrace_collector_phoenix_annotations_sent_total 5.0"
        while sent not in (text := httpx.get(f"{base}/metrics").text):
            assert time.monotonic() < deadline, text
            time.sleep(0.05)
        assert "ragtrace_collector_phoenix_annotations_pending 0.0" in text
    finally:
        collector.stop()
    assert collector.annotator is not None and collector.annotator.dropped == 0


def test_the_url_is_checked_and_completed() -> None:
    assert annotations_url("http://phoenix:6006") == "http://phoenix:6006/v1/span_annotations"
    assert annotations_url("https://x/phoenix/") == "https://x/phoenix/v1/span_annotations"
    assert annotations_url("https://x/v1/span_annotations/") == "https://x/v1/span_annotations"
    with pytest.raises(ConfigurationError, match="--phoenix-url"):
        CollectorConfig(db=Path("x.db"), phoenix_url="phoenix:6006").validate()
    assert "s3cret" not in repr(CollectorConfig(db=Path("x.db"), phoenix_api_key="s3cret"))


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_serve_refuses_a_bad_phoenix_url_from_the_flag_or_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    argv = ["serve", "--db", str(tmp_path / "c.db"), "--port", "0", "--grpc-port", "-1", "--decode-processes", "0"]
    if how == "flag":
        argv += ["--phoenix-url", "ftp://phoenix"]
    else:
        monkeypatch.setenv("RAGTRACE_PHOENIX_URL", "ftp://phoenix")
    assert main(argv) == 2
    assert "--phoenix-url 'ftp://phoenix' is not Phoenix's URL" in capsys.readouterr().err
    assert not (tmp_path / "c.db").exists()


def test_replies_are_read_as_phoenix_words_them() -> None:
    batch = frozenset({"000000000000000a", "000000000000000b"})
    named = classify(404, "Spans with IDs 000000000000000B do not exist.", batch)
    assert (named.outcome, named.missing) == (Delivery.MISSING, frozenset({"000000000000000b"}))
    as_json = classify(404, json.dumps({"detail": "Spans with IDs 000000000000000a do not exist."}), batch)
    assert as_json.missing == frozenset({"000000000000000a"})
    assert classify(404, "Not Found", batch).missing == batch  # unknown wording: wait for every span
    assert [classify(s, "", batch).outcome for s in (200, 408, 429, 500, 507, 400, 401, 422)] == [
        Delivery.SENT,
        *[Delivery.RETRY] * 4,
        *[Delivery.REFUSED] * 3,
    ]
