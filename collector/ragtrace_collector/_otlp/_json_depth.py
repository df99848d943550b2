"""OTLP/JSON nested too deeply for Python's json parser: cut the deep values out so the rest still parses.

``json.loads`` recurses once per level and gives up on the whole document past its recursion limit (about a
thousand levels), so a single span holding a ``kvlistValue``/``arrayValue`` nested a few hundred times would
cost every span of its request. A protobuf body does not: the protobuf parser refuses that one span (its
depth limit), and the salvage keeps the others. ``cut_deep`` gives OTLP/JSON the same outcome: every value
that begins deeper than ``MAX_JSON_DEPTH`` levels is replaced, unread, by a marker string; the body then
parses, and the decoder rejects each span that ``holds`` the marker, alone, with ``TOO_DEEP``. A span that
protobuf would accept never reaches that depth, so a cut caused by one span costs no other.

Only a body that ``json.loads`` refused for its depth goes through here; any other body is parsed as it is.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from typing import Any

MAX_JSON_DEPTH = 156
"""Deepest JSON nesting kept: the deepest a span that protobuf's JSON parser accepts can reach, so only values of
spans protobuf would refuse anyway are cut, and a good span beside a deep one is kept.

protobuf parses a span up to 100 nested messages, the span itself the first. The export object is JSON level 1
and a span level 7; an attribute's value (``AnyValue``) is level 10 and message 3. ``arrayValue`` packs the most
JSON levels into those messages, three for two (``AnyValue``, ``ArrayValue``, the ``values`` array): nested 48
times it reaches message 99 at level 154, and an ``arrayValue`` there (message 100) with an empty ``values``
array makes levels 155 and 156. No other path (``kvlistValue``, event and link attributes) goes deeper. A key
protobuf ignores (an unknown field) is not counted by protobuf, but is cut all the same past this depth. Far
below the thousand levels or so at which ``json.loads`` gives up."""

TOO_DEEP = f"span nested too deeply to decode (past {MAX_JSON_DEPTH} JSON levels or 100 nested messages)"
"""The rejection reason of a span that held a cut value, or that protobuf's JSON parser found too deep."""

# The scan reads the text once, front to back, with two patterns that never read past where they stop:
# outside strings, the next bracket or quote (a character class, searched for);
_STRUCTURE = re.compile(r'[\[\]{}"]')
# inside a string, its characters after the opening quote, up to its closing quote or the end of the text. This
# one always matches and nothing follows it, so it never backtracks. (A pattern that needed the closing quote
# failed on an unterminated string only after reading to the end, and was then tried again from each later
# quote: time quadratic in the body, minutes for a few hundred kilobytes of escaped quotes.)
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)


def _brackets(text: str) -> Iterator[tuple[bool, int]]:
    """``(opens, index)`` of every bracket outside strings, in one pass over ``text``.

    Raise ``json.JSONDecodeError`` at a string that does not terminate: no JSON document holds one, and nothing
    after its opening quote can be read as structure.
    """
    pos = 0
    while (found := _STRUCTURE.search(text, pos)) is not None:
        char, pos = found.group(), found.end()
        if char != '"':
            yield char in "[{", found.start()
            continue
        rest = _STRING_REST.match(text, pos)
        assert rest is not None  # it matches the empty string
        pos = rest.end()
        if not text.startswith('"', pos):
            raise json.JSONDecodeError("Unterminated string starting at", text, found.start())
        pos += 1


def cut_deep(text: str, limit: int = MAX_JSON_DEPTH) -> tuple[str, str]:
    """Return ``text`` with every value starting below ``limit`` levels replaced, and the marker used.

    The marker is a string no sender can predict (it holds a random part), so a span is rejected only for a
    value that was really cut. Broken JSON stays broken (``json.loads`` then refuses it as before), except
    inside a cut value, which is never parsed; a string that does not terminate raises ``json.JSONDecodeError``
    at once. Time is linear in ``text``.
    """
    marker = f"\x00ragtrace-cut-{secrets.token_hex(8)}"
    replacement = json.dumps(marker)
    pieces: list[str] = []
    kept_from = 0
    cut_from = -1
    depth = 0
    for opens, index in _brackets(text):
        if opens:
            depth += 1
            if depth == limit + 1:
                cut_from = index
        else:
            if depth == limit + 1:
                pieces += (text[kept_from:cut_from], replacement)
                kept_from = index + 1
            depth -= 1
    if depth > limit:
        # A deep value that never closes: keep up to it; json.loads reports the truncated document.
        pieces.append(text[kept_from:cut_from])
    else:
        pieces.append(text[kept_from:])
    return "".join(pieces), marker


def too_deep(exc: BaseException) -> bool:
    """Whether protobuf's JSON parser refused a span for its nesting (its message ends with the cause)."""
    return "Message too deep" in str(exc)


def holds(value: Any, marker: str) -> bool:
    """Whether the parsed JSON ``value`` contains ``marker`` anywhere (walked with a stack, not recursion)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif item == marker:
            return True
    return False
