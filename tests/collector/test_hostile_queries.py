"""Malformed and oversized page and API values against a real collector on 127.0.0.1: each a 400 that names
the parameter, never a 500 with a traceback, and no query run for a request past the caps."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from ragtrace_collector._server import Collector

from tests.collector._spans import SpanFactory, otlp_bytes, start_collector

TWENTY_DIGITS = "9" * 20


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start_collector(tmp_path_factory.mktemp("queries") / "c.db", page=True)
    factory = SpanFactory()
    factory.rag(query="what is the capital of Brazil?", answer="Brasilia.")
    reply = httpx.post(
        f"http://127.0.0.1:{running.http_port}/v1/traces",
        content=otlp_bytes(factory.all()),
        headers={"content-type": "application/x-protobuf"},
        timeout=30,
    )
    assert reply.status_code == 200
    try:
        yield running
    finally:
        running.stop()


def _url(collector: Collector, path: str) -> str:
    return f"http://127.0.0.1:{collector.http_port}{path}"


MALFORMED_QUERIES = [
    ("/records?before=" + TWENTY_DIGITS + ":abc", "before"),
    ("/records?since=" + quote("²"), "since"),
    ("/records?until=" + quote("9999-12-31T23:59:59+14:00"), "until"),
    ("/records?since=" + quote("0001-01-01T00:00:00+14:00"), "since"),
    ("/records?since=" + TWENTY_DIGITS, "since"),
    ("/records?q=" + "a" * 50_000, "q"),
    ("/records?service=" + "s" * 5000, "service"),
    ("/records?" + "&".join(["meta=k:v"] * 400), "meta"),
    ("/records?" + "&".join(["score=" + quote("faithfulness>0.1")] * 900), "score"),
    ("/records?score=" + quote(",".join(["faithfulness>0.1"] * 30)), "score"),
    ("/api/records?since=" + quote("²"), "since"),
    ("/costs?until=" + quote("9999-12-31T23:59:59+14:00"), "until"),
    ("/alerts/" + TWENTY_DIGITS, "alert id"),
]


@pytest.mark.parametrize(("path", "parameter"), MALFORMED_QUERIES)
def test_a_malformed_or_oversized_page_parameter_is_a_400_that_names_it(
    collector: Collector, path: str, parameter: str
) -> None:
    reply = httpx.get(_url(collector, path), timeout=60)
    assert reply.status_code == 400, reply.text[:500]
    assert parameter in reply.text and "Traceback" not in reply.text


@pytest.mark.parametrize("duration", [1e308, "99999999999999999999d", 10**30, "400d"])
def test_a_silence_duration_out_of_range_is_a_400_that_names_it(collector: Collector, duration: object) -> None:
    reply = httpx.post(_url(collector, "/api/silences"), json={"duration": duration}, timeout=30)
    assert reply.status_code == 400, reply.text
    assert "duration" in reply.json()["error"]


def test_a_silence_id_past_sqlite_integers_is_a_400(collector: Collector) -> None:
    reply = httpx.delete(_url(collector, "/api/silences/" + TWENTY_DIGITS), timeout=30)
    assert reply.status_code == 400, reply.text
    assert "silence id" in reply.json()["error"]


def test_well_formed_parameters_still_answer(collector: Collector) -> None:
    assert httpx.get(_url(collector, "/records?since=2026-01-01T00:00Z&q=Brazil"), timeout=30).status_code == 200
    assert httpx.get(_url(collector, "/records?" + "&".join(["meta=k:v"] * 20)), timeout=30).status_code == 200
    made = httpx.post(_url(collector, "/api/silences"), json={"duration": "2h", "all": True}, timeout=30)
    assert made.status_code == 201
