"""Chunk normalisation: every shape a retriever returns becomes Chunk values, and nothing raises."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from ragtrace import semconv
from ragtrace._capture import REDACTION_FAILED, CaptureSettings
from ragtrace._chunks import normalize_chunks, to_text
from ragtrace._record import Chunk

SETTINGS = CaptureSettings()


def chunks_of(value: object, settings: CaptureSettings = SETTINGS) -> list[Chunk]:
    return [c.chunk for c in normalize_chunks(value, settings).chunks]


# Stand-ins with the attribute shapes of the real library types (LangChain, LlamaIndex, Haystack).
@dataclass
class LangChainDocument:
    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __iter__(self) -> Iterator[tuple[str, Any]]:  # pydantic models iterate over their fields
        yield from vars(self).items()


@dataclass
class TextNode:
    text: str
    node_id: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class NodeWithScore:
    node: TextNode
    score: float | None = None


@dataclass
class HaystackDocument:
    content: str
    id: str
    score: float
    meta: dict[str, Any] = field(default_factory=dict)


class Opaque:
    def __str__(self) -> str:
        return "opaque thing"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


class Hostile:
    @property
    def page_content(self) -> str:
        raise RuntimeError("property raised")

    def __str__(self) -> str:
        return "hostile"


def test_plain_strings_in_order() -> None:
    assert chunks_of(["a", "b", "c"]) == [Chunk("a"), Chunk("b"), Chunk("c")]


def test_a_single_string_is_one_chunk() -> None:
    normalized = normalize_chunks("only one", SETTINGS)
    assert [c.chunk.text for c in normalized.chunks] == ["only one"]
    assert normalized.total == 1


def test_bytes_are_decoded_with_invalid_utf8_replaced() -> None:
    [chunk] = chunks_of([b"caf\xc3\xa9 \xff end"])
    assert chunk.text == "café \ufffd end"


def test_dicts_with_each_text_key_and_optional_fields() -> None:
    chunks = chunks_of(
        [
            {"text": "t", "id": 7, "score": 0.5, "metadata": {"source": "a.md"}},
            {"content": "c"},
            {"page_content": "p", "score": "high"},
        ]
    )
    assert chunks[0] == Chunk("t", id="7", score=0.5, metadata={"source": "a.md"})
    assert chunks[1] == Chunk("c")
    assert chunks[2].text == "p" and chunks[2].score is None  # a non-numeric score is not invented


def test_dict_without_text_key_is_kept_as_str_with_its_type() -> None:
    [chunk] = chunks_of([{"body": "x"}])
    assert chunk.text == "{'body': 'x'}"
    assert chunk.metadata == {semconv.DOCUMENT_METADATA_SOURCE_TYPE: "builtins.dict"}


def test_langchain_document_and_scored_pair() -> None:
    doc = LangChainDocument("lc text", {"page": 3}, id="d1")
    chunks = chunks_of([doc, (LangChainDocument("second"), 0.25)])
    assert chunks[0] == Chunk("lc text", id="d1", metadata={"page": 3})
    assert chunks[1] == Chunk("second", score=0.25)


def test_an_iterable_document_alone_is_one_chunk_not_its_fields() -> None:
    [chunk] = chunks_of(LangChainDocument("whole"))
    assert chunk.text == "whole"


def test_llamaindex_node_with_score_and_text_node() -> None:
    chunks = chunks_of([NodeWithScore(TextNode("li text", "n1", {"file": "x"}), 0.9), TextNode("bare", "n2")])
    assert chunks[0] == Chunk("li text", id="n1", score=0.9, metadata={"file": "x"})
    assert chunks[1] == Chunk("bare", id="n2")


def test_haystack_document() -> None:
    [chunk] = chunks_of([HaystackDocument("hay", "h1", 0.3, {"k": "v"})])
    assert chunk == Chunk("hay", id="h1", score=0.3, metadata={"k": "v"})


def test_text_score_tuples_and_numpy_scores() -> None:
    chunks = chunks_of([("a", 0.75), ("b", np.float32(0.5)), ("c", 2)])
    assert [(c.text, c.score) for c in chunks] == [("a", 0.75), ("b", 0.5), ("c", 2.0)]
    assert all(isinstance(c.score, float) for c in chunks)


def test_non_finite_and_boolean_scores_are_absent() -> None:
    chunks = chunks_of(
        [{"text": "a", "score": math.nan}, {"text": "b", "score": True}, {"text": "c", "score": math.inf}]
    )
    assert [c.score for c in chunks] == [None, None, None]


def test_a_tuple_that_is_not_a_pair_with_a_score_becomes_its_str() -> None:
    [chunk] = chunks_of([("a", "b")])
    assert chunk.text == "('a', 'b')"
    assert chunk.metadata[semconv.DOCUMENT_METADATA_SOURCE_TYPE] == "builtins.tuple"


def test_unknown_objects_become_str_with_their_type() -> None:
    [chunk] = chunks_of([Opaque()])
    assert chunk.text == "opaque thing"
    assert chunk.metadata[semconv.DOCUMENT_METADATA_SOURCE_TYPE] == f"{__name__}.Opaque"


def test_none_entries_are_skipped_and_not_counted() -> None:
    normalized = normalize_chunks(["a", None, "b", None], SETTINGS)
    assert [c.chunk.text for c in normalized.chunks] == ["a", "b"]
    assert normalized.total == 2
    assert normalize_chunks(None, SETTINGS).total == 0


def test_values_that_fight_back_are_recorded_not_raised() -> None:
    chunks = chunks_of([Unprintable(), Hostile()])
    assert chunks[0].text == f"<unprintable {__name__}.Unprintable>"
    assert chunks[1].text == "hostile"


def released() -> memoryview:
    view = memoryview(b"secret")
    view.release()
    return view


@pytest.mark.parametrize(
    "value",
    [released(), [released()], {"text": released()}, (released(), 0.5), [{"text": "ok"}, released()]],
    ids=["alone", "in-a-list", "in-a-mapping", "in-a-pair", "after-a-good-one"],
)
def test_a_released_memoryview_is_recorded_as_a_placeholder_not_raised(value: object) -> None:
    texts = [c.text for c in chunks_of(value)]
    assert "<unprintable builtins.memoryview>" in texts
    assert all("secret" not in t for t in texts)


def test_to_text_of_an_unreadable_value_is_a_bounded_placeholder() -> None:
    assert to_text(released(), 1000) == "<unprintable builtins.memoryview>"
    assert to_text(released(), 5) == "<unpr"


def test_a_one_shot_iterator_is_not_consumed() -> None:
    items = iter(["a", "b"])
    normalized = normalize_chunks(items, SETTINGS)
    assert normalized.chunks == () and normalized.total == 0
    assert list(items) == ["a", "b"]


def test_a_reiterable_without_len_is_read() -> None:
    class Results:
        def __iter__(self) -> Iterator[str]:
            return iter(["x", "y"])

    assert [c.text for c in chunks_of(Results())] == ["x", "y"]


def test_chunk_count_bound_counts_everything_keeps_the_first() -> None:
    settings = CaptureSettings(max_record_chunks=3)
    normalized = normalize_chunks([f"c{i}" for i in range(10)], settings)
    assert [c.chunk.text for c in normalized.chunks] == ["c0", "c1", "c2"]
    assert normalized.total == 10


def test_long_text_is_cut_at_the_keep_bound_and_flagged() -> None:
    settings = CaptureSettings(max_attribute_length=10, max_record_chunk_length=20)
    [short, exact, long] = normalize_chunks(["x" * 5, "y" * 20, "z" * 21], settings).chunks
    assert (len(short.chunk.text), short.truncated) == (5, False)
    assert (len(exact.chunk.text), exact.truncated) == (20, False)
    assert (len(long.chunk.text), long.truncated) == (20, True)


def test_huge_bytes_decode_only_a_prefix() -> None:
    settings = CaptureSettings(max_attribute_length=100, max_record_chunk_length=100)
    [captured] = normalize_chunks([b"\xe2\x82\xac" * 5_000_000], settings).chunks  # 15 MB of euro signs
    assert captured.chunk.text == "€" * 100
    assert captured.truncated


def test_to_text_bounds_every_kind() -> None:
    assert to_text("abcdef", 3) == "abc"
    assert to_text(b"abcdef", 3) == "abc"
    assert to_text(12345, 2) == "12"


def test_redaction_runs_on_chunk_text() -> None:
    settings = CaptureSettings(redact=lambda s: s.replace("secret", "[x]"))
    assert chunks_of(["my secret"], settings)[0].text == "my [x]"


def test_redaction_sees_a_pattern_straddling_the_bound_whole() -> None:
    settings = CaptureSettings(
        max_attribute_length=8, max_record_chunk_length=8, redact=lambda s: s.replace("4111-1111", "#")
    )
    [captured] = normalize_chunks(["abcde 4111-1111 tail"], settings).chunks
    assert captured.chunk.text == "abcde # "
    assert "4111" not in captured.chunk.text
    assert captured.truncated


@pytest.mark.parametrize("hook", [lambda s: 1 / 0, lambda s: None])
def test_a_failing_redaction_hook_never_lets_text_through(hook: Any) -> None:
    settings = CaptureSettings(redact=hook)
    assert chunks_of(["private"], settings)[0].text == REDACTION_FAILED


def test_a_collection_failing_part_way_keeps_what_was_read() -> None:
    class Flaky:
        def __iter__(self) -> Iterator[str]:
            yield "first"
            raise RuntimeError("cursor lost")

    normalized = normalize_chunks(Flaky(), SETTINGS)
    assert [c.chunk.text for c in normalized.chunks] == ["first"]
    assert normalized.total == 1


def test_no_chunks_kept_when_the_bound_is_zero() -> None:
    settings = CaptureSettings(max_record_chunks=0)
    assert normalize_chunks("one", settings) == normalize_chunks(["one"], settings)
    assert normalize_chunks("one", settings).total == 1
