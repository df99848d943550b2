"""Decoding real OTLP bytes into store rows, and bad input that must not lose the good spans."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from ragtrace_collector._otlp import (
    SOURCE_APP,
    SOURCE_CARRIER,
    OtlpDecodeError,
    _json_depth,
    decode_json,
    decode_protobuf,
    json_request,
    salvage_request,
)
from ragtrace_collector._otlp._json_depth import MAX_JSON_DEPTH, TOO_DEEP, cut_deep, holds

from ragtrace import semconv
from tests.collector._spans import (
    SpanFactory,
    deep_protobuf_export,
    hex_span_id,
    nested_value_json,
    otlp_bytes,
    otlp_json,
)
from tests.collector._stores import rows


def _otlp_json(spans: list) -> bytes:  # type: ignore[type-arg]
    """OTLP/JSON as the spec writes it: proto3 JSON with hex ids instead of base64."""
    doc = json_format.MessageToDict(encode_spans(spans))

    def fix(obj: object) -> object:
        if isinstance(obj, dict):
            out = {}
            for key, value in obj.items():
                if key in ("traceId", "spanId", "parentSpanId"):
                    import base64

                    out[key] = base64.b64decode(value).hex()
                else:
                    out[key] = fix(value)
            return out
        if isinstance(obj, list):
            return [fix(v) for v in obj]
        return obj

    return json.dumps(fix(doc)).encode()


def test_rag_span_becomes_span_record_and_scores_rows() -> None:
    factory = SpanFactory(service="shop")
    rag = factory.rag(scores={"faithfulness": 0.5, "hallucination": 0.5}, decision="evaluated", route="/ask")
    batch = decode_protobuf(otlp_bytes(factory.all()), received_ns=123)

    assert batch.rejected == 0
    assert len(batch.spans) == 2  # the RAG span and its retriever child
    span_id = hex_span_id(rag)
    span_row = next(row for row in batch.spans if row["span_id"] == span_id)
    assert span_row["service"] == "shop"
    assert span_row["scope"] == semconv.INSTRUMENTATION_SCOPE
    assert span_row["received_ns"] == 123
    assert json.loads(span_row["attributes"])[semconv.INPUT_VALUE] == "What is the capital of Brazil?"
    assert len(json.loads(span_row["events"])) == 2

    (record,) = batch.rag_records
    assert record["span_id"] == span_id
    assert record["route"] == "/ask"
    assert record["decision"] == "evaluated"
    assert record["answer"] == "Brasilia."
    assert record["judge"] == "fake:judge" and record["calls"] == 2 and record["seconds"] == 0.25
    chunks = json.loads(record["chunks"])
    assert [c["content"] for c in chunks] == ["Brazil is a country in South America.", "Its capital is Brasilia."]
    assert chunks[1] == {"id": "doc-1", "content": "Its capital is Brasilia.", "score": 0.9, "metadata": {"rank": 1}}

    scores = {row["metric"]: row for row in batch.scores}
    assert set(scores) == {"faithfulness", "hallucination"}
    assert scores["faithfulness"]["value"] == 0.5
    assert scores["faithfulness"]["label"] == "faithfulness-label"
    assert scores["faithfulness"]["explanation"] == "why faithfulness"
    assert scores["faithfulness"]["source"] == SOURCE_APP
    assert scores["faithfulness"]["route"] == "/ask"
    assert scores["faithfulness"]["time_ns"] == record["time_ns"]


def test_route_falls_back_to_span_name_and_undecided_span_has_null_decision() -> None:
    factory = SpanFactory()
    factory.rag(name="qa_pipeline")
    (record,) = decode_protobuf(otlp_bytes(factory.all()), 0).rag_records
    assert record["route"] == "qa_pipeline"
    assert record["decision"] is None


def test_scores_from_attributes_alone_and_reserved_eval_keys_are_not_metrics() -> None:
    factory = SpanFactory()
    factory.rag(scores={"context_relevance": 0.8}, decision="evaluated", events=False)
    batch = decode_protobuf(otlp_bytes(factory.all()), 0)
    # ragtrace.eval.seconds / judge / decision are numbers or strings but not metrics.
    assert [(row["metric"], row["value"], row["label"]) for row in batch.scores] == [
        ("context_relevance", 0.8, "context_relevance-label")
    ]


def test_carrier_scores_are_stored_against_the_target_span() -> None:
    factory = SpanFactory()
    rag = factory.rag(decision=semconv.DECISION_TIMEOUT)
    factory.carrier(rag, {"faithfulness": 0.25})
    batch = decode_protobuf(otlp_bytes(factory.all()), 0)
    (score,) = batch.scores
    assert score["span_id"] == hex_span_id(rag)
    assert score["source"] == SOURCE_CARRIER
    assert score["value"] == 0.25
    assert score["route"] is None  # filled by the store from the target's record


def test_json_encoding_decodes_to_the_same_rows_as_protobuf() -> None:
    factory = SpanFactory()
    factory.rag(scores={"faithfulness": 1.0}, decision="evaluated")
    spans = factory.all()
    from_pb = decode_protobuf(otlp_bytes(spans), 7)
    from_json = decode_json(_otlp_json(spans), 7)
    assert from_json.rejected == 0
    assert from_json.spans == from_pb.spans
    assert from_json.rag_records == from_pb.rag_records
    assert from_json.scores == from_pb.scores
    assert json_request(_otlp_json(spans)) == encode_spans(spans)


def test_invalid_utf8_in_one_span_rejects_that_span_only() -> None:
    factory = SpanFactory()
    factory.rag(query="first query", answer="MARKERANSWER")
    factory.rag(query="second query", answer="good answer")
    body = otlp_bytes(factory.all())
    bad = body.replace(b"MARKERANSWER", b"MARKER\xff\xfeSWER")
    assert len(bad) == len(body)
    batch = decode_protobuf(bad, 0)
    assert batch.rejected == 1
    assert "invalid UTF-8" in batch.error_message
    assert [r["query"] for r in batch.rag_records] == ["second query"]
    assert len(batch.spans) == 3  # two retriever children and the good RAG span
    assert len(salvage_request(bad).resource_spans[0].scope_spans[0].spans) == 3


def test_unknown_fields_are_ignored() -> None:
    factory = SpanFactory()
    factory.rag()
    body = otlp_bytes(factory.all())
    # Field 99 (length-delimited) at the top level, as a newer sender might add.
    extra = bytes([(99 << 3 | 2) & 0x7F | 0x80, (99 << 3 | 2) >> 7, 3]) + b"abc"
    batch = decode_protobuf(body + extra, 0)
    assert batch.rejected == 0 and len(batch.spans) == 2


def test_broken_wire_structure_raises() -> None:
    factory = SpanFactory()
    factory.rag()
    body = otlp_bytes(factory.all())
    with pytest.raises(OtlpDecodeError):
        decode_protobuf(body[: len(body) // 2], 0)
    with pytest.raises(OtlpDecodeError):
        decode_json(b"{not json", 0)
    with pytest.raises(OtlpDecodeError):
        decode_json(b"[1, 2]", 0)


def test_invalid_ids_are_rejected_with_a_reason() -> None:
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "00" * 16, "spanId": "11" * 8, "name": "zero trace"},
                            {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "fine"},
                            {"traceId": "zz", "spanId": "cd" * 8, "name": "not hex"},
                            {"traceId": "ab" * 16, "spanId": "ce" * 8, "startTimeUnixNano": "soon"},
                        ]
                    }
                ]
            }
        ]
    }
    batch = decode_json(json.dumps(doc).encode(), 0)
    assert [row["name"] for row in batch.spans] == ["fine"]
    assert batch.rejected == 3


def test_huge_attribute_and_non_finite_numbers_are_kept_safely() -> None:
    factory = SpanFactory()
    big = "x" * 3_000_000
    factory.rag(answer=big, scores={"faithfulness": float("nan")})
    batch = decode_protobuf(otlp_bytes(factory.all()), 0)
    (record,) = batch.rag_records
    assert record["answer"] == big
    (score,) = batch.scores
    assert score["value"] is None  # NaN is not a score
    attrs = json.loads(next(r for r in batch.spans if r["span_id"] == record["span_id"])["attributes"])
    assert attrs[semconv.eval_score("faithfulness")] == "nan"


def test_scores_too_large_for_any_scale_are_absent_and_cost_no_write(store_target: str) -> None:
    # Found by test_fuzz_short on PostgreSQL: a mutated export set two scores near 1e308, and the store's
    # per-record average over them overflowed its double, failing the whole batch.
    from ragtrace_collector._store import open_store

    factory = SpanFactory()
    factory.rag(scores={"faithfulness": 1.7e308, "answer_relevancy": -1.7e308, "context_relevance": 3.0})
    batch = decode_protobuf(otlp_bytes(factory.all()), 0)
    values = {row["metric"]: row["value"] for row in batch.scores}
    assert values == {"faithfulness": None, "answer_relevancy": None, "context_relevance": 3.0}
    store = open_store(store_target)
    try:
        store.write(batch)
    finally:
        store.close()
    assert rows(store_target, "SELECT metric, value FROM scores ORDER BY metric") == [
        ("answer_relevancy", None),
        ("context_relevance", 3.0),
        ("faithfulness", None),
    ]


def test_times_past_sqlite_integers_are_rejected_not_crashing_the_store(store_target: str) -> None:
    from ragtrace_collector._store import open_store

    spans = [
        {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "far future", "endTimeUnixNano": str(2**64 - 1)},
        {"traceId": "ab" * 16, "spanId": "ce" * 8, "name": "fine", "endTimeUnixNano": "1700000000000000000"},
    ]
    batch = decode_json(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode(), 0)
    assert [row["name"] for row in batch.spans] == ["fine"] and batch.rejected == 1
    store = open_store(store_target)
    try:
        store.write(batch)
    finally:
        store.close()


@pytest.mark.parametrize("digit", ["\u00b2", "\u0663", "\uff11"])  # superscript two, Arabic-Indic three, fullwidth one
def test_a_non_ascii_digit_in_a_document_key_is_an_ordinary_attribute(digit: str) -> None:
    factory = SpanFactory()
    factory.rag()
    span = factory.all()[-1]
    key = f"{semconv.RETRIEVAL_DOCUMENTS}.{digit}.{semconv.DOCUMENT_CONTENT}"
    request = encode_spans([span])
    request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key=key).value.string_value = "odd"

    batch = decode_protobuf(request.SerializeToString(), 0)

    assert batch.rejected == 0
    assert json.loads(batch.spans[0]["attributes"])[key] == "odd"
    assert len(json.loads(batch.rag_records[0]["chunks"])) == 2  # the real documents, not a third


def test_a_span_that_fails_to_convert_costs_that_span_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtrace_collector import _otlp
    from ragtrace_collector._otlp import _rows

    factory = SpanFactory()
    factory.rag(query="doomed query")
    factory.rag(query="good query")
    body = otlp_bytes(factory.all())
    real = _rows._rag_and_scores

    def failing(batch: _otlp.Batch, attrs: dict, *args: object, **kwargs: object) -> None:  # type: ignore[type-arg]
        real(batch, attrs, *args, **kwargs)  # type: ignore[arg-type]
        if attrs.get(semconv.INPUT_VALUE) == "doomed query":
            raise RuntimeError("a bug in the decoder")

    monkeypatch.setattr(_rows, "_rag_and_scores", failing)
    for batch in (decode_protobuf(body, 0), decode_json(_otlp_json(factory.all()), 0)):
        assert batch.rejected == 1
        assert "RuntimeError: a bug in the decoder" in batch.error_message
        # Nothing of the failed span is kept: neither its span row nor the record it had already added.
        assert [r["query"] for r in batch.rag_records] == ["good query"]
        assert len(batch.spans) == 3
    assert len(salvage_request(body).resource_spans[0].scope_spans[0].spans) == 3
    assert len(json_request(_otlp_json(factory.all())).resource_spans[0].scope_spans[0].spans) == 3


def test_spans_with_bad_ids_or_times_are_not_forwarded_from_a_body_that_parses() -> None:
    factory = SpanFactory()
    factory.rag()
    request = encode_spans(factory.all())
    spans = request.resource_spans[0].scope_spans[0].spans
    zero_trace = spans.add()
    zero_trace.CopyFrom(spans[0])
    zero_trace.trace_id = b"\0" * 16
    short_id = spans.add()
    short_id.CopyFrom(spans[0])
    short_id.span_id = b"\4" * 4
    late = spans.add()
    late.CopyFrom(spans[0])
    late.span_id = b"\5" * 8
    late.end_time_unix_nano = 2**64 - 1
    body = request.SerializeToString()

    assert decode_protobuf(body, 0).rejected == 3
    forwarded = salvage_request(body).resource_spans[0].scope_spans[0].spans
    assert list(forwarded) == list(spans[:2])


def _with_a_deep_span(factory: SpanFactory) -> None:
    """Add a span whose attribute ``deep`` is a placeholder string, to be swapped for a deeply nested value."""
    with factory.tracer.start_as_current_span("deep", attributes={"deep": "PLACEHOLDER"}):
        pass


@pytest.mark.parametrize(("kind", "levels"), [("kvlistValue", 250), ("arrayValue", 250), ("arrayValue", 1000)])
def test_a_json_span_nested_hundreds_of_levels_deep_is_rejected_alone(kind: str, levels: int) -> None:
    # kvlistValue 250 and arrayValue 1000 are past json's recursion limit (the whole body used to be refused);
    # arrayValue 250 parses as JSON and is refused by protobuf's JSON parser for its depth.
    factory = SpanFactory()
    factory.rag(query="kept beside the deep span")
    _with_a_deep_span(factory)
    body = otlp_json(factory.all()).replace('{"stringValue": "PLACEHOLDER"}', nested_value_json(kind, levels))
    batch = decode_json(body.encode(), 0)
    assert batch.rejected == 1
    assert batch.error_message == f"rejected 1 span(s): {TOO_DEEP}"
    assert sorted(row["name"] for row in batch.spans) == ["answer", "retrieve"]
    assert [r["query"] for r in batch.rag_records] == ["kept beside the deep span"]
    forwarded = json_request(body.encode()).resource_spans[0].scope_spans[0].spans
    assert sorted(span.name for span in forwarded) == ["answer", "retrieve"]


def _nested_arrays(levels: int) -> str:
    """An ``arrayValue`` nested ``levels`` times around an empty ``arrayValue``: the deepest JSON per message."""
    return nested_value_json("arrayValue", levels).replace('{"stringValue": "leaf"}', '{"arrayValue": {"values": []}}')


@pytest.mark.parametrize(("levels", "kept"), [(45, True), (48, True), (49, False)])
def test_a_cut_forced_by_one_span_costs_no_span_that_protobuf_accepts(levels: int, kept: bool) -> None:
    # 48 nested arrayValues around an empty one is the deepest span protobuf's JSON parser accepts (100 nested
    # messages); 45 and 48 used to be cut, and rejected, whenever another span of the request forced the cut.
    factory = SpanFactory()
    factory.rag(query="kept beside the deep span")
    with factory.tracer.start_as_current_span("nested", attributes={"nested": "NESTED"}):
        pass
    alone = otlp_json(factory.all()).replace('{"stringValue": "NESTED"}', _nested_arrays(levels))
    _with_a_deep_span(factory)
    body = (
        otlp_json(factory.all())
        .replace('{"stringValue": "NESTED"}', _nested_arrays(levels))
        .replace('{"stringValue": "PLACEHOLDER"}', nested_value_json("kvlistValue", 250))  # past json's limit
    )

    batch = decode_json(body.encode(), 0)
    assert batch.rejected == (1 if kept else 2)
    assert batch.errors == [TOO_DEEP] * batch.rejected
    assert sorted(row["name"] for row in batch.spans) == ["answer", "nested", "retrieve"][:: 1 if kept else 2]
    # The span's verdict is protobuf's, cut or not: the same as in a request with nothing to cut.
    assert decode_json(alone.encode(), 0).rejected == (0 if kept else 1)
    if levels == 48:  # and it reaches the deepest level kept, exactly
        assert cut_deep(alone)[0] == alone and cut_deep(alone, MAX_JSON_DEPTH - 1)[0] != alone


def test_a_protobuf_span_nested_hundreds_of_levels_deep_is_rejected_alone() -> None:
    # The behaviour the JSON decoder matches: protobuf's depth limit refuses the deep span, the salvage the rest.
    factory = SpanFactory()
    factory.rag(query="kept beside the deep span")
    _with_a_deep_span(factory)
    batch = decode_protobuf(deep_protobuf_export(factory.all(), levels=250), 0)
    assert batch.rejected == 1
    assert sorted(row["name"] for row in batch.spans) == ["answer", "retrieve"]


def test_cut_deep_counts_brackets_outside_strings_only() -> None:
    # Level 4 is the deepest kept; "[[" and an escaped quote inside strings do not count.
    text = '{"a": [{"s": "[[\\"{{", "t": [1, [2]]}], "b": "]]"}'
    cut, marker = cut_deep(text, limit=4)
    assert json.loads(cut) == {"a": [{"s": '[["{{', "t": [1, marker]}], "b": "]]"}
    assert holds(json.loads(cut), marker) and not holds(json.loads(text), marker)
    assert cut_deep(text, limit=5)[0] == text
    unclosed, _ = cut_deep('{"a": [[[[', limit=2)
    with pytest.raises(ValueError):
        json.loads(unclosed)  # still broken JSON: a 400, as before


class _ReadingPattern:
    """A compiled pattern that records, for each call, where it began reading and how far it could have read.

    ``search`` of a character class reads up to its match; ``match`` of the depth scan's string pattern (which
    always matches, with nothing after it to backtrack for) reads up to its end and the one character there.
    """

    def __init__(self, pattern: re.Pattern[str], reads: list[tuple[int, int]]) -> None:
        self._pattern = pattern
        self._reads = reads

    def search(self, text: str, pos: int) -> re.Match[str] | None:
        found = self._pattern.search(text, pos)
        self._reads.append((pos, found.end() if found else len(text)))
        return found

    def match(self, text: str, pos: int) -> re.Match[str] | None:
        found = self._pattern.match(text, pos)
        self._reads.append((pos, min(found.end() + 1, len(text)) if found else len(text)))
        return found


def _deep_body_with_a_good_span() -> str:
    factory = SpanFactory()
    factory.rag(query='kept, with "quotes" and \\ escapes')
    _with_a_deep_span(factory)
    return otlp_json(factory.all()).replace('{"stringValue": "PLACEHOLDER"}', nested_value_json("arrayValue", 1000))


@pytest.mark.parametrize(
    ("body", "rejected"),
    [
        # A string that never ends after 2000 levels: its 40,000 escaped quotes were each the start of another
        # scan to the end of the body (82 KB took 16 s; 1 MB, tens of minutes). Now a 400 after one pass.
        ('{"resourceSpans":' + "[" * 2000 + '"' + '\\"' * 40000, None),
        ('{"resourceSpans": [[' + "[" * 2000 + '"a\\', None),  # ends on a lone backslash inside a string
        (_deep_body_with_a_good_span(), 1),
    ],
)
def test_the_depth_scan_reads_the_body_once_and_refuses_an_unterminated_string_at_once(
    monkeypatch: pytest.MonkeyPatch, body: str, rejected: int | None
) -> None:
    reads: list[tuple[int, int]] = []
    monkeypatch.setattr(_json_depth, "_STRUCTURE", _ReadingPattern(_json_depth._STRUCTURE, reads))
    monkeypatch.setattr(_json_depth, "_STRING_REST", _ReadingPattern(_json_depth._STRING_REST, reads))
    if rejected is None:
        with pytest.raises(OtlpDecodeError, match="body is not JSON: Unterminated string starting at"):
            decode_json(body.encode(), 0)
    else:
        assert decode_json(body.encode(), 0).rejected == rejected
    # Every character is read by one call at most: no call reads what an earlier one read.
    assert reads and all(end <= start for (_, end), (start, _) in itertools.pairwise(reads))
    assert sum(end - start for start, end in reads) <= len(body)
