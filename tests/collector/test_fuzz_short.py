"""A short fuzz of the OTLP decoder (the long run is bench/fuzz_otlp.py): whatever the bytes, it returns rows
or raises ``OtlpDecodeError``, and what it returns is well-formed."""

from __future__ import annotations

import contextlib
import json
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ragtrace_collector._otlp import Batch, OtlpDecodeError, decode_json, decode_protobuf
from ragtrace_collector._store import open_store

from tests.collector._spans import SpanFactory, otlp_bytes

_factory = SpanFactory()
_factory.rag(scores={"faithfulness": 0.5}, decision="evaluated", route="/ask")
_factory.carrier(_factory.all()[-1], {"hallucination": 0.25})
SEED = otlp_bytes(_factory.all())
HEX = set(string.hexdigits.lower())


def _well_formed(batch: Batch) -> None:
    for row in batch.spans:
        assert len(row["span_id"]) == 16 and set(row["span_id"]) <= HEX
        assert len(row["trace_id"]) == 32 and set(row["trace_id"]) <= HEX
        json.loads(row["attributes"])
        json.loads(row["events"])
    for row in batch.rag_records:
        assert isinstance(json.loads(row["chunks"]), list)
    for row in batch.scores:
        assert row["value"] is None or isinstance(row["value"], float)
    assert batch.rejected >= 0


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The store every example writes to, on each engine (PostgreSQL refuses what SQLite takes, such as NUL)."""
    if request.param == "sqlite":
        opened = open_store(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
    else:
        opened = open_store(request.getfixturevalue("postgres_server").database())
    yield opened
    opened.close()


def _decode(body: bytes, store: Any) -> None:
    with contextlib.suppress(OtlpDecodeError):
        batch = decode_protobuf(body, 0)
        _well_formed(batch)
        store.write(batch)  # whatever decoded, the store takes it


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_random_bytes(store: Any, body: bytes) -> None:
    _decode(body, store)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(SEED) - 1), st.integers(0, 255), st.sampled_from(["set", "insert", "delete"])),
        min_size=1,
        max_size=8,
    ),
    st.integers(0, len(SEED)),
)
def test_mutated_real_exports(store: Any, mutations: list[tuple[int, int, str]], cut: int) -> None:
    body = bytearray(SEED)
    for position, value, how in mutations:
        position %= max(len(body), 1)
        if how == "set" and body:
            body[position] = value
        elif how == "insert":
            body.insert(position, value)
        elif body:
            del body[position]
    _decode(bytes(body), store)
    _decode(bytes(body[:cut]), store)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
_span_keys = st.sampled_from(
    [
        "traceId",
        "spanId",
        "parentSpanId",
        "name",
        "kind",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "attributes",
        "events",
        "links",
        "x",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        _span_keys,
        _json_values | st.text(alphabet="0123456789abcdef", max_size=34) | st.integers(0, 2**64 - 1).map(str),
        max_size=8,
    )
)
def test_json_spans_of_any_shape(store: Any, span: dict[str, object]) -> None:
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    with contextlib.suppress(OtlpDecodeError):
        batch = decode_json(json.dumps(doc).encode(), 0)
        _well_formed(batch)
        store.write(batch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200), st.text(max_size=200))
def test_any_unicode_text_round_trips(query: str, answer: str) -> None:
    factory = SpanFactory()
    factory.rag(query=query, answer=answer)
    (record,) = decode_protobuf(otlp_bytes(factory.all()), 0).rag_records
    assert (record["query"], record["answer"]) == (query, answer)
