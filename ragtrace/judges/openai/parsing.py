"""Tolerant reading of a judge's JSON reply.

Endpoints that honour a JSON schema return exactly the object asked for; JSON-mode and plain replies
wrap it in prose, code fences or trailing commentary. ``json_candidates`` finds the object anyway, and
the ``as_*`` helpers coerce loosely typed fields ("yes", "1", 0.8 as "0.8"). Whatever cannot be
read raises ``ReplyParseError`` with the reason; nothing here guesses a value that is not in the reply.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRUE_WORDS = frozenset({"true", "yes", "y", "1", "correct", "relevant", "supported"})
_FALSE_WORDS = frozenset({"false", "no", "n", "0", "incorrect", "irrelevant", "unsupported"})
# An item number as the prompt writes it ("[chunk 3]") or bare ("3", "#3").
_INDEX = re.compile(r"\s*\[?\s*(?:[a-z]+\s*)?#?\s*(\d+)\s*\]?\s*", re.IGNORECASE)


class ReplyParseError(ValueError):
    """The reply does not hold what the step asked for; the message says what is wrong."""


class InvalidReply(ReplyParseError):
    """The reply is readable but does not answer the request: it names an item the request does not
    have (chunk 2 of a one-chunk record), repeats one, or has the wrong number of items.

    Not asked again (at temperature 0 the same request gets the same reply): the step fails with
    ``error_type="invalid_reply"``, never a verdict read around the mistake.
    """


MAX_SEARCH_CHARS = 1 << 16
"""A reply longer than this (64 Ki characters) is read only when it is JSON as a whole; it is not searched
for JSON in prose. A JSON step's reply is capped at ``JSON_MAX_TOKENS`` tokens (tens of KB): a longer
reply is hostile or broken, and searching it would be work the app pays for."""

MAX_SEARCH_TOKENS = 2048
"""Brackets, runs of openers and strings scanned at most in one search; MAX_SEARCH_SPANS spans found at
most. A reply wrapped in prose has a handful of spans and a few hundred tokens (30 verdicts are ~300);
these bound what a reply made of brackets or strings costs (a few ms of one core) whatever its shape."""

MAX_SEARCH_SPANS = 64
"""Top-level spans found at most in one search (see ``MAX_SEARCH_TOKENS``)."""

_DEADLINE_EVERY = 1024
"""Tokens scanned between two looks at the clock."""

# Outside a span only an opener matters; inside, the structural characters and whole strings (a string
# may hold any bracket). A string's closing quote is optional so that an unterminated one matches to the
# end in one step (group 1 says whether it was closed): no backtracking, whatever the text.
_OPENER = re.compile(r"[{\[]")
_TOKEN = re.compile(r'[{\[]+|[}\]]|"(?:[^"\\]|\\.)*(")?', re.DOTALL)  # a run of openers is one token
_CLOSER = {"{": "}", "[": "]"}


class ReplyDeadline(Exception):
    """Reading the reply went past the step's deadline (the judge's timeout covers the parse)."""


def json_candidates(text: str | None, *, deadline: float | None = None) -> list[Any]:
    """Every JSON object or array ``text`` holds, most likely first; raise when there is none.

    The whole text when it is JSON; else the fenced blocks and the top-level balanced spans that
    parse, objects before arrays (every step asks for an object: a bracketed ``[1]`` in the prose
    before the reply is a citation, not the answer), each kind in text order. Spans nested in
    another span are not candidates of their own: an inner object is a part of the reply, not a reply.

    Linear in the text and bounded: one pass finds the spans (``_balanced_spans``, at most
    ``MAX_SEARCH_TOKENS`` tokens and ``MAX_SEARCH_SPANS`` spans), each candidate is parsed once, and a
    text over ``MAX_SEARCH_CHARS`` is not searched. ``deadline`` (``time.monotonic()``) ends the
    search with ``ReplyDeadline`` when passed.
    """
    if text is None or not text.strip():
        raise ReplyParseError("empty reply")
    stripped = text.strip()
    whole = _loads(stripped)
    if whole is not None:
        return [whole]
    if len(stripped) > MAX_SEARCH_CHARS:
        raise ReplyParseError(f"reply of {len(stripped)} characters is not JSON, too long to search for JSON")
    found: list[Any] = []
    seen: set[str] = set()
    spans = _balanced_spans(stripped, deadline)
    for candidate in [*(m.group(1).strip() for m in _FENCE.finditer(stripped)), *spans]:
        if candidate in seen:  # the same text twice (a fenced block is also a span): parsed once
            continue
        seen.add(candidate)
        value = _loads(candidate)
        if value is not None:
            found.append(value)
    if not found:
        preview = stripped[:80].replace("\n", " ")
        raise ReplyParseError(f"no JSON object in reply: {preview!r}")
    return [v for v in found if isinstance(v, dict)] + [v for v in found if isinstance(v, list)]


def extract_json(text: str | None) -> Any:
    """The most likely JSON object or array in ``text`` (the first of ``json_candidates``)."""
    return json_candidates(text)[0]


def read_first(candidates: Sequence[Any], read: Callable[[Any], T]) -> T:
    """``read`` of the first candidate it accepts; the first candidate's error when it accepts none.

    ``read`` checks the shape the step asked for, so a stray JSON value in the prose is passed over
    for the reply that has that shape.
    """
    first_error: ReplyParseError | None = None
    for candidate in candidates:
        try:
            return read(candidate)
        except ReplyParseError as error:
            first_error = first_error or error
    raise first_error or ReplyParseError("no JSON object in reply")


def _loads(text: str) -> Any:
    """``text`` parsed when it is a JSON object or array, else None (nested too deep for the parser too)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def _balanced_spans(text: str, deadline: float | None = None) -> list[str]:
    """Every top-level span from an opening brace/bracket to its matching closer, in order, in one pass.

    A stack of open brackets is kept from an opener on (strings inside it respected). When it empties,
    the span is yielded and the scan goes on past its end, so nested spans are never yielded on their
    own. When it cannot close (a closer of the wrong kind, the text's end, a string never closed),
    every bracket on it failed, and the spans that did close inside it are yielded instead, the
    outermost of them: what a scan restarted after the failed opener would find, without rescanning
    (restarting at each failed opener was quadratic: 8,000 unbalanced braces took 1.7 s).
    """
    spans: list[str] = []
    pos = 0
    tokens = 0
    while len(spans) < MAX_SEARCH_SPANS and (opener := _OPENER.search(text, pos)) is not None:
        # The open brackets, as runs of openers [start, end) in the text: a run is pushed whole and
        # popped one bracket at a time from its end, so a brace bomb costs one step, not one a brace.
        runs: list[list[int]] = []
        closed: list[tuple[int, int]] = []  # spans closed inside, in order of their ends
        pos = opener.start()
        failed_at: int | None = None
        while True:
            tokens += 1
            if tokens > MAX_SEARCH_TOKENS:
                return spans  # what was found so far; the rest is not searched
            if deadline is not None and tokens % _DEADLINE_EVERY == 0 and time.monotonic() > deadline:
                raise ReplyDeadline("reading the reply went past the judge's deadline")
            token = _TOKEN.search(text, pos)
            if token is None:
                failed_at = len(text)
                break
            c = text[token.start()]  # the token's first character says what it is (no copy of a long run)
            pos = token.end()
            if c == '"':
                if token.group(1) is None:  # never closed: nothing after it can close a bracket
                    failed_at = len(text)
                    break
            elif c in _CLOSER:
                runs.append([token.start(), pos])
            elif _CLOSER[text[runs[-1][1] - 1]] == c:
                top = runs[-1]
                top[1] -= 1
                start = top[1]
                if top[0] == top[1]:
                    runs.pop()
                if not runs:
                    spans.append(text[start:pos])
                    break
                closed.append((start, token.start()))
            else:
                failed_at = token.start()
                break
        if failed_at is not None:
            spans.extend(text[a : b + 1] for a, b in _outermost(closed))
            pos = min(failed_at + 1, len(text))
    return spans


def _outermost(closed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The spans of ``closed`` (in order of their ends) not inside another, in text order."""
    kept: list[tuple[int, int]] = []
    for start, end in closed:
        # A span closing later that starts earlier holds the ones kept since it opened.
        while kept and kept[-1][0] > start:
            kept.pop()
        kept.append((start, end))
    return kept


def pick(obj: Any, *names: str) -> Any:
    """The value of the first of ``names`` in the mapping ``obj`` (any letter case), else raise.

    Nothing else stands in for a missing field: an item ``{"claim": 1}`` has no verdict, whatever
    its one key holds.
    """
    if not isinstance(obj, Mapping):
        raise ReplyParseError(f"expected a JSON object with {list(names)}, got {type(obj).__name__}")
    for name in names:
        if name in obj:
            return obj[name]
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    raise ReplyParseError(f"reply has none of the fields {list(names)}: keys {sorted(map(str, obj))}")


def pick_list(obj: Any, *names: str) -> list[Any]:
    """The list a reply holds under one of ``names``; raise when there is none.

    Two shapes are read as meant: a bare list (a model that answered ``[...]`` instead of
    ``{"claims": [...]}``) and an object whose only field is a list under another name (a misspelt
    wrapper). The items are still read one by one, so neither shape lets a value be made up.
    """
    if isinstance(obj, list):
        return obj
    try:
        return as_list(pick(obj, *names), names[0])
    except ReplyParseError:
        only = list(obj.values()) if isinstance(obj, Mapping) else []
        if len(only) == 1 and isinstance(only[0], list):
            return only[0]
        raise


def as_list(value: Any, what: str) -> list[Any]:
    """``value`` as a list; raise naming ``what`` otherwise."""
    if isinstance(value, list):
        return value
    raise ReplyParseError(f"{what} is not a list: {type(value).__name__}")


def as_str(value: Any, what: str) -> str:
    """A non-empty string (numbers are accepted as text); raise otherwise."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ReplyParseError(f"{what} is not a non-empty string: {value!r}")


def as_bool(value: Any, what: str) -> bool:
    """A boolean from true/false, 1/0 or yes/no (any case); raise otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS:
        return True
    if isinstance(value, str) and value.strip().lower() in _FALSE_WORDS:
        return False
    raise ReplyParseError(f"{what} is not a boolean: {value!r}")


def as_number(value: Any, what: str, *, low: float, high: float) -> float:
    """A finite number in [low, high] (numeric strings accepted; a 0-10 rating is not rescaled)."""
    number: float
    if isinstance(value, bool):
        raise ReplyParseError(f"{what} is a boolean, not a number")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%"))
        except ValueError:
            raise ReplyParseError(f"{what} is not a number: {value!r}") from None
    else:
        raise ReplyParseError(f"{what} is not a number: {value!r}")
    if not math.isfinite(number) or number < low or number > high:
        raise ReplyParseError(f"{what} = {number} is outside [{low}, {high}]")
    return number


def as_index(value: Any, what: str) -> int:
    """An integer index (``3``, ``"3"``, ``3.0``, ``"#3"``, ``"chunk 3"``, ``"[chunk 3]"``); raise otherwise."""
    if isinstance(value, bool):
        raise ReplyParseError(f"{what} is a boolean, not an index")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and (match := _INDEX.fullmatch(value)):
        return int(match.group(1))
    raise ReplyParseError(f"{what} is not an index: {value!r}")


def align(
    items: list[Any],
    count: int,
    *,
    key: str,
    read: Callable[[Any], T],
    what: str,
) -> list[T]:
    """Put per-item results in input order, by their 1-based ``key`` field.

    Items may come out of order; items without the key are placed by position. An item numbered
    outside 1..count, a number given twice, or any input left without a result raises
    ``InvalidReply``: the reply does not answer the request, and a missing verdict is never filled
    in by a guess nor an extra one dropped silently.
    """
    placed: dict[int, T] = {}
    for position, item in enumerate(items):
        index: int | None = None
        if isinstance(item, Mapping):
            raw = next((item[k] for k in (key, "index", "id", "i") if k in item), None)
            if raw is not None:
                try:
                    index = as_index(raw, f"{what} {key}")
                except ReplyParseError:
                    index = None
        number = index if index is not None else position + 1
        if not 1 <= number <= count:
            raise InvalidReply(f"reply names {what} {number}, but the request has {what}s 1 to {count}")
        if number in placed:
            raise InvalidReply(f"reply gives {what} {number} twice")
        placed[number] = read(item)
    missing = [n for n in range(1, count + 1) if n not in placed]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise InvalidReply(f"reply lacks {what} {shown} of {count}")
    return [placed[n] for n in range(1, count + 1)]


def index_set(value: Any, count: int, what: str) -> set[int]:
    """The 1-based indices a field lists: a list of indices, one index, or null for none.

    An index outside 1..count names no item of the request: ``InvalidReply`` (the measured failure
    this guards against is a small model citing chunk 2 of a one-chunk record, copied from an
    example; dropping the number would turn the claim into "unsupported" with status ok). Anything
    else that is not an index (``true``, a word) raises ``ReplyParseError``.
    """
    if value is None:
        return set()
    if not isinstance(value, list):
        value = [value]
    result: set[int] = set()
    for raw in value:
        index = as_index(raw, what)
        if not 1 <= index <= count:
            raise InvalidReply(f"{what} names {index}, but the request has 1 to {count}")
        result.add(index)
    return result
