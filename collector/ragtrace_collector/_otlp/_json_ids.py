"""OTLP/JSON helpers: OTLP/JSON differs from proto3 JSON in its ids (hex, not base64) and accepts both key styles."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_ID_KEYS = frozenset({"traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"})


def json_list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any] | None:
    value = obj.get(camel, obj.get(snake, []))
    if value is None:
        return []
    return value if isinstance(value, list) else None


def json_message(value: Any, cls: Any) -> Any:
    if not isinstance(value, dict):
        return None
    try:
        return json_format.ParseDict(value, cls(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        return None


def _hex_to_b64(value: Any) -> Any:
    if not isinstance(value, str) or value == "":
        return value
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def _fix_ids(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: (_hex_to_b64(v) if k in _ID_KEYS else v) for k, v in obj.items()}


def json_span(raw: Any) -> Span:
    if not isinstance(raw, dict):
        raise ValueError("a span is not a JSON object")
    fixed = _fix_ids(raw)
    for key in ("links",):
        links = fixed.get(key)
        if isinstance(links, list):
            fixed[key] = [_fix_ids(link) if isinstance(link, dict) else link for link in links]
    span = Span()
    json_format.ParseDict(fixed, span, ignore_unknown_fields=True)
    return span


def json_log_record(raw: Any) -> LogRecord:
    """An OTLP/JSON log record (hex ``traceId``/``spanId``) as a protobuf message; raise when it does not parse."""
    if not isinstance(raw, dict):
        raise ValueError("a log record is not a JSON object")
    record = LogRecord()
    json_format.ParseDict(_fix_ids(raw), record, ignore_unknown_fields=True)
    return record
