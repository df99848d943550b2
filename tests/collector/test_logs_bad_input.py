"""Bad logs exports: a body that is not OTLP gets the same replies as a bad trace export (400, 401, 413, 415, gRPC
``INVALID_ARGUMENT``/``UNAUTHENTICATED``); a bad record inside a sound export is rejected alone (partial success)
or, for a score that is not a number, stored without its value and named in the reply. The receiver keeps
serving throughout."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from ragtrace_collector._grpc import LOGS_SERVICE_NAME
from ragtrace_collector._otlp._logs import RECORD_TOO_DEEP
from ragtrace_collector._server import Collector

from ragtrace import semconv
from tests.collector._spans import SpanFactory, grpc_export, hex_span_id, nested_value_json, start_collector
from tests.collector.test_logs_receiver import Evaluations, logs_bytes, logs_json, post_logs, stored_scores

MALFORMED = b"\x0a\xff\xff\xff\xff\x0f"  # a length that runs past the end of the body
PB = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}


@pytest.fixture
def collector(store_target: str) -> Iterator[Collector]:
    running = start_collector(store_target, max_body_bytes=1024 * 1024)
    yield running
    running.stop()


def _grpc_export(port: int, body: bytes, metadata: tuple[tuple[str, str], ...] = ()) -> ExportLogsServiceResponse:
    reply: ExportLogsServiceResponse = grpc_export(
        port, LOGS_SERVICE_NAME, body, ExportLogsServiceResponse.FromString, metadata
    )
    return reply


def _one_evaluation(metric: str = "faithfulness") -> tuple[str, Evaluations]:
    rag = SpanFactory().rag(scores={metric: 0.5})
    logs = Evaluations()
    logs.of(rag)
    return hex_span_id(rag), logs


def _set(attributes: Any, key: str, value: str | float | None) -> None:
    """Replace (or, with None, remove) the value of ``key`` among a record's protobuf attributes."""
    for kv in attributes:
        if kv.key == key:
            if value is None:
                attributes.remove(kv)
            elif isinstance(value, float):
                kv.value.double_value = value
            else:
                kv.value.string_value = value
            return
    raise AssertionError(f"no attribute {key}")


def _mixed_export() -> tuple[ExportLogsServiceRequest, list[str]]:
    """Six evaluation records: good, of no span, nameless, a text score, a NaN score, invalid UTF-8 (marked)."""
    spans = SpanFactory()
    logs = Evaluations()
    rags = [spans.rag(query=f"q{i}", scores={"faithfulness": 0.5}) for i in range(6)]
    for rag in rags:
        logs.of(rag)
    request = encode_logs(logs.records())
    records = request.resource_logs[0].scope_logs[0].log_records
    by_span = {record.span_id.hex(): record for record in records}
    _good, nospan, nameless, text, nan, broken = (by_span[hex_span_id(rag)] for rag in rags)
    nospan.span_id = b""
    _set(nameless.attributes, semconv.GEN_AI_EVALUATION_NAME, None)
    _set(text.attributes, semconv.GEN_AI_EVALUATION_SCORE_VALUE, "high")
    _set(nan.attributes, semconv.GEN_AI_EVALUATION_SCORE_VALUE, float("nan"))
    _set(broken.attributes, semconv.GEN_AI_EVALUATION_EXPLANATION, "ZZZZ")
    return request, [hex_span_id(rag) for rag in rags]


def _check_mixed(reply: ExportLogsServiceResponse, collector: Collector, ids: list[str]) -> None:
    assert reply.partial_success.rejected_log_records == 3
    message = reply.partial_success.error_message
    assert message.startswith("rejected 3 log record(s): ")
    assert "not decodable" in message  # the invalid UTF-8
    assert "span id" in message and semconv.GEN_AI_EVALUATION_NAME in message
    assert "'high' is not a finite number: stored without a value" in message
    stored = stored_scores(collector.config.target)
    assert set(stored) == {(ids[0], "faithfulness"), (ids[3], "faithfulness"), (ids[4], "faithfulness")}
    assert stored[(ids[0], "faithfulness")]["value"] == 0.5
    # A score that is not a finite number is no score; the rest of the evaluation is kept.
    for span_id in (ids[3], ids[4]):
        row = stored[(span_id, "faithfulness")]
        assert (row["value"], row["label"], row["explanation"]) == (None, "faithfulness-label", "why faithfulness")


def test_bad_records_cost_only_themselves_over_http(collector: Collector) -> None:
    request, ids = _mixed_export()
    body = request.SerializeToString().replace(b"ZZZZ", b"Z\xffZZ")
    reply = post_logs(collector, body)
    assert reply.status_code == 200
    _check_mixed(ExportLogsServiceResponse.FromString(reply.content), collector, ids)


def test_bad_records_cost_only_themselves_over_grpc(collector: Collector) -> None:
    assert collector.grpc_port is not None
    request, ids = _mixed_export()
    body = request.SerializeToString().replace(b"ZZZZ", b"Z\xffZZ")
    _check_mixed(_grpc_export(collector.grpc_port, body), collector, ids)


def test_a_nameless_evaluation_in_json_is_rejected_and_a_deep_record_alone(collector: Collector) -> None:
    span_id, logs = _one_evaluation()
    _, nameless = _one_evaluation()
    _, deep = _one_evaluation()
    document = logs_json(logs.records() + nameless.records() + deep.records())
    _good, bad, deep_record = document["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    bad["attributes"] = [a for a in bad["attributes"] if a["key"] != semconv.GEN_AI_EVALUATION_NAME]
    deep_record["attributes"].append({"key": "deep", "value": "DEEP"})
    text = json.dumps(document).replace('"DEEP"', nested_value_json("kvlistValue", 300))
    reply = post_logs(collector, text, {"content-type": "application/json"})
    assert reply.status_code == 200
    partial = reply.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "2"
    assert RECORD_TOO_DEEP in partial["errorMessage"]
    assert set(stored_scores(collector.config.target)) == {(span_id, "faithfulness")}


_GZIP = {"content-type": "application/x-protobuf", "content-encoding": "gzip"}


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (MALFORMED, PB, 400, "malformed OTLP body: length-delimited field runs past the end"),
        (b"not json at all", JSON, 400, "malformed OTLP body: body is not JSON"),
        (b"[1, 2, 3]", JSON, 400, "malformed OTLP body: an OTLP/JSON logs export is a JSON object"),
        (b'{"resourceLogs": 5}', JSON, 400, "malformed OTLP body: 'resourceLogs' must be an array"),
        (b"\x1f\x8b\x08\x00garbage", _GZIP, 400, "gzip body is truncated"),
        (gzip.compress(b"\0" * (2 * 1024 * 1024)), _GZIP, 413, "over the 1048576-byte limit"),
        (b"{}", {"content-type": "text/plain"}, 415, "is not supported"),
        (b"{}", {**JSON, "content-encoding": "br"}, 415, "is not supported"),
    ],
)
def test_a_body_that_is_not_a_logs_export_is_refused_as_for_traces(
    collector: Collector, body: bytes, headers: dict[str, str], status: int, says: str
) -> None:
    reply = post_logs(collector, body, headers)
    assert reply.status_code == status
    if headers["content-type"] == JSON["content-type"]:
        refusal = json_format.Parse(reply.content, status_pb2.Status())
    else:
        refusal = status_pb2.Status.FromString(reply.content)
    assert refusal.code == (code_pb2.RESOURCE_EXHAUSTED if status == 413 else code_pb2.INVALID_ARGUMENT)
    assert says in refusal.message
    # Still serving, and nothing half-stored.
    span_id, logs = _one_evaluation()
    assert post_logs(collector, logs_bytes(logs.records())).status_code == 200
    assert set(stored_scores(collector.config.target)) == {(span_id, "faithfulness")}


def test_a_malformed_body_over_grpc_is_invalid_argument(collector: Collector) -> None:
    assert collector.grpc_port is not None
    with pytest.raises(grpc.RpcError) as caught:
        _grpc_export(collector.grpc_port, MALFORMED)
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    span_id, logs = _one_evaluation()
    assert not _grpc_export(collector.grpc_port, logs_bytes(logs.records())).HasField("partial_success")
    assert set(stored_scores(collector.config.target)) == {(span_id, "faithfulness")}


def test_with_a_token_both_receivers_need_it_for_logs(store_target: str) -> None:
    running = start_collector(store_target, token="s3cret")
    try:
        assert running.grpc_port is not None
        span_id, logs = _one_evaluation()
        body = logs_bytes(logs.records())
        refused = post_logs(running, body)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        with pytest.raises(grpc.RpcError) as caught:
            _grpc_export(running.grpc_port, body)
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert stored_scores(running.config.target) == {}
        assert post_logs(running, body, {**PB, "authorization": "bearer s3cret"}).status_code == 200
        assert _grpc_export(running.grpc_port, body, (("authorization", "Bearer s3cret"),)) is not None
        assert set(stored_scores(running.config.target)) == {(span_id, "faithfulness")}
    finally:
        running.stop()
