"""Decode OTLP logs exports (protobuf or JSON) into ``scores`` rows: the evaluations they carry. Pure: no I/O.

``decode_logs_protobuf`` and ``decode_logs_json`` return a ``LogBatch``. Every ``gen_ai.evaluation.result``
record becomes one ``scores`` row (``_log_rows``); any other record is counted in ``LogBatch.ignored`` and
dropped, never an error. Bad input is handled as for traces (``_decode``): a body whose wire structure is broken,
or that is not JSON or not an export, raises ``OtlpDecodeError`` (a 400, not retried); a record that does not
parse, is nested too deeply, or is an evaluation without its span's ids or its metric's name is rejected alone
and counted in ``LogBatch.rejected`` (the reply's partial success), the other records of the export kept.
"""

from __future__ import annotations

import binascii

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from ragtrace_collector._otlp._batch import OtlpDecodeError, short
from ragtrace_collector._otlp._decode import load_json
from ragtrace_collector._otlp._json_depth import MAX_JSON_DEPTH, holds, too_deep
from ragtrace_collector._otlp._json_ids import json_list, json_log_record, json_message
from ragtrace_collector._otlp._log_batch import LogBatch, LogPart
from ragtrace_collector._otlp._log_rows import log_rows_from_parts, scope_log_rows
from ragtrace_collector._otlp._log_salvage import salvage_log_parts

__all__ = ["RECORD_TOO_DEEP", "decode_logs_json", "decode_logs_protobuf", "log_rows_from_request"]

RECORD_TOO_DEEP = f"log record nested too deeply to decode (past {MAX_JSON_DEPTH} JSON levels or 100 nested messages)"
"""The rejection reason of a record that held a value cut for its depth, or that protobuf found too deep. A log
record reaches the depths a span does (its attributes sit at the same levels, its body above them), so the span
limit holds for it too (``_json_depth``)."""


def decode_logs_protobuf(body: bytes, received_ns: int) -> LogBatch:
    """Decode a binary ``ExportLogsServiceRequest``; see the module docstring for what is kept."""
    try:
        request = ExportLogsServiceRequest.FromString(body)
    except DecodeError:
        batch = LogBatch()
        return log_rows_from_parts(salvage_log_parts(body, batch), batch, received_ns)
    return log_rows_from_request(request, received_ns)


def decode_logs_json(body: bytes, received_ns: int) -> LogBatch:
    """Decode an OTLP/JSON ``ExportLogsServiceRequest`` (hex ids, lowerCamelCase or snake_case keys).

    Invalid UTF-8 is replaced (U+FFFD); a record whose fields have the wrong JSON types, or that is nested deeper
    than ``MAX_JSON_DEPTH`` levels, is rejected on its own.
    """
    batch = LogBatch()
    return log_rows_from_parts(_json_parts(body, batch), batch, received_ns)


def log_rows_from_request(request: ExportLogsServiceRequest, received_ns: int) -> LogBatch:
    """Rows of an already parsed request (the fast path of ``decode_logs_protobuf``)."""
    batch = LogBatch()
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            batch.extend(scope_log_rows(resource_logs.resource, scope_logs.scope, scope_logs.log_records, received_ns))
    return batch


def _json_parts(body: bytes, batch: LogBatch) -> list[LogPart]:
    document, marker = load_json(body)
    if not isinstance(document, dict):
        raise OtlpDecodeError("an OTLP/JSON logs export is a JSON object with a 'resourceLogs' array")
    resource_logs = json_list(document, "resourceLogs", "resource_logs")
    if resource_logs is None:
        raise OtlpDecodeError("'resourceLogs' must be an array")
    parts: list[LogPart] = []
    for rl in resource_logs:
        if not isinstance(rl, dict):
            batch.reject(0, "a resourceLogs item is not an object")
            continue
        resource = json_message(rl.get("resource"), Resource)
        for sl in json_list(rl, "scopeLogs", "scope_logs") or []:
            if not isinstance(sl, dict):
                batch.reject(0, "a scopeLogs item is not an object")
                continue
            scope = json_message(sl.get("scope"), InstrumentationScope)
            good: list[LogRecord] = []
            for raw in json_list(sl, "logRecords", "log_records") or []:
                if marker is not None and holds(raw, marker):
                    batch.reject(1, RECORD_TOO_DEEP)
                    continue
                try:
                    good.append(json_log_record(raw))
                except (json_format.ParseError, ValueError, TypeError, RecursionError, binascii.Error) as exc:
                    batch.reject(1, RECORD_TOO_DEEP if too_deep(exc) else f"log record not decodable: {short(exc)}")
            parts.append((resource or Resource(), scope or InstrumentationScope(), good))
    return parts
