"""What a body costs to decode, told before it is decoded: the memory its messages and values will take.

A body's wire bytes say little about what it decodes to: two bytes (``\\x12\\x00``) are an empty span, which
costs a protobuf message, and an OTLP/JSON ``{}`` costs a dict, a message and a row. So each receiver asks
``decoded_cost`` first and holds that against the in-flight budget, and refuses a body that would cost more than
one request may (``_budget.DecodedTooLarge``), before anything is allocated.

``protobuf_cost`` walks the wire format of an OTLP export (varint tags, length-delimited fields) through the
OTLP schema, counting the messages it would allocate (spans, events, links, attributes, values, log records),
without copying a byte; it stops as soon as the count passes the caller's limit. ``json_cost`` counts the JSON
tokens that allocate (``{``, ``[``, ``,``, ``:``) with ``bytes.count`` (C speed, no copy); it counts those inside
strings too, so it errs high, never low. Both are upper estimates by design: a request refused by mistake can be
split by its sender, a body under-counted could take the collector's memory.

The walk is pure Python, one loop turn per field: on a real export it costs some 60% of decoding it (bench/ingest.py
lost a quarter of its throughput to it). ``protobuf_bound`` is a cheaper bound *on the walk's own estimate*: it walks
only down to the spans (or log records), counting them without entering them, and charges every message below
with one C pass over the body (``bytes.translate``): every message the walk counts starts with a one-byte tag (all
OTLP message fields are numbered below 16) or with an overlong tag whose first byte is that byte with its high bit
set, so counting those byte values anywhere in the body, in strings too, can only count more. Receivers take the
bound when it fits, and walk only when it does not (a body near the limit, a budget nearly full).

The per-item figures were measured (tracemalloc and RSS) on this collector's decoding of real exports and of
the worst shapes (empty spans, empty attributes, ``[{},{},...]``), rounded up.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BYTE_COST",
    "JSON_BYTE_COST",
    "JSON_CONTAINER_COST",
    "JSON_VALUE_COST",
    "MESSAGE_COST",
    "SPAN_COST",
    "decoded_cost",
    "json_cost",
    "protobuf_bound",
    "protobuf_cost",
]

BYTE_COST = 2
"""Decoded bytes per wire byte of protobuf: the message's copy of its strings and bytes, the rows' copies."""

MESSAGE_COST = 64
"""Decoded bytes of one message (an attribute, a value, an event, a link, a scope, a resource, a data point).
Measured: 52 bytes per empty attribute (``\x4a\x00``) of a span."""

SPAN_COST = 1200
"""Decoded bytes of one span or log record: its message and its row (a dict of some 20 keys). Measured: 1,030
bytes per smallest valid span (ids and times only, 48 wire bytes); 173 per empty span (rejected, no row)."""

JSON_BYTE_COST = 4
"""Decoded bytes per wire byte of OTLP/JSON: the text, the parsed strings, the message's and the rows' copies."""

JSON_CONTAINER_COST = 600
"""Decoded bytes of one JSON object or array: the dict or list, and the protobuf message it becomes."""

JSON_VALUE_COST = 100
"""Decoded bytes of one JSON value or key (a ``,`` or ``:``): its Python object and its slot."""

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_MAX_DEPTH = 110
"""Messages nested deeper than protobuf parses (100) are walked no further: the decoder refuses them unread."""

# The OTLP messages that allocate, by the field numbers of their message-typed fields. A field not listed is
# counted by its bytes only (strings, bytes, numbers); an unknown field too. "span" and "log" are the items that
# become rows.
_SCHEMA: dict[str, dict[int, str]] = {
    "traces": {1: "resource_spans"},
    "resource_spans": {1: "resource", 2: "scope_spans"},
    "scope_spans": {1: "scope", 2: "span"},
    "span": {9: "key_value", 11: "event", 13: "link", 15: "message"},
    "event": {3: "key_value"},
    "link": {4: "key_value"},
    "logs": {1: "resource_logs"},
    "resource_logs": {1: "resource", 2: "scope_logs"},
    "scope_logs": {1: "scope", 2: "log"},
    "log": {5: "any_value", 6: "key_value"},
    "resource": {1: "key_value"},
    "scope": {3: "key_value"},
    "key_value": {2: "any_value"},
    "any_value": {5: "array_value", 6: "kvlist_value"},
    "array_value": {1: "any_value"},
    "kvlist_value": {1: "key_value"},
    "message": {},
    # Metrics exports are parsed whole to count their data points (the reply says none is stored). Their data
    # point kinds number attributes differently (7, 9, 1); a field that is in fact packed numbers is walked as
    # attributes too, which can only count high.
    "metrics": {1: "resource_metrics"},
    "resource_metrics": {1: "resource", 2: "scope_metrics"},
    "scope_metrics": {1: "scope", 2: "metric"},
    "metric": {5: "points", 7: "points", 9: "points", 10: "points", 11: "points"},
    "points": {1: "point"},
    "point": {1: "key_value", 5: "message", 7: "key_value", 8: "message", 9: "key_value"},
}
_ITEMS = frozenset({"span", "log"})


def _compiled() -> dict[str, dict[int, tuple[Any, int]]]:
    """``_SCHEMA`` with each child's schema and cost resolved once (the walk's inner loop looks up one dict)."""
    compiled: dict[str, dict[int, tuple[Any, int]]] = {name: {} for name in _SCHEMA}
    for name, fields in _SCHEMA.items():
        for number, child in fields.items():
            compiled[name][number] = (compiled[child], SPAN_COST if child in _ITEMS else MESSAGE_COST)
    return compiled


_COMPILED = _compiled()

# The walk down to the items only, which cost SPAN_COST each; the messages around and under them are charged by
# ``_TAG_BYTES`` instead (so cost nothing here).
_SHALLOW: dict[str, dict[int, tuple[Any, int]]] = {name: {} for name in ("traces", "logs", "metrics")}
_SHALLOW["traces"][1] = ({2: ({2: ({}, SPAN_COST)}, 0)}, 0)  # resource_spans -> scope_spans -> span
_SHALLOW["logs"][1] = ({2: ({2: ({}, SPAN_COST)}, 0)}, 0)  # resource_logs -> scope_logs -> log


def _tag_bytes() -> bytes:
    """The bytes that can begin the tag of a message-typed OTLP field: ``field << 3 | 2``, written in one byte or
    overlong (the same low bits, the continuation bit set)."""
    numbers = {number for fields in _SCHEMA.values() for number in fields}
    assert max(numbers) < 16, "a message field numbered 16 or more has a two-byte tag: count it differently"
    tags = {number << 3 | _LEN for number in numbers}
    return bytes(sorted(tags | {tag | 0x80 for tag in tags}))


_TAG_BYTES = _tag_bytes()
_NOT_TAG_BYTES = bytes(value for value in range(256) if value not in _TAG_BYTES)


def protobuf_cost(body: bytes, *, export: str = "traces", stop_above: int | None = None) -> int:
    """The estimated decoded size, in bytes, of ``body`` as an export of ``export`` (``"traces"``, ``"logs"`` or
    ``"metrics"``: an ``ExportTraceServiceRequest``, ...); at least ``BYTE_COST * len(body)``.

    Allocates nothing per field: the walk keeps offsets into ``body``. A broken structure ends the walk of its
    message (the decoder refuses or salvages it; its bytes are still counted). With ``stop_above``, returns as
    soon as the estimate passes it (a value above ``stop_above``, not the full count).
    """
    return _walk(body, _COMPILED[export], stop_above)


def _walk(body: bytes, schema: dict[int, tuple[Any, int]], stop_above: int | None) -> int:
    """``BYTE_COST`` per byte of ``body`` plus the cost of every message-typed field ``schema`` (compiled, as
    ``_COMPILED``'s) leads to, walked down from the top; past ``stop_above``, returns at once."""
    cost = BYTE_COST * len(body)
    limit = stop_above if stop_above is not None else -1
    # A stack of (schema of the message, position, end) of the messages being walked.
    stack: list[tuple[dict[int, tuple[Any, int]], int, int]] = [(schema, 0, len(body))]
    while stack:
        schema, pos, end = stack.pop()
        while pos < end:
            # The tag: a varint (field number, wire type); one byte for every OTLP field, so that comes first.
            key = body[pos]
            pos += 1
            if key & 0x80:
                key, pos = _varint(body, pos - 1, end)
                if pos > end:
                    break  # truncated: leave this message
            wire = key & 7
            if wire == _LEN:
                size = body[pos] if pos < end else 0x80
                pos += 1
                if size & 0x80:
                    size, pos = _varint(body, pos - 1, end)
                if pos + size > end:
                    break
                child = schema.get(key >> 3)
                if child is not None:
                    cost += child[1]
                    if 0 <= limit < cost:
                        return cost
                    if child[0] and len(stack) < _MAX_DEPTH:  # a message with no message fields: skipped whole
                        # Walk the child next, then come back here: push this message's rest first.
                        stack.append((schema, pos + size, end))
                        schema, end = child[0], pos + size
                        continue
                pos += size
            elif wire == _VARINT:
                while pos < end and body[pos] & 0x80:
                    pos += 1
                pos += 1
            elif wire == _I64:
                pos += 8
            elif wire == _I32:
                pos += 4
            else:
                break  # a wire type protobuf refuses: the decoder reports it
    return cost


def protobuf_bound(body: bytes, *, export: str = "traces", stop_above: int | None = None) -> int:
    """An upper bound on ``protobuf_cost(body, export=export)``, at a small part of its cost (see the module
    docstring): the spans or log records counted by a walk that does not enter them, and ``MESSAGE_COST`` for
    every byte of the body that could begin a message's tag. With ``stop_above``, may return as soon as the bound
    passes it."""
    tags = len(body.translate(None, _NOT_TAG_BYTES))  # one pass in C: the bytes kept are few
    cost = MESSAGE_COST * tags
    if export not in ("traces", "logs"):
        return cost + BYTE_COST * len(body)  # a metrics export has no items
    if stop_above is not None and cost > stop_above:
        return cost + BYTE_COST * len(body)
    limit = stop_above - cost if stop_above is not None else None
    return cost + _walk(body, _SHALLOW[export], limit)


def _varint(body: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it; a position past ``end`` when it is truncated."""
    value = 0
    shift = 0
    while pos < end and shift <= 63:
        byte = body[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    return value, end + 1


def json_cost(body: bytes) -> int:
    """The estimated decoded size, in bytes, of ``body`` as an OTLP/JSON export: an upper estimate (see the module
    docstring), at least ``JSON_BYTE_COST * len(body)``."""
    containers = body.count(b"{") + body.count(b"[")
    values = body.count(b",") + body.count(b":")
    return JSON_BYTE_COST * len(body) + JSON_CONTAINER_COST * containers + JSON_VALUE_COST * values


def decoded_cost(body: bytes, *, export: str, as_json: bool, stop_above: int | None = None, quick: bool = False) -> int:
    """``json_cost`` or ``protobuf_cost`` of ``body``, an export of ``export`` (traces, logs, metrics); with
    ``quick``, ``protobuf_bound`` instead (higher, cheaper) for a protobuf body."""
    if as_json:
        return json_cost(body)
    if quick:
        return protobuf_bound(body, export=export, stop_above=stop_above)
    return protobuf_cost(body, export=export, stop_above=stop_above)
