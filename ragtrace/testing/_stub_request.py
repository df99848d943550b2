"""What the stub server reads from an OpenAI request, and the OpenAI error body it refuses one with.

A chat request's text is the concatenation of its messages' text (a string content, or the ``text``
parts of a list content; anything else reads as empty). The judge step a request is for is named by
``OpenAIJudge`` in two places (``ragtrace.judges.openai.prompts``): the ``json_schema`` name
(``SCHEMA_PREFIX`` + step) and a ``STEP_MARKER`` line in a message; the schema name wins. A request
from another library names no step (``None``). A forced tool is the one ``tool_choice`` names, else
the first tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.judges.openai.prompts import SCHEMA_PREFIX, STEP_MARKER

__all__ = ["chosen_tool", "error", "message_text", "recognise_step"]

_STEP = re.compile(re.escape(STEP_MARKER) + r"\s*(\w+)")


def recognise_step(body: Mapping[str, Any]) -> str | None:
    """The ragtrace judge step a chat request is for, or ``None`` for a prompt the stub does not know."""
    response_format = body.get("response_format") or {}
    name = str((response_format.get("json_schema") or {}).get("name", ""))
    if name.startswith(SCHEMA_PREFIX):
        return name[len(SCHEMA_PREFIX) :]
    for message in body.get("messages") or []:
        match = _STEP.search(message_text(message))
        if match:
            return match.group(1)
    return None


def message_text(message: Any) -> str:
    """The text of one chat message (its string content, or its list content's text parts)."""
    if not isinstance(message, Mapping):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def chosen_tool(tools: Sequence[Any], choice: Any) -> Mapping[str, Any]:
    """The function a request forces: the one its ``tool_choice`` names, else its first tool."""
    functions: list[Mapping[str, Any]] = [t.get("function", {}) for t in tools if isinstance(t, Mapping)]
    if isinstance(choice, Mapping):
        wanted = (choice.get("function") or {}).get("name")
        for function in functions:
            if function.get("name") == wanted:
                return function
    return functions[0] if functions else {}


def error(status: int, message: str) -> dict[str, Any]:
    """An OpenAI error body; its ``type`` follows the status as OpenAI's does (a client may branch on it)."""
    kind = {400: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
