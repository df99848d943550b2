"""``ragtrace calibrate --from URL --token-file F``: the labels people gave on a collector's pages, read straight
from its ``/api/reviews.jsonl`` with its admin token, fit the judge's cut as a labelled file does; without the
token it stops with what to fix. Both store engines, a real collector, the stub OpenAI server as the judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from ragtrace_collector._server import Collector

from ragtrace.cli import main
from ragtrace.testing import StubOpenAIServer
from tests.collector._spans import SpanFactory, hex_span_id, start_collector
from tests.ragtrace.test_calibrate_cli import CHUNK, GROUNDED, NOT_GROUNDED, QUESTION

TOKEN = "s3cret-admin"


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, page=True, token=TOKEN)
    yield running
    running.stop()


def _reviewed(collector: Collector) -> None:
    """The stub-judged records, sent as spans, each reviewed as a whole by a person through the API."""
    factory = SpanFactory()
    answers = [(a, True) for a in GROUNDED] + [(a, False) for a in NOT_GROUNDED]
    spans = [factory.rag(query=QUESTION, chunks=[CHUNK], answer=a, decision="evaluated") for a, _ in answers]
    exporter = OTLPSpanExporter(
        endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert exporter.export(factory.all()) is SpanExportResult.SUCCESS
    exporter.shutdown()
    for span, (_, grounded) in zip(spans, answers, strict=True):
        reply = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/api/reviews",
            json={"span_id": hex_span_id(span), "grounded": grounded, "author": "ana"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=30,
        )
        assert reply.status_code == 201, reply.text


def test_calibrate_reads_the_labels_from_the_collector(
    collector: Collector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _reviewed(collector)
    url = f"http://127.0.0.1:{collector.http_port}/api/reviews.jsonl"
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    with StubOpenAIServer() as judge:
        judge.responder = lambda step, body: "no" if step == "verify_claim" else None
        argv = ["calibrate", "--from", url, "--base-url", judge.base_url, "--model", "small"]
        assert main([*argv, "--token-file", str(token_file)]) == 0
        out = capsys.readouterr().out
        assert "12 records (6 grounded, 6 not)" in out
        assert "set RAGTRACE_JUDGE_SUPPORT_THRESHOLD=" in out

        # Without the token the collector refuses, and the command says what to give it.
        assert main(argv) == 2
        assert "needs its admin token (401): give its admin token with --token-file" in capsys.readouterr().err
        token_file.write_text("wrong", encoding="utf-8")
        assert main([*argv, "--token-file", str(token_file)]) == 2
        assert "the token in --token-file is refused" in capsys.readouterr().err
        # A file and --from are one or the other.
        assert main([*argv, "labels.jsonl"]) == 2
        assert "one of them" in capsys.readouterr().err
