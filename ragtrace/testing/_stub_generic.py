"""The stub server's reply to a prompt it does not know (another library's): a value its JSON schema accepts.

The schema (``schema_of``) is the request's ``response_format`` one, else the first top-level JSON
object in the prompt that looks like a schema: prompts state it before their examples and input. (A
forced tool's parameters are the schema of a tool call's arguments.) The value (``schema_instance``)
fills every field: an enum takes its first member; a string is a sentence of the prompt's trailing
input, taken in turn from ``seed`` on (so ``n`` choices differ); an array holds one item per input
sentence, one to three (one only, deeper than 3 levels); numbers, integers and flags say "yes" (1),
except in fields named ``noncommittal``, which say "no", so a metric reading the value finds the
answer faithful and committal. A ``$ref`` into the root and the first non-null ``anyOf`` / ``oneOf``
/ ``allOf`` option are followed; nothing else of JSON Schema is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragtrace.testing._stub_text import sentences

__all__ = ["schema_instance", "schema_of"]


def schema_of(body: Mapping[str, Any], prompt_text: str) -> Mapping[str, Any] | None:
    """The reply schema: from ``response_format``, else the first JSON schema object in the prompt.

    The prompt is scanned for top-level JSON objects only (a schema's nested definitions are not
    candidates), and the first one that looks like a schema wins: prompts state the schema before
    their examples and input.
    """
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if isinstance(schema, Mapping):
        return schema
    decoder = json.JSONDecoder()
    position = prompt_text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(prompt_text, position)
        except ValueError:
            position = prompt_text.find("{", position + 1)
            continue
        if isinstance(value, Mapping) and ("properties" in value or value.get("type") == "object"):
            return value
        position = prompt_text.find("{", end)
    return None


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return target if isinstance(target, Mapping) else {}
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, Mapping) and option.get("type") != "null":
                    return _resolve(option, root)
    return schema


def schema_instance(schema: Mapping[str, Any], prompt_text: str, seed: int) -> Any:
    """A value valid for ``schema`` whose strings are sentences of the prompt's last input block."""
    pool = _input_sentences(prompt_text) or ["No input."]
    counter = [seed]

    def text() -> str:
        sentence = pool[counter[0] % len(pool)]
        counter[0] += 1
        return sentence

    def build(node: Mapping[str, Any], depth: int, name: str) -> Any:
        node = _resolve(node, schema)
        if node.get("enum"):
            return node["enum"][0]
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "object" or "properties" in node:
            props = node.get("properties") or {}
            return {key: build(sub, depth + 1, key) for key, sub in props.items()}
        if kind == "array":
            items = node.get("items") or {"type": "string"}
            count = 0 if depth > 3 else min(len(pool), 3)
            return [build(items, depth + 1, name) for _ in range(max(1, count))]
        # Flags named noncommittal are "no"; every other verdict-like number or flag is "yes".
        committal = "noncommittal" not in name.lower()
        if kind == "integer":
            return int(committal)
        if kind == "number":
            return float(committal)
        if kind == "boolean":
            return committal
        return text()

    return build(schema, 0, "")


def _input_sentences(prompt_text: str) -> list[str]:
    """Sentences of the prompt's trailing input (after the last examples), for plausible strings."""
    tail = prompt_text.rsplit("Now perform the same with the following input", 1)[-1]
    tail = tail.rsplit("input:", 1)[-1] if "input:" in tail else tail[-2000:]
    try:
        value = json.JSONDecoder().raw_decode(tail.strip())[0]
    except ValueError:
        value = tail
    strings: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            strings.extend(sentences(node))
        elif isinstance(node, Mapping):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return [s for s in strings if s][:20]
