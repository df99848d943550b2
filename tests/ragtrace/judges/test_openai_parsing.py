"""Tolerant JSON reading of judge replies, and the stub server's generic answers to unknown prompts."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from ragtrace.judges.openai.parsing import (
    InvalidReply,
    ReplyParseError,
    align,
    as_bool,
    as_number,
    extract_json,
    index_set,
    json_candidates,
    pick,
    pick_list,
    read_first,
)
from ragtrace.testing._stub_openai import StubOpenAIServer, _instance, _schema_of, embed_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"claims": ["a"]}', {"claims": ["a"]}),
        ("  [1, 2]  ", [1, 2]),
        ('Here you go:\n```json\n{"a": 1}\n```\nThanks!', {"a": 1}),
        ('```\n{"a": 2}\n```', {"a": 2}),
        (
            'The result is {"text": "a } brace and a \\" quote", "n": [1, {"m": 2}]} as asked.',
            {"text": 'a } brace and a " quote', "n": [1, {"m": 2}]},
        ),
        ('noise {not json} then {"ok": true}', {"ok": True}),
        # A bracketed citation in the prose is not the reply: objects come before arrays.
        ('Per the text [1], the claims are:\n{"claims": ["Paris"]}', {"claims": ["Paris"]}),
        ("See [1] and [2]: [3]", [1]),
    ],
)
def test_extract_json_finds_the_object(text: str, expected: object) -> None:
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "no json here", '{"claims": ["unterminated', "{'single': 'quotes'}"])
def test_extract_json_refuses_what_is_not_json(text: str) -> None:
    with pytest.raises(ReplyParseError):
        extract_json(text)


def test_pick_tolerates_key_spelling_but_never_stands_in_another_field() -> None:
    assert pick({"Claims": [1]}, "claims") == [1]
    assert pick({"statements": [2]}, "claims", "statements") == [2]
    with pytest.raises(ReplyParseError, match="none of the fields"):
        pick({"a": 1, "b": 2}, "claims")
    # An item's one key is its index, not the verdict asked for.
    with pytest.raises(ReplyParseError, match="none of the fields"):
        pick({"claim": 1}, "correct", "supported", "verdict")
    with pytest.raises(ReplyParseError, match="expected a JSON object"):
        pick([4], "noncommittal")


def test_pick_list_reads_a_bare_list_or_a_misspelt_wrapper() -> None:
    assert pick_list({"claims": [1]}, "claims") == [1]
    assert pick_list([4], "claims") == [4]
    assert pick_list({"whatever": [3]}, "claims") == [3]  # the one list in the reply is the one asked for
    with pytest.raises(ReplyParseError, match="none of the fields"):
        pick_list({"whatever": 3}, "claims")
    with pytest.raises(ReplyParseError, match="not a list"):
        pick_list({"claims": "a"}, "claims")


def test_candidates_are_top_level_objects_first_and_the_readable_one_wins() -> None:
    text = 'Per [chunk 1] {"note": "x"} the reply: {"claims": ["a", {"inner": 1}]} [2]'
    # The inner object is part of the reply, never a candidate of its own.
    assert json_candidates(text) == [{"note": "x"}, {"claims": ["a", {"inner": 1}]}, [2]]
    assert read_first(json_candidates(text), lambda obj: pick(obj, "claims")) == ["a", {"inner": 1}]
    with pytest.raises(ReplyParseError, match="none of the fields"):
        read_first(json_candidates(text), lambda obj: pick(obj, "questions"))


def test_align_orders_by_index_and_reports_missing() -> None:
    items = [{"claim": 3, "v": "c"}, {"claim": "1", "v": "a"}, {"claim": 2, "v": "b"}]
    assert align(items, 3, key="claim", read=lambda i: i["v"], what="claim") == ["a", "b", "c"]
    # An item the request does not have, or one given twice, is an invalid reply, never dropped.
    with pytest.raises(InvalidReply, match="names claim 9, but the request has claims 1 to 3"):
        align([*items, {"claim": 9, "v": "x"}], 3, key="claim", read=lambda i: i["v"], what="claim")
    with pytest.raises(InvalidReply, match="gives claim 3 twice"):
        align([*items, {"claim": 3, "v": "x"}], 3, key="claim", read=lambda i: i["v"], what="claim")
    # Without indices, items are placed by position.
    assert align([{"v": 1}, {"v": 2}], 2, key="claim", read=lambda i: i["v"], what="claim") == [1, 2]
    with pytest.raises(InvalidReply, match="lacks claim 2 of 2"):
        align([{"claim": 1, "v": 1}], 2, key="claim", read=lambda i: i["v"], what="claim")


def test_loose_scalars() -> None:
    assert [as_bool(v, "x") for v in (True, 1, "yes", "TRUE", 0, "no", "false")] == [True] * 4 + [False] * 3
    with pytest.raises(ReplyParseError):
        as_bool("perhaps", "x")
    assert as_number("0.25", "r", low=0, high=1) == 0.25
    with pytest.raises(ReplyParseError):
        as_number(float("nan"), "r", low=0, high=1)
    with pytest.raises(ReplyParseError):
        as_number(True, "r", low=0, high=1)
    assert index_set([1, "2", 2.0, "#3", "[chunk 3]"], 3, "chunks") == {1, 2, 3}
    for missing in ([1, 7], 0, [4]):  # names no chunk of the request
        with pytest.raises(InvalidReply, match="the request has 1 to 3"):
            index_set(missing, 3, "chunks")
    assert index_set(None, 3, "chunks") == set()
    assert index_set(2, 3, "chunks") == {2}
    for unread in (True, "x", [1, None], [1, "chunk two"]):
        with pytest.raises(ReplyParseError):
            index_set(unread, 3, "chunks")


def test_stub_reads_a_schema_stated_in_the_prompt() -> None:
    schema = {
        "$defs": {
            "Item": {
                "properties": {"statement": {"type": "string"}, "verdict": {"type": "integer"}},
                "type": "object",
            }
        },
        "properties": {"statements": {"items": {"$ref": "#/$defs/Item"}, "type": "array"}},
        "type": "object",
    }
    prompt = (
        f'Return JSON for this schema:\n{json.dumps(schema)}\nExample: {{"statements": []}}\n'
        'Now perform the same with the following input\ninput: {"context": "Paris is in France. It is big."}'
    )
    found = _schema_of({}, prompt)
    assert found == schema  # the top-level schema, not its nested definition
    value = _instance(found, prompt, 0)
    assert value == {
        "statements": [
            {"statement": "Paris is in France.", "verdict": 1},
            {"statement": "It is big.", "verdict": 1},
        ]
    }


def test_stub_embeddings_are_never_zero() -> None:
    # Texts whose hashed words could cancel out must still embed to a unit vector (cosine defined).
    for text in ["Which fact concerns K Polk?", "What does the answer say about White author?", "", "...", "a b"]:
        vector = embed_text(text)
        assert math.isclose(sum(v * v for v in vector), 1.0)


async def test_stub_answers_tool_calls_shaped_by_the_tool_schema() -> None:
    import openai

    tool: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "Answer",
            "parameters": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "noncommittal": {"type": "integer"}},
            },
        },
    }
    with StubOpenAIServer() as stub:
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        try:
            request: dict[str, Any] = {
                "model": "m",
                "messages": [{"role": "user", "content": "Write a question for: Rome is in Italy."}],
                "tools": [tool],
                "tool_choice": {"type": "function", "function": {"name": "Answer"}},
            }
            completion = await client.chat.completions.create(**request)
        finally:
            await client.close()
    calls = completion.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "Answer"
    arguments = json.loads(calls[0].function.arguments)
    assert set(arguments) == {"question", "noncommittal"} and arguments["noncommittal"] == 0
    assert stub.chat_requests[0].prompt_tokens > 0
