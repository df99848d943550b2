"""Reading texts out of the JSON values instrumentations put on spans.

Instrumentations write an app's inputs and outputs as they found them: a string, or a JSON object whose
keys the app chose (LangChain's ``{"question": ...}``, ``{"answer": ...}``, LlamaIndex's
``{"query_str": ...}``). ``pick`` looks for the usual keys, one level deep and through the wrappers
instrumentations add (``inputs``/``outputs``, LangChain's serialized message ``kwargs``), and gives up
rather than guess: a value it cannot read is ``None`` ("not on the span"), never its Python spelling.
Everything here is pure and bounded by the size of the value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from ragtrace import semconv

QUERY_KEYS: Final = ("input", "question", "query", "query_str", "q", "user_input", "prompt", "message", "text")
"""Keys a RAG call's input object usually keeps the user query under, most specific first after ``input``."""

ANSWER_KEYS: Final = ("answer", "output", "result", "response", "output_text", "text", "content", "generation")
"""Keys a RAG call's output object usually keeps the answer under."""

WRAPPER_KEYS: Final = ("kwargs", "data", "query_bundle")
"""Keys instrumentations and frameworks wrap a value in: LangChain's serialized objects (``kwargs``), its
message dicts (``data``), LlamaIndex's ``query_bundle``."""

MAX_DEPTH: Final = 3


def loads(text: object) -> Any:
    """``text`` parsed as JSON, or ``None`` when it is not a string or not JSON."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def hidden(value: object) -> bool:
    """True when ``value`` is the placeholder an instrumentation writes for a text it was told to hide."""
    return value == semconv.OPENINFERENCE_REDACTED


def pick(value: Any, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """The text ``value`` holds under one of ``keys`` (a string value is itself), else ``None``."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping) or depth > MAX_DEPTH:
        return None
    for key in keys:
        found = value.get(key)
        if isinstance(found, str):
            return found
    for key in (*keys, *WRAPPER_KEYS):
        found = value.get(key)
        if isinstance(found, Mapping):
            text = pick(found, keys, depth + 1)
            if text is not None:
                return text
    return None


def value_text(value: object, mime_type: object, keys: tuple[str, ...]) -> str | None:
    """An OpenInference ``input.value``/``output.value``: the text itself, or picked out of its JSON."""
    if not isinstance(value, str):
        return None
    if mime_type != semconv.MIME_TYPE_JSON:
        return value
    return pick(loads(value), keys)


def message_text(messages: object, role: str) -> str | None:
    """The text of the last ``role`` message of a ``gen_ai.*.messages`` JSON array (its text parts, joined)."""
    parsed = loads(messages) if isinstance(messages, str) else messages
    if not isinstance(parsed, list):
        return None
    for message in reversed(parsed):
        if not isinstance(message, Mapping) or message.get(semconv.GEN_AI_MESSAGE_ROLE) != role:
            continue
        parts = message.get(semconv.GEN_AI_MESSAGE_PARTS)
        if not isinstance(parts, list):
            continue
        texts = [
            p[semconv.GEN_AI_PART_CONTENT]
            for p in parts
            if isinstance(p, Mapping)
            and p.get(semconv.GEN_AI_PART_TYPE) == semconv.GEN_AI_PART_TYPE_TEXT
            and isinstance(p.get(semconv.GEN_AI_PART_CONTENT), str)
        ]
        if texts:
            return "".join(texts)
    return None


def metadata(value: object) -> Mapping[str, Any]:
    """A document's metadata, read-only: a mapping (copied), a JSON object string parsed; anything else is empty."""
    if value is None:
        return _EMPTY
    if isinstance(value, Mapping):
        return MappingProxyType(dict(value)) if value else _EMPTY
    parsed = loads(value)
    # A freshly parsed object is nobody else's: it is wrapped, not copied.
    return MappingProxyType(parsed) if isinstance(parsed, dict) and parsed else _EMPTY


_EMPTY: Mapping[str, Any] = MappingProxyType({})
