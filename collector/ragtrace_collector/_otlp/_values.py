"""OTLP values as plain Python values, and the JSON and type coercions the rows use."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from typing import Any

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a JSON-safe Python value (bytes as base64, non-finite doubles as strings)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        number = value.double_value
        return number if math.isfinite(number) else str(number)
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return None


def attributes(items: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP key-values as a dict (a repeated key keeps its last value, as the SDKs do)."""
    result: dict[str, Any] = {}
    for kv in items:
        value = kv.value
        # Most attribute values are strings: skip the general conversion for them (the ingest hot path).
        result[kv.key] = value.string_value if value.WhichOneof("value") == "string_value" else any_value(value)
    return result


def json_or_text(text: str) -> Any:
    """Parsed JSON, or the string itself when it is not JSON (kept as the app sent it)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def dumps(value: Any) -> str:
    try:
        # orjson: the JSON columns are most of the decode cost at ingest rates.
        return orjson.dumps(value).decode("utf-8")
    except (orjson.JSONEncodeError, UnicodeDecodeError):
        # e.g. a lone surrogate from OTLP/JSON: escaped JSON is still valid JSON text.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else dumps(value)


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
