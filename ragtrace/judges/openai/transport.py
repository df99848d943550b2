"""The OpenAI-compatible judge's transport: which client a call goes through, and what a chat step sends.

``_Transport`` (over ``retry._Retrying``, the retry loop) is the base of ``OpenAIJudge``: a
client per event loop (closed as its loop ends), the response-format downgrade (json_schema ->
json_object -> text) and the logprobs opt-out, and ``_ask``, which sends one chat step, reads the
reply with the step's reader and asks again while it cannot be read. ``INVALID_REPLY``, ``_Tally``
and ``_retry_after`` are re-exported from ``retry``, where they live.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Literal, TypeVar

import openai

from ragtrace.judges._base import JudgeReply
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.http import judge_http_client
from ragtrace.judges.openai.parsing import (
    ReplyParseError,
    json_candidates,
    read_first,
)
from ragtrace.judges.openai.replies import _ChatReply, _token_logprobs
from ragtrace.judges.openai.retry import INVALID_REPLY as INVALID_REPLY  # still importable from here (tests)
from ragtrace.judges.openai.retry import _error_text, _Retrying, _Tally
from ragtrace.judges.openai.retry import _retry_after as _retry_after  # still importable from here (tests)

T = TypeVar("T")

ResponseMode = Literal["json_schema", "json_object", "text"]
"""How the judge asks for JSON: strict schema, JSON mode, or plain text read tolerantly."""

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json", "grammar")

JSON_MAX_TOKENS = 4096
"""``max_tokens`` of a JSON step: the longest reply asked for (claims of a long answer, a verdict per claim
and chunk) is a few thousand tokens; an endpoint that rambles past it is cut there, not paid for."""
_MAX_TOKENS_WORDS = ("max_tokens", "max_completion_tokens", "in the completion")


class _Transport(_Retrying):
    """The calls of ``OpenAIJudge`` (its subclass sets every attribute below in ``__init__``)."""

    model: str
    _client_options: dict[str, Any]
    _owns_client: bool
    _loop_clients: weakref.WeakKeyDictionary[
        asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator[None, None]]
    ]
    _first_client_free: bool
    _loop_clients_lock: threading.Lock
    _mode: ResponseMode
    _auto_downgrade: bool
    _logprobs: bool
    _top_logprobs: int
    _cap_tokens: bool

    async def _client_here(self) -> openai.AsyncOpenAI:
        """The client of the running event loop.

        A connection pool belongs to the event loop (and process) that first used it: on another loop,
        or after a fork, its connections and locks are dead. A judge that made its own client keeps
        one per loop, and closes each as its loop ends: a started async generator is closed by
        ``loop.shutdown_asyncgens()``, which ``asyncio.run`` and the scoring worker call before closing
        the loop, so a judge reused across ``asyncio.run`` calls leaves no socket open behind. A client
        passed in is the caller's to manage.
        """
        if not self._owns_client:
            return self._client
        loop = asyncio.get_running_loop()
        entry = self._loop_clients.get(loop)
        if entry is not None:
            return entry[0]
        with self._loop_clients_lock:
            client = self._client if self._first_client_free else self._new_client()
            self._first_client_free = False
        closer = self._close_when_loop_ends(loop, client)
        await closer.__anext__()  # started: the loop now knows it, and will close it
        self._loop_clients[loop] = (client, closer)
        return client

    def _new_client(self) -> openai.AsyncOpenAI:
        """A client of this judge's own making: its HTTP client follows no redirect to another origin and
        reads no reply past ``MAX_REPLY_BYTES`` (``http``)."""
        http_client = judge_http_client(timeout=self.timeout, credentials=self._url_credentials)
        return openai.AsyncOpenAI(**self._client_options, http_client=http_client)

    async def _close_when_loop_ends(
        self, loop: asyncio.AbstractEventLoop, client: openai.AsyncOpenAI
    ) -> AsyncGenerator[None, None]:
        """Yields once, then, when closed (by ``aclose`` or by the loop's ``shutdown_asyncgens``, see
        ``_client_here``), forgets ``loop``'s entry and closes ``client``.

        Forgetting is what lets an ended loop go: a started generator holds its loop (the loop's
        finalizer hook), so its entry would keep the loop and the closed client for the judge's life.
        """
        try:
            yield
        finally:
            self._loop_clients.pop(loop, None)
            await client.close()

    def _adapt_chat(self, want_logprobs: list[bool]) -> Callable[[openai.APIStatusError], bool]:
        def adapt(error: openai.APIStatusError) -> bool:
            text = _error_text(error)
            if self._cap_tokens and any(w in text for w in _MAX_TOKENS_WORDS):
                # The endpoint rejects the cap (a small context: prompt + 4096 > its length; a model that
                # wants max_completion_tokens): asked without it; the reply's byte cap still holds.
                self._cap_tokens = False
                return True
            if want_logprobs[0] and "logprob" in text:
                # The endpoint cannot return logprobs: stop asking, G-Eval uses the written integer.
                self._logprobs = False
                want_logprobs[0] = False
                return True
            if self._auto_downgrade and self._mode != "text" and any(w in text for w in _FORMAT_WORDS):
                self._mode = "json_object" if self._mode == "json_schema" else "text"
                return True
            return False

        return adapt

    async def _chat(
        self,
        prompt: _prompts.StepPrompt,
        user: str,
        tally: _Tally,
        *,
        logprobs: bool,
        schema: Mapping[str, Any] | None = None,
    ) -> _ChatReply:
        want_logprobs = [logprobs and self._logprobs]
        sent = [time.monotonic()]  # when the attempt that answered was sent: its deadline covers the parse

        async def send() -> Any:
            kwargs: dict[str, Any] = {
                "model": self.model,
                "messages": [
                    {"role": "system", "content": prompt.system},
                    {"role": "user", "content": user},
                ],
                "temperature": 0,
                "timeout": self.timeout,
            }
            if prompt.word:
                kwargs["max_tokens"] = 4  # one word; a reply format would only get in its way
            else:
                if self._cap_tokens:
                    kwargs["max_tokens"] = JSON_MAX_TOKENS
                if self._mode == "json_schema":
                    kwargs["response_format"] = prompt.response_format(schema)
                elif self._mode == "json_object":
                    kwargs["response_format"] = {"type": "json_object"}
            if want_logprobs[0]:
                kwargs["logprobs"] = True
                kwargs["top_logprobs"] = self._top_logprobs
            client = await self._client_here()
            sent[0] = time.monotonic()
            return await client.chat.completions.create(**kwargs)

        completion = await self._call(send, tally, "chat", self._adapt_chat(want_logprobs))
        tally.add_usage(getattr(completion, "usage", None))
        # The client builds the reply without validating it: every field is checked before use.
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ReplyParseError("reply has no choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise ReplyParseError("reply has no message")
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise ReplyParseError(f"the model refused: {refusal}")
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            raise ReplyParseError(f"reply content is not text: {type(content).__name__}")
        return _ChatReply(content=content or "", logprobs=_token_logprobs(choices[0]), deadline=sent[0] + self.timeout)

    async def _ask(
        self,
        prompt: _prompts.StepPrompt,
        user: str,
        read: Callable[[Any, _ChatReply], T],
        *,
        logprobs: bool = False,
        schema: Mapping[str, Any] | None = None,
    ) -> JudgeReply[T]:
        """One chat step: call, parse with ``read``; ask again on an unreadable reply, then fail."""
        tally = _Tally()

        async def attempt() -> T:
            reply = await self._chat(prompt, user, tally, logprobs=logprobs, schema=schema)
            if prompt.word:
                return read(reply.content, reply)
            # Every JSON value of the reply, most likely first: the first with the step's shape is read.
            # The search stops at the call's deadline: the judge's timeout covers reading the reply.
            candidates = json_candidates(reply.content, deadline=reply.deadline)
            return read_first(candidates, lambda obj: read(obj, reply))

        return await self._until_readable(prompt.step, tally, attempt)
