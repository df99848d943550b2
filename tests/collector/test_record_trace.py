"""The record page shows the record's trace beside its scores: every stored span as a waterfall, the app's own
model calls with their tokens and cost, and the judge's spend; on both engines, fed by the SDK's own exporter."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import SpanKind, Status, StatusCode
from ragtrace_collector._otlp import decode_protobuf
from ragtrace_collector._triage._prices import price_of
from ragtrace_collector._triage._trace_html import llm_calls, trace_section

from ragtrace import semconv
from ragtrace._sampling import DEFAULT_PRICES, Price
from tests.collector._spans import SpanFactory, hex_span_id, otlp_bytes, rag_attributes, start_collector

HOSTILE = '<script>alert("span")</script>'


def _traced_request(factory: SpanFactory) -> tuple[Any, Any]:
    """A web request whose handler retrieved, answered (the RAG span), called a model, and failed a side step.
    Returns the RAG span and the model-client span."""
    tracer = factory.tracer
    with tracer.start_as_current_span("POST /ask", kind=SpanKind.SERVER):
        rag = factory.rag(query="What is the capital of Brazil?", decision="evaluated", scores={"faithfulness": 0.9})
        with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT) as llm:
            llm.set_attributes({
                semconv.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                semconv.GEN_AI_RESPONSE_MODEL: "gpt-4o-mini-2024-07-18",
                semconv.GEN_AI_USAGE_INPUT_TOKENS: 1200,
                semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 300,
                "note": HOSTILE,
            })  # fmt: skip
        with tracer.start_as_current_span(HOSTILE) as failed:
            failed.set_status(Status(StatusCode.ERROR, "cache <b>down</b>"))
    spans = factory.all()
    return rag, next(s for s in spans if s.name == "chat gpt-4o-mini")


def _page_after_export(store_target: str, spans: list[Any], path: str) -> str:
    """The page at ``path`` of a collector on ``store_target`` that received ``spans`` from the SDK's exporter."""
    collector = start_collector(store_target, page=True)
    try:
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{collector.http_port}/v1/traces")
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        return httpx.get(f"http://127.0.0.1:{collector.http_port}{path}", timeout=30).text
    finally:
        collector.stop()


def test_the_record_page_draws_the_trace_and_what_its_model_calls_cost(store_target: str) -> None:
    factory = SpanFactory()
    rag, llm = _traced_request(factory)
    page = _page_after_export(store_target, factory.all(), f"/records/{hex_span_id(rag)}")
    waterfall = page[page.index('<div class="waterfall">') :]
    names = re.findall(r'<span class="sname" style="padding-left:([\d.]+)rem">([^<]*)', waterfall)
    # Parents before children, siblings by start; depth by indentation.
    assert names == [
        ("0.0", "POST /ask"),
        ("1.1", "answer"),
        ("2.2", "retrieve"),
        ("1.1", "chat gpt-4o-mini"),
        ("1.1", "&lt;script&gt;alert(&#34;span&#34;)&lt;/script&gt;"),  # escaped as text (Jinja2's &#34;)
    ]
    assert waterfall.count("← this record") == 1 and f'class="span focus" id="span-{hex_span_id(rag)}"' in waterfall
    assert '<span class="chip bad">error</span> cache &lt;b&gt;down&lt;/b&gt;' in waterfall
    assert HOSTILE not in page  # span text is text: never markup
    # The model call priced by its response model (a dated name of a listed model), the judge beside it.
    expected = DEFAULT_PRICES["gpt-4o-mini"].cost(1200, 300)
    row = re.search(rf'href="#span-{hex_span_id(llm)}">chat gpt-4o-mini</a></td><td>([^<]*)</td>'
                    r"<td>(\d+)</td><td>(\d+)</td><td>([^<]*)</td>", page)  # fmt: skip
    assert row is not None and row.groups() == ("gpt-4o-mini-2024-07-18", "1200", "300", f"${expected:.6f}")
    judge = re.search(
        r"<td>the judge \(([^,]*), (\d+) call\(s\)\)</td><td></td><td>(\d+)</td><td>(\d+)</td><td>([^<]*)</td>", page
    )
    assert judge is not None and judge.groups() == ("fake:judge", "2", "0", "0", "no price")  # as the span says


def test_a_record_without_stored_spans_says_so() -> None:
    section = trace_section([], {"span_id": "a" * 16}, cut=False)
    assert "No span of this trace is stored here" in section


@pytest.mark.parametrize(
    ("model", "priced_as"),
    [
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # the longest listed name it starts with, not gpt-4o
        ("openai:gpt-4.1-nano", "gpt-4.1-nano"),
        ("claude-opus", None),
        (None, None),
    ],
)
def test_a_model_is_priced_by_its_own_entry_or_the_longest_it_starts_with(
    model: str | None, priced_as: str | None
) -> None:
    assert price_of(model, DEFAULT_PRICES) == (DEFAULT_PRICES[priced_as] if priced_as else None)


def test_calls_read_either_conventions_tokens_and_unpriced_models_say_so() -> None:
    spans: list[dict[str, Any]] = [
        {"span_id": "1", "name": "llm", "attributes": {semconv.LLM_MODEL_NAME: "local-7b",
                                                        semconv.LLM_TOKEN_COUNT_PROMPT: 10,
                                                        semconv.LLM_TOKEN_COUNT_COMPLETION: 5}},
        {"span_id": "2", "name": "retrieve", "attributes": {}},
        {"span_id": "3", "name": "chat", "attributes": {semconv.GEN_AI_REQUEST_MODEL: "mine",
                                                         semconv.GEN_AI_USAGE_INPUT_TOKENS: True}},
    ]  # fmt: skip
    calls = llm_calls(spans, {"local-7b": Price(1.0, 2.0)})
    assert [(c.span_id, c.model, c.prompt_tokens, c.completion_tokens) for c in calls] == [("1", "local-7b", 10, 5)]
    assert calls[0].usd == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    assert llm_calls(spans, {})[0].usd is None


def test_a_cycle_of_parents_in_a_hostile_trace_shows_each_span_once() -> None:
    spans = [
        {"span_id": "a", "parent_span_id": "b", "name": "a", "kind": 1, "service": "s", "start_ns": 1, "end_ns": 5,
         "status_code": 0, "status_message": None, "attributes": {}},
        {"span_id": "b", "parent_span_id": "a", "name": "b", "kind": 1, "service": "s", "start_ns": 2, "end_ns": 4,
         "status_code": 0, "status_message": None, "attributes": {}},
        {"span_id": "c", "parent_span_id": None, "name": "c", "kind": 1, "service": "s", "start_ns": 0, "end_ns": 9,
         "status_code": 0, "status_message": None, "attributes": {}},
    ]  # fmt: skip
    section = trace_section(spans, {"span_id": "c"}, cut=False, prices={})
    # a and b are each other's parent, so no root reaches them: each is still drawn once.
    drawn = re.findall(r'<span class="sname" style="padding-left:([\d.]+)rem">([^<]*)', section)
    assert drawn == [("0.0", "c"), ("0.0", "a"), ("1.1", "b")]


def test_the_costs_page_says_what_the_app_and_the_judge_spent_a_day_in_dollars(store_target: str) -> None:
    factory = SpanFactory()
    _traced_request(factory)
    _traced_request(factory)  # two requests: two model calls of 1200 + 300 tokens
    page = _page_after_export(store_target, factory.all(), "/costs")
    expected = DEFAULT_PRICES["gpt-4o-mini"].cost(2 * 1200, 2 * 300)
    rows = re.findall(r"<tr><td>([^<]*)</td><td>(app|judge)</td><td>([^<]*)</td><td>(\d+)</td><td>(\d+)</td>"
                      r"<td>(\d+)</td><td>([^<]*)</td></tr>", page)  # fmt: skip
    assert rows == [
        ("shop", "app", "gpt-4o-mini-2024-07-18", "2", "2400", "600", f"${expected:.6f}"),
        ("shop", "judge", "fake:judge", "4", "0", "0", "no price"),
    ]
    assert re.search(
        rf"<tr><th>all days</th><th>\${expected:.6f}</th><th>\$0\.000000</th><th>\${expected:.6f}</th>", page
    )
    assert "No price for fake:judge" in page


def test_a_record_not_scored_says_why_and_shows_no_metric_legend_or_empty_answer(store_target: str) -> None:
    factory = SpanFactory()
    attributes = rag_attributes("What is my balance?", [], "", decision=semconv.DECISION_NOT_SCORED)
    attributes[semconv.EVAL_NOT_SCORED_REASON] = semconv.NOT_SCORED_NO_CONTENT
    with factory.tracer.start_as_current_span("answer", attributes=attributes) as span:
        pass
    batch = decode_protobuf(otlp_bytes(factory.all()), 0)
    assert batch.scores == []  # the reason is not a metric named "not_scored"
    assert [r["reason"] for r in batch.rag_records] == [semconv.NOT_SCORED_NO_CONTENT]
    page = _page_after_export(store_target, factory.all(), f"/records/{hex_span_id(span)}")
    assert '<p class="notice">Not scored: its text was not captured (content capture off, or redacted).</p>' in page
    assert "No answer was captured" in page and 'class="answer"' not in page
    assert "Claims:" not in page
    assert "<tr><td>not_scored</td>" not in page  # no score row (the span's own attributes still say its decision)
    assert "No scores stored for this record." in page


def test_the_cost_query_reads_the_model_calls_index_not_every_span(tmp_path: Any) -> None:
    from ragtrace_collector._store import open_store
    from ragtrace_collector._store.migrations import MODEL_CALLS_INDEX
    from ragtrace_collector._store.triage import read_costs
    from ragtrace_collector._triage._filters import RecordFilter

    store = open_store(tmp_path / "c.db")
    plans: list[str] = []

    def costs(conn: Any) -> dict[str, Any]:
        conn.set_trace_callback(lambda sql: plans.append(sql) if "input_tokens" in sql else None)
        try:
            return read_costs(conn, RecordFilter(since_ns=0))
        finally:
            conn.set_trace_callback(None)

    store.read(costs)
    store.close()
    (sql,) = plans  # as run, its values written in
    store = open_store(tmp_path / "c.db")
    plan = store.read(lambda conn: " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql)))
    store.close()
    assert MODEL_CALLS_INDEX in plan, plan
