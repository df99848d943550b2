"""What a hostile reply can cost: the JSON search is one pass and bounded, the deadline covers it,
JSON steps ask for a bounded reply. Work is counted (regex searches, tokens), never timed."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragtrace.judges import JudgeError
from ragtrace.judges.openai import OpenAIJudge, parsing
from ragtrace.judges.openai.parsing import MAX_SEARCH_TOKENS, ReplyDeadline, ReplyParseError, json_candidates
from ragtrace.judges.openai.transport import JSON_MAX_TOKENS
from ragtrace.testing._stub_openai import StubOpenAIServer, StubReply
from tests.ragtrace.judges import hostile_server as hs
from tests.ragtrace.judges.conftest import MakeJudge


class _Counting:
    """A compiled pattern whose ``search`` calls are counted (the scan's unit of work)."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls = 0

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.calls += 1
        return self.pattern.search(text, pos)


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_Counting]]:
    counters = [_Counting(parsing._OPENER), _Counting(parsing._TOKEN)]
    monkeypatch.setattr(parsing, "_OPENER", counters[0])
    monkeypatch.setattr(parsing, "_TOKEN", counters[1])
    yield counters


def _work(counters: list[_Counting]) -> int:
    return sum(c.calls for c in counters)


@pytest.mark.parametrize("n", [8_000, 30_000, 60_000])
def test_unbalanced_braces_are_scanned_once(searches: list[_Counting], n: int) -> None:
    # Restarting the scan after each unbalanced brace was quadratic: 8,000 braces took 1.7 s.
    with pytest.raises(ReplyParseError):
        json_candidates("{" * n)
    assert _work(searches) <= 4  # a run of openers is one token, then the end


@pytest.mark.parametrize(
    "bomb",
    ["[{" * 30_000, "}{" * 30_000, "{}" * 30_000, 'x{"' * 20_000, "{" + '"a",' * 15_000, "[" * 30_000 + "]" * 30_000],
    ids=["alternating", "closers-first", "tiny-spans", "quotes", "strings", "deep"],
)
def test_any_bracket_bomb_costs_a_bounded_number_of_searches(searches: list[_Counting], bomb: str) -> None:
    with contextlib.suppress(ReplyParseError):
        json_candidates("note: " + bomb)
    assert _work(searches) <= 2 * MAX_SEARCH_TOKENS + parsing.MAX_SEARCH_SPANS + 2


def test_a_reply_too_long_to_search_is_not_searched(searches: list[_Counting]) -> None:
    with pytest.raises(ReplyParseError, match="too long to search"):
        json_candidates("x" + "{" * (parsing.MAX_SEARCH_CHARS + 1))
    assert _work(searches) == 0
    # ... though a long reply that is JSON as a whole is read.
    assert json_candidates('{"a": "' + "x" * 2 * parsing.MAX_SEARCH_CHARS + '"}')[0]["a"].startswith("x")


def test_json_nested_deeper_than_the_parser_goes_is_no_candidate() -> None:
    deep = "[" * 200_000 + "]" * 200_000  # json.loads raises RecursionError on it
    with pytest.raises(ReplyParseError):
        json_candidates(deep)
    assert json_candidates("prose " + deep[:20_000][-10:] + ' {"ok": 1}') == [{"ok": 1}]


def test_the_search_stops_at_the_deadline() -> None:
    # A deadline already passed: the search gives up at its first look at the clock.
    with pytest.raises(ReplyDeadline):
        json_candidates("x " + '"s" {' * 5_000, deadline=0.0)
    assert json_candidates('x {"a": 1}', deadline=0.0) == [{"a": 1}]  # too short to look


def _reference_spans(text: str) -> list[str]:
    """The scan before issue 26 (restarted after every unbalanced opener; quadratic), for comparison."""
    closers = {"{": "}", "[": "]"}
    spans, start = [], 0
    while start < len(text):
        end = None
        if text[start] in closers:
            stack: list[str] = []
            for i in range(start, len(text)):
                c = text[i]
                if c in closers:
                    stack.append(closers[c])
                elif c in "}]":
                    if not stack or stack.pop() != c:
                        break
                    if not stack:
                        end = i
                        break
        if end is None:
            start += 1
            continue
        spans.append(text[start : end + 1])
        start = end + 1
    return spans


@settings(deadline=None)  # no clock in unit tests, Hypothesis's per-example deadline included
@given(st.text(alphabet="{}[]a: ,", max_size=40))
def test_the_one_pass_scan_finds_the_spans_the_restarting_scan_found(text: str) -> None:
    assert parsing._balanced_spans(text) == _reference_spans(text)


# -- over HTTP -----------------------------------------------------------------------------------


async def test_a_brace_bomb_reply_fails_as_unparseable_after_bounded_work(searches: list[_Counting]) -> None:
    with hs.hostile(hs.content("Here you go: " + "{" * 200_000)) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="k", max_retries=0, parse_retries=1)
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert caught.value.error_type == "unparseable_reply"
    assert _work(searches) == 0  # 200 KB of prose-and-braces is not searched at all
    assert len(server.requests) == 2


async def test_a_body_nested_too_deep_is_an_invalid_response() -> None:
    deep = '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}"

    def nested(handler: hs._Handler, body: Mapping[str, Any]) -> None:
        data = deep.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    with hs.hostile(nested) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="k", max_retries=0)
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert caught.value.error_type == "invalid_response"


async def test_json_steps_ask_for_a_bounded_reply(stub: StubOpenAIServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    await judge.detect_noncommittal("I do not know.")
    await judge.extract_claims("Paris is in France. It is big.")
    assert [r.body.get("max_tokens") for r in stub.chat_requests] == [JSON_MAX_TOKENS, JSON_MAX_TOKENS]


async def test_an_endpoint_that_rejects_the_token_cap_is_asked_without_it(
    stub: StubOpenAIServer, make_judge: MakeJudge
) -> None:
    message = "This model's maximum context length is 2048 tokens. However, you requested 4500 tokens (404 in the "
    stub.script(StubReply(status=400, body={"error": {"message": message + "messages, 4096 in the completion)."}}))
    judge = make_judge()
    reply = await judge.detect_noncommittal("I do not know.")
    assert reply.value in (True, False)
    assert [r.body.get("max_tokens") for r in stub.chat_requests] == [JSON_MAX_TOKENS, None]
    await judge.detect_noncommittal("Maybe.")
    assert stub.chat_requests[-1].body.get("max_tokens") is None  # remembered, as a format downgrade is
