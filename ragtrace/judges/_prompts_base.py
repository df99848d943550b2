"""What every step's prompt is made of: ``StepPrompt`` (system message and reply schema), the strict
JSON-schema building blocks, and the ``[label n]`` numbering the replies refer to.

The prompts themselves are in ``_prompts_claims`` and ``_prompts_ratings``; ``_prompts`` is the
import surface (see its docstring for why the prompts are shaped as they are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

STEP_MARKER = "ragtrace-step:"
"""Prefix of the first line of every system prompt, followed by the step name."""

SCHEMA_PREFIX = "ragtrace_"
"""Prefix of the JSON-schema name sent in ``response_format`` (then the step name)."""


@dataclass(frozen=True, slots=True)
class StepPrompt:
    """One step's system prompt and the JSON schema of its reply."""

    step: str
    instructions: str
    shape: str
    schema: Mapping[str, Any]
    word: bool = False
    """The reply is one word, asked for without a response format (``instructions`` say which words)."""

    @property
    def system(self) -> str:
        """The system message: marker, instructions, and the reply's shape for JSON-mode endpoints."""
        if self.word:
            return f"{STEP_MARKER} {self.step}\n{self.instructions}"
        return f"{STEP_MARKER} {self.step}\n{self.instructions}\nReply with JSON only, shaped: {self.shape}"

    @property
    def schema_name(self) -> str:
        """The name of the schema in ``response_format``."""
        return SCHEMA_PREFIX + self.step

    def response_format(self, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The strict ``json_schema`` response format of this step (``schema`` narrows the step's own
        to one request, e.g. with the valid item numbers as enums)."""
        chosen = self.schema if schema is None else schema
        return {
            "type": "json_schema",
            "json_schema": {"name": self.schema_name, "strict": True, "schema": _plain(chosen)},
        }


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (the schema constants are read-only by convention)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def object_schema(**properties: Any) -> dict[str, Any]:
    """A strict object schema: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def array_schema(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def numbers_schema(count: int) -> dict[str, Any]:
    """An item number of a request with ``count`` items: an integer enum 1..count."""
    return {"type": "integer", "enum": list(range(1, count + 1))}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}


def numbered(label: str, items: Sequence[str]) -> str:
    """``items`` as ``[label 1] text`` lines, the numbering the replies refer to."""
    return "\n".join(f"[{label} {i}] {text}" for i, text in enumerate(items, start=1))
