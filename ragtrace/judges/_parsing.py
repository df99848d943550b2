"""Tolerant reading of a judge's JSON reply.

Endpoints that honour a JSON schema return exactly the object asked for; JSON-mode and plain replies
wrap it in prose, code fences or trailing commentary. ``extract_json`` finds the object anyway, and
the ``as_*`` helpers coerce loosely typed fields ("yes", "1", 0.8 as "0.8"). Whatever cannot be
read raises ``ReplyParseError`` with the reason; nothing here guesses a value that is not in the reply.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRUE_WORDS = frozenset({"true", "yes", "y", "1", "correct", "relevant", "supported"})
_FALSE_WORDS = frozenset({"false", "no", "n", "0", "incorrect", "irrelevant", "unsupported"})


class ReplyParseError(ValueError):
    """The reply does not hold what the step asked for; the message says what is wrong."""


def extract_json(text: str | None) -> Any:
    """The first JSON object or array in ``text``: the whole text, a fenced block, or a balanced span.

    Raises ``ReplyParseError`` when the text holds no parseable JSON value.
    """
    if text is None or not text.strip():
        raise ReplyParseError("empty reply")
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    for span in _balanced_spans(stripped):
        try:
            return json.loads(span)
        except ValueError:
            continue
    preview = stripped[:80].replace("\n", " ")
    raise ReplyParseError(f"no JSON object in reply: {preview!r}")


def _balanced_spans(text: str) -> Iterable[str]:
    """Every span from an opening brace/bracket to its matching closer, outermost first, in order."""
    closers = {"{": "}", "[": "]"}
    for start, char in enumerate(text):
        if char not in closers:
            continue
        stack: list[str] = []
        in_string = False
        escaped = False
        for end in range(start, len(text)):
            c = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    in_string = False
                continue
            if c == '"':
                in_string = True
            elif c in closers:
                stack.append(closers[c])
            elif c in "}]":
                if not stack or stack.pop() != c:
                    break
                if not stack:
                    yield text[start : end + 1]
                    break


def pick(obj: Any, *names: str) -> Any:
    """The first of ``names`` present in the mapping ``obj`` (judges vary key spelling), else raise.

    When ``obj`` is not a mapping but a bare list and exactly one name is asked for a list, the list
    itself is returned (a model that answered ``[...]`` instead of ``{"claims": [...]}``).
    """
    if isinstance(obj, Mapping):
        for name in names:
            if name in obj:
                return obj[name]
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for name in names:
            if name.lower() in lowered:
                return lowered[name.lower()]
        if len(obj) == 1:
            # A single-key object whose key is misspelt still carries the one thing asked for.
            return next(iter(obj.values()))
        raise ReplyParseError(f"reply has none of the fields {list(names)}: keys {sorted(map(str, obj))}")
    if isinstance(obj, list):
        return obj
    raise ReplyParseError(f"expected a JSON object with {list(names)}, got {type(obj).__name__}")


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
    """An integer index (``3``, ``"3"``, ``3.0``); raise otherwise."""
    if isinstance(value, bool):
        raise ReplyParseError(f"{what} is a boolean, not an index")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("#").isdigit():
        return int(value.strip().lstrip("#"))
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

    Items may come out of order or carry extras (indices outside 1..count, duplicates: the first
    wins). Items without the key are placed by position. Any input left without a result raises
    ``ReplyParseError``: a missing verdict is never filled in by a guess.
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
        if 1 <= number <= count and number not in placed:
            placed[number] = read(item)
    missing = [n for n in range(1, count + 1) if n not in placed]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise ReplyParseError(f"reply lacks {what} {shown} of {count}")
    return [placed[n] for n in range(1, count + 1)]


def index_set(value: Any, count: int, what: str) -> set[int]:
    """A set of valid 1-based indices from a list (out-of-range and unreadable entries are dropped).

    Dropping is safe here: the list names chunks that support a claim, and an index that names no
    chunk carries no verdict about any real chunk.
    """
    if value is None:
        return set()
    if not isinstance(value, list):
        value = [value]
    result: set[int] = set()
    for raw in value:
        try:
            index = as_index(raw, what)
        except ReplyParseError:
            continue
        if 1 <= index <= count:
            result.add(index)
    return result
