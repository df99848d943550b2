"""The stub server's unscripted reply bodies: chat completions, embeddings, and the 400 of a format it lacks.

``chat_completion`` builds one choice per ``n``. With tools and a ``tool_choice`` other than ``"none"``
a choice is a call of the forced tool whose arguments fill its parameters' schema (``_stub_generic``).
Otherwise its content is, in order: the scripted content; else the ``responder``'s value for the
step; else the step's default answer (``_stub_answers``); else a value of the request's schema; else
``{"text": [the user message's first sentence]}``. A value that is not already a string is JSON, then
dressed by ``reply_style`` (``"prose"`` wraps it in chatter and a code fence, ``"malformed"`` cuts it
in half and appends a dangling field). Logprobs are added when both the request and the server ask.

Usage counts what the model would read (the messages, a ``json_schema`` response format, the tools)
and what it wrote, with the stub's one token ruler (``_stub_text.count_tokens``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ragtrace.testing._stub_answers import ANSWERS, yes_probability
from ragtrace.testing._stub_generic import schema_instance, schema_of
from ragtrace.testing._stub_logprobs import token_logprobs
from ragtrace.testing._stub_request import chosen_tool, error, message_text
from ragtrace.testing._stub_text import count_tokens, embed_text, sentences

__all__ = ["Mode", "ReplyStyle", "Responder", "chat_completion", "embeddings", "rejection"]

Mode = Literal["json_schema", "json_object", "text"]
ReplyStyle = Literal["json", "prose", "malformed"]
Responder = Callable[[str, Mapping[str, Any]], Any]
"""``responder(step, request_body)``: the reply content for a step (a JSON-able value or a string),
or ``None`` to fall back to the default answer."""


def rejection(body: Mapping[str, Any], mode: Mode) -> dict[str, Any] | None:
    """The 400 body a server in ``mode`` answers the request's ``response_format`` with, or None if it takes it.

    ``"json_object"`` refuses ``json_schema`` (as older vLLM / llama.cpp do); ``"text"`` refuses any
    format but text.
    """
    kind = (body.get("response_format") or {}).get("type")
    if kind is None or kind == "text":
        return None
    if mode == "text" or (mode == "json_object" and kind == "json_schema"):
        return error(400, f"response_format of type '{kind}' is not supported by this server")
    return None


def embeddings(body: Mapping[str, Any]) -> dict[str, Any]:
    """The embeddings body: one hashed-bag-of-words vector per input text."""
    raw = body.get("input", [])
    texts = [raw] if isinstance(raw, str) else [str(t) for t in raw]
    tokens = sum(count_tokens(t) for t in texts)
    return {
        "object": "list",
        "model": body.get("model", "stub-embedding"),
        "data": [{"object": "embedding", "index": i, "embedding": embed_text(t)} for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def chat_completion(
    body: Mapping[str, Any],
    step: str | None,
    scripted_content: str | None,
    *,
    reply_style: ReplyStyle,
    logprobs: bool,
    responder: Responder | None,
) -> dict[str, Any]:
    """The chat completion body for a request the judge ``step`` (None: an unknown prompt) made."""
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    prompt_text = "".join(message_text(m) for m in messages)
    prompt_tokens = count_tokens(prompt_text)
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        prompt_tokens += count_tokens(json.dumps(response_format.get("json_schema", {})))
    if tools:
        prompt_tokens += count_tokens(json.dumps(tools))
    n = max(1, int(body.get("n") or 1))
    choices: list[dict[str, Any]] = []
    completion_tokens = 0
    for index in range(n):
        if tools and body.get("tool_choice") not in (None, "none"):
            tool = chosen_tool(tools, body.get("tool_choice"))
            arguments = json.dumps(schema_instance(tool.get("parameters") or {}, prompt_text, index))
            completion_tokens += count_tokens(arguments)
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{index}",
                        "type": "function",
                        "function": {"name": tool.get("name", "tool"), "arguments": arguments},
                    }
                ],
            }
            choices.append({"index": index, "message": message, "finish_reason": "tool_calls", "logprobs": None})
            continue
        value = _value(step, body, messages, index, responder)
        content = scripted_content if scripted_content is not None else _styled(value, reply_style)
        completion_tokens += count_tokens(content)
        choice: dict[str, Any] = {
            "index": index,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if body.get("logprobs") and logprobs:
            # A scripted content is not the stub's verdict: its yes/no carries no made-up P(yes).
            yes = yes_probability(step, messages) if scripted_content is None else None
            choice["logprobs"] = {"content": token_logprobs(content, int(body.get("top_logprobs") or 0), yes)}
        choices.append(choice)
    return {
        "id": f"chatcmpl-stub-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _value(
    step: str | None, body: Mapping[str, Any], messages: Sequence[Any], index: int, responder: Responder | None
) -> Any:
    if responder is not None and step is not None:
        custom = responder(step, body)
        if custom is not None:
            return custom
    user = next((message_text(m) for m in reversed(messages) if isinstance(m, Mapping) and m.get("role") == "user"), "")
    if step is not None and step in ANSWERS:
        return ANSWERS[step](user)
    prompt_text = "".join(message_text(m) for m in messages)
    schema = schema_of(body, prompt_text)
    return schema_instance(schema, prompt_text, index) if schema else {"text": sentences(user)[:1] or [""]}


def _styled(value: Any, reply_style: ReplyStyle) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if reply_style == "prose":
        return f"Sure! Here is my assessment.\n```json\n{text}\n```\nLet me know if you need more."
    if reply_style == "malformed":
        return text[: max(1, len(text) // 2)] + ', "oops": '
    return text
