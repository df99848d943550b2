"""Checking a stub reply against the request's ``json_schema``: where it broke the schema, if anywhere.

Every 200 reply is checked and the breaks land in ``LoggedRequest.schema_errors``, so a test can
assert that what a constrained server (``mode="json_schema"``) would have enforced held, and see where
a ``reply_style`` or a scripted content broke it. Only the subset a strict ``json_schema`` uses is
checked: ``type``, ``enum``, ``properties``, ``required``, ``additionalProperties: false``, ``items``,
``minimum`` and ``maximum``; a ``$ref`` or a combinator is not followed (it passes).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["schema_errors_of", "validate"]


def schema_errors_of(request: Mapping[str, Any], reply: Any) -> list[str]:
    """Where a chat reply's content breaks the request's ``json_schema`` (empty when none was asked)."""
    response_format = request.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, Mapping) or not isinstance(reply, Mapping):
        return []
    errors: list[str] = []
    choices = reply.get("choices")
    for choice in choices if isinstance(choices, list) else []:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        try:
            value = json.loads(content) if isinstance(content, str) else None
        except ValueError:
            errors.append("the content is not JSON")
            continue
        errors.extend(validate(schema, value))
    return errors


def validate(schema: Mapping[str, Any], value: Any, where: str = "$") -> list[str]:
    """The ways ``value`` breaks ``schema`` (the subset a strict json_schema uses: type, enum,
    properties, required, additionalProperties, items, minimum, maximum)."""
    errors: list[str] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(f"{where}: {value!r} is not one of {enum}")
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    if isinstance(kind, str) and kind in checks and not checks[kind](value):
        return [*errors, f"{where}: {value!r} is not of type {kind}"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} > maximum {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                errors.append(f"{where}: missing {name!r}")
        for name, item in value.items():
            if name in properties:
                errors.extend(validate(properties[name], item, f"{where}.{name}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unexpected field {name!r}")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{where}[{i}]"))
    return errors
