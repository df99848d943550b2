"""End to end: an app configured with ragtrace (decorators, sampler, offline judge, OTLP exporter) sends to a
real ragtrace collector; the RAG records and their scores land in the store."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ragtrace
from ragtrace import semconv
from ragtrace.judges.offline import OfflineJudge
from tests.collector._spans import start_collector
from tests.collector._stores import rows

DOCUMENTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Mount Fuji, at 3,776 metres, is the highest mountain in Japan.",
]


@ragtrace.retrieve
def search(query: str) -> list[str]:
    return DOCUMENTS


@ragtrace.generate
def write_answer(query: str, chunks: list[str]) -> str:
    return chunks[0]


@ragtrace.rag
def answer(query: str) -> str:
    return write_answer(query, search(query))


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_scores_from_a_ragtrace_app_land_in_the_store(
    store_target: str, open_store: Callable[[], Any], protocol: str
) -> None:
    running = start_collector(store_target)
    try:
        port = running.http_port if protocol == "http/protobuf" else running.grpc_port
        endpoint = f"http://127.0.0.1:{port}"
        handle = ragtrace.configure(
            service_name="shop",
            endpoint=endpoint,
            protocol=protocol,
            judge=OfflineJudge(),
            sample_rate=1.0,
            export_metrics=False,
            set_global=False,
        )
        try:
            for question in ("When was the Eiffel Tower completed?", "How tall is Mount Fuji?"):
                answer(question)
        finally:
            handle.shutdown()
    finally:
        running.stop()
    store = open_store()
    records = rows(store, "SELECT service, decision, query, judge FROM rag_records ORDER BY query")
    scored = rows(store, "SELECT DISTINCT metric FROM scores WHERE source = 'app'")
    chunks = rows(store, "SELECT chunks FROM rag_records")[0][0]
    assert [(r[0], r[1], r[2]) for r in records] == [
        ("shop", semconv.DECISION_EVALUATED, "How tall is Mount Fuji?"),
        ("shop", semconv.DECISION_EVALUATED, "When was the Eiffel Tower completed?"),
    ]
    assert all(r[3] for r in records)  # the judge that scored them
    assert {m[0] for m in scored} >= set(ragtrace.PRODUCTION_METRICS)
    assert "Eiffel Tower was completed in 1889" in chunks


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_an_app_with_a_wrong_token_is_told_to_send_it_in_headers(
    tmp_path: Path, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 29: the app printed "Failed to export spans batch code: 401, reason: Unauthorized" and ragtrace's
    # own "spans could not be exported ... and were dropped", neither naming the token or where it goes.
    running = start_collector(tmp_path / "c.db", token="s3cret")
    try:
        port = running.http_port if protocol == "http/protobuf" else running.grpc_port
        endpoint = f"http://127.0.0.1:{port}"
        handle = ragtrace.configure(
            service_name="shop",
            endpoint=endpoint,
            protocol=protocol,
            headers={"authorization": "Bearer wrong"},
            sample_rate=0.0,
            batch=False,
            export_metrics=False,
            set_global=False,
        )
        answer("When was the Eiffel Tower completed?")
        with caplog.at_level(logging.WARNING, logger="ragtrace"):
            handle.shutdown()
    finally:
        running.stop()
    (message,) = [r.getMessage() for r in caplog.records if r.name == "ragtrace"]
    assert message.startswith(f"ragtrace: 3 spans could not be exported to {endpoint} and were dropped; ")
    # Over HTTP the 401 is seen; the gRPC exporter takes no session, so its message names both checks.
    if protocol == "http/protobuf":
        assert "the endpoint answered 401 (the token is missing or wrong)" in message
    assert "configure(headers={'authorization': 'Bearer TOKEN'})" in message
    assert "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20TOKEN" in message
