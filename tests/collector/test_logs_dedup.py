"""An evaluation that arrives both as a span event and as a log record is one ``scores`` row, keyed
``(span_id, metric)``: the span's, whichever came first and however often either was retried, with what only the
log record carried (the explanation, when the span has no events) kept when both hold the same value.

Everything goes through a real collector on 127.0.0.1 into a real SQLite file; the rows a span alone is stored as
are what the collector's own decoder makes of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from ragtrace_collector._otlp import decode_protobuf
from ragtrace_collector._server import Collector

from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes, start_collector
from tests.collector.test_logs_receiver import Evaluations, logs_bytes, post_logs, stored_scores

SCORES = {"faithfulness": 0.75, "hallucination": 0.25}


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target)
    yield running
    running.stop()


def _post_spans(collector: Collector, spans: Sequence[ReadableSpan]) -> None:
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    reply = httpx.post(url, content=otlp_bytes(spans), headers={"content-type": "application/x-protobuf"}, timeout=30)
    assert reply.status_code == 200 and reply.content == b""


def _post_logs(collector: Collector, logs: Evaluations) -> None:
    reply = post_logs(collector, logs_bytes(logs.records()))
    assert reply.status_code == 200 and reply.content == b""


def _span_rows(spans: Sequence[ReadableSpan]) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows the collector stores for ``spans`` sent alone."""
    rows = [dict(row) for row in decode_protobuf(otlp_bytes(spans), 0).scores]
    return {(row.pop("span_id"), row.pop("metric")): row for row in rows}


def _send(collector: Collector, order: str, spans: Sequence[ReadableSpan], logs: Evaluations) -> None:
    """Spans and log records in ``order`` (``spans`` or ``logs`` first), then both again (an exporter's retry)."""
    send_spans = lambda: _post_spans(collector, spans)  # noqa: E731
    send_logs = lambda: _post_logs(collector, logs)  # noqa: E731
    first, second = (send_spans, send_logs) if order == "spans" else (send_logs, send_spans)
    for send in (first, second, second, first):
        send()


@pytest.mark.parametrize("order", ["spans", "logs"])
def test_an_app_sending_both_gets_exactly_the_rows_of_its_spans(collector: Collector, order: str) -> None:
    spans = SpanFactory()
    logs = Evaluations()
    for i in range(3):
        logs.of(spans.rag(query=f"q{i}", scores=SCORES, decision="evaluated"))
    _send(collector, order, spans.all(), logs)
    assert stored_scores(collector.config.target) == _span_rows(spans.all())


@pytest.mark.parametrize("order", ["spans", "logs"])
def test_without_span_events_the_log_record_brings_the_explanation(collector: Collector, order: str) -> None:
    spans = SpanFactory()
    evaluated = spans.rag(query="with events", scores=SCORES)  # only the source of the events
    bare = spans.rag(query="without events", scores=SCORES, decision="evaluated", events=False)
    logs = Evaluations()
    logs.of_events(bare, evaluated.events)
    _send(collector, order, [bare], logs)
    expected = _span_rows([bare])
    for metric in SCORES:
        assert expected[(hex_span_id(bare), metric)]["explanation"] is None  # the span alone has none
        expected[(hex_span_id(bare), metric)]["explanation"] = f"why {metric}"
    assert stored_scores(collector.config.target) == expected


@pytest.mark.parametrize("order", ["spans", "logs"])
def test_when_the_values_disagree_the_spans_evaluation_wins(collector: Collector, order: str) -> None:
    spans = SpanFactory()
    other = spans.rag(query="another evaluation", scores={"faithfulness": 0.1})
    bare = spans.rag(query="the span's own", scores={"faithfulness": 0.9}, decision="evaluated", events=False)
    logs = Evaluations()
    logs.of_events(bare, other.events)
    _send(collector, order, [bare], logs)
    assert stored_scores(collector.config.target) == _span_rows([bare])


def test_a_log_record_for_a_metric_its_stored_span_lacks_takes_the_spans_route(collector: Collector) -> None:
    spans = SpanFactory()
    rag = spans.rag(query="scored later", scores={"faithfulness": 0.5}, decision="evaluated", route="/ask")
    late = spans.rag(query="only for its events", scores={"answer_relevancy": 0.5})
    _post_spans(collector, [rag])
    logs = Evaluations()
    logs.of_events(rag, late.events)
    _post_logs(collector, logs)
    row = stored_scores(collector.config.target)[(hex_span_id(rag), "answer_relevancy")]
    assert (row["value"], row["route"], row["source"]) == (0.5, "/ask", "log")


def test_an_evaluation_whose_span_never_came_is_kept(collector: Collector) -> None:
    spans = SpanFactory()
    rag = spans.rag(scores={"faithfulness": 0.5})
    logs = Evaluations()
    logs.of(rag)
    _post_logs(collector, logs)
    _post_logs(collector, logs)  # a retry: still one row
    [(key, row)] = stored_scores(collector.config.target).items()
    assert key == (hex_span_id(rag), "faithfulness")
    assert (row["value"], row["route"], row["source"]) == (0.5, None, "log")
