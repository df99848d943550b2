"""The OpenAI-compatible judge's transport: which client a call goes through, and what a chat step sends.

``Transport`` is the object every step of an ``OpenAIJudge`` calls through: a client per event loop
(closed as its loop ends), the response-format downgrade (json_schema -> json_object -> text) and the
logprobs opt-out, which it learns from the endpoint and keeps for the judge's life, and ``ask``, which
sends one chat step, reads the reply with the step's reader and asks again while it cannot be read.
It holds a ``Retrier`` (``retry``), which sends each call until it answers.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import openai

from ragtrace._secrets import scrub, strip_url, url_secrets
from ragtrace.judges._base import JudgeReply
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.http import judge_http_client
from ragtrace.judges.openai.parsing import (
    ReplyParseError,
    json_candidates,
    read_first,
)
from ragtrace.judges.openai.replies import _ChatReply, _token_logprobs
from ragtrace.judges.openai.retry import Retrier, RetryPolicy, Tally, error_text

T = TypeVar("T")
R = TypeVar("R")

ResponseMode = Literal["json_schema", "json_object", "text"]
"""How the judge asks for JSON: strict schema, JSON mode, or plain text read tolerantly."""

_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json", "grammar")

JSON_MAX_TOKENS = 4096
"""``max_tokens`` of a JSON step: the longest reply asked for (claims of a long answer, a verdict per claim
and chunk) is a few thousand tokens; an endpoint that rambles past it is cut there, not paid for."""
_MAX_TOKENS_WORDS = ("max_tokens", "max_completion_tokens", "in the completion")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a transport that makes its own clients sends its calls (the judge resolved every value)."""

    base_url: str | None
    api_key: str = field(repr=False)
    credentials: tuple[str, str] | None = field(default=None, repr=False)
    """The base URL's user and password, taken out of it (``http.split_credentials``): the HTTP client's
    Basic auth."""


class Transport:
    """Every call of one judge: through the caller's ``client`` (a copy with its retries off; the caller
    closes it) or through clients of its own made for ``Endpoint`` (one per event loop, closed by
    ``aclose`` or as their loop ends), each sent by a ``Retrier`` under ``policy``.

    ``mode``, ``logprobs`` and the ``max_tokens`` cap start as configured and are downgraded, once and for
    every later call, when the endpoint rejects them (``auto_downgrade`` allows the response-format one).
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI | Endpoint,
        *,
        name: str,
        model: str,
        policy: RetryPolicy,
        max_concurrency: int,
        mode: ResponseMode,
        auto_downgrade: bool,
        logprobs: bool,
        top_logprobs: int,
    ) -> None:
        self.name = name
        self.model = model
        self.timeout = policy.timeout
        self.mode: ResponseMode = mode
        self._auto_downgrade = auto_downgrade
        self._logprobs = logprobs
        self._top_logprobs = top_logprobs
        self._cap_tokens = True  # max_tokens on JSON steps, until the endpoint rejects it (_adapt_chat)
        self._closed = False
        if isinstance(client, Endpoint):
            self._endpoint: Endpoint | None = client
            self._client = self._new_client(client)
        else:
            self._endpoint = None  # the caller's client: configured (and guarded) by the caller
            # A copy shares the caller's connection pool; only its retry policy differs.
            self._client = client.with_options(max_retries=0, timeout=self.timeout)
        # One client per event loop, each closed when its loop ends (see client_here).
        self._loop_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._first_client_free = True
        self._loop_clients_lock = threading.Lock()
        # What a message leaving the app must not quote: the key, the URL's credentials as given and as
        # the Basic header carries them. Fixed for the transport's life, as its clients' settings are.
        known = [*url_secrets(self._client.base_url), str(getattr(self._client, "api_key", "") or "")]
        credentials = self._endpoint.credentials if self._endpoint is not None else None
        if credentials is not None:
            user, password = credentials
            known += [password, base64.b64encode(f"{user}:{password}".encode()).decode()]
        self._secrets = tuple(known)
        self.retrier = Retrier(
            policy, where=strip_url(self._client.base_url), max_concurrency=max_concurrency, scrub=self.scrub
        )

    @property
    def base_url(self) -> Any:
        """The endpoint's base URL, as the client holds it (credentials out, when the transport made it)."""
        return self._client.base_url

    def scrub(self, text: str) -> str:
        """``text`` without this transport's secrets (its API key, its URL's credentials as given and as
        the Basic header carries them) or bearer-like ones: for whatever of an endpoint's leaves the app."""
        return scrub(text, self._secrets)

    async def client_here(self) -> openai.AsyncOpenAI:
        """The client of the running event loop.

        A connection pool belongs to the event loop (and process) that first used it: on another loop,
        or after a fork, its connections and locks are dead. A judge that made its own client keeps
        one per loop, and closes each as its loop ends: a started async generator is closed by
        ``loop.shutdown_asyncgens()``, which ``asyncio.run`` and the scoring worker call before closing
        the loop, so a judge reused across ``asyncio.run`` calls leaves no socket open behind. A client
        passed in is the caller's to manage.
        """
        endpoint = self._endpoint
        if endpoint is None:
            return self._client
        loop = asyncio.get_running_loop()
        entry = self._loop_clients.get(loop)
        if entry is not None:
            return entry[0]
        with self._loop_clients_lock:
            client = self._client if self._first_client_free else self._new_client(endpoint)
            self._first_client_free = False
        closer = self._close_when_loop_ends(loop, client)
        await closer.__anext__()  # started: the loop now knows it, and will close it
        self._loop_clients[loop] = (client, closer)
        return client

    def _new_client(self, endpoint: Endpoint) -> openai.AsyncOpenAI:
        """A client of this transport's own making: its HTTP client follows no redirect to another origin
        and reads no reply past ``MAX_REPLY_BYTES`` (``http``)."""
        http_client = judge_http_client(timeout=self.timeout, credentials=endpoint.credentials)
        return openai.AsyncOpenAI(
            api_key=endpoint.api_key,
            base_url=endpoint.base_url,
            timeout=self.timeout,
            max_retries=0,  # retries are the Retrier's, so that every call is counted
            http_client=http_client,
        )

    async def _close_when_loop_ends(
        self, loop: asyncio.AbstractEventLoop, client: openai.AsyncOpenAI
    ) -> AsyncGenerator[None, None]:
        """Yields once, then, when closed (by ``aclose`` or by the loop's ``shutdown_asyncgens``, see
        ``client_here``), forgets ``loop``'s entry and closes ``client``.

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
            text = error_text(error)
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
            if self._auto_downgrade and self.mode != "text" and any(w in text for w in _FORMAT_WORDS):
                self.mode = "json_object" if self.mode == "json_schema" else "text"
                return True
            return False

        return adapt

    async def chat(
        self,
        prompt: _prompts.StepPrompt,
        user: str,
        tally: Tally,
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
                if self.mode == "json_schema":
                    kwargs["response_format"] = prompt.response_format(schema)
                elif self.mode == "json_object":
                    kwargs["response_format"] = {"type": "json_object"}
            if want_logprobs[0]:
                kwargs["logprobs"] = True
                kwargs["top_logprobs"] = self._top_logprobs
            client = await self.client_here()
            sent[0] = time.monotonic()
            return await client.chat.completions.create(**kwargs)

        completion = await self.call(send, tally, "chat", self._adapt_chat(want_logprobs))
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

    async def ask(
        self,
        prompt: _prompts.StepPrompt,
        user: str,
        read: Callable[[Any, _ChatReply], T],
        *,
        logprobs: bool = False,
        schema: Mapping[str, Any] | None = None,
    ) -> JudgeReply[T]:
        """One chat step: call, parse with ``read``; ask again on an unreadable reply, then fail."""
        tally = Tally()

        async def attempt() -> T:
            reply = await self.chat(prompt, user, tally, logprobs=logprobs, schema=schema)
            if prompt.word:
                return read(reply.content, reply)
            # Every JSON value of the reply, most likely first: the first with the step's shape is read.
            # The search stops at the call's deadline: the judge's timeout covers reading the reply.
            candidates = json_candidates(reply.content, deadline=reply.deadline)
            return read_first(candidates, lambda obj: read(obj, reply))

        return await self.retrier.until_readable(prompt.step, tally, attempt)

    async def call(
        self,
        send: Callable[[], Awaitable[R]],
        tally: Tally,
        kind: Literal["chat", "embedding"],
        adapt: Callable[[openai.APIStatusError], bool] | None = None,
    ) -> R:
        """``send`` through the retrier (``Retrier.call``); a closed transport sends nothing."""
        if self._closed:
            raise self.retrier.error(f"{self.name} is closed", "judge_closed", tally)
        return await self.retrier.call(send, tally, kind, adapt)

    async def embeddings(self, model: str, inputs: list[str], tally: Tally) -> Any:
        """One embeddings call of ``inputs``, retried and counted in ``tally``; the reply unread."""

        async def send() -> Any:
            client = await self.client_here()
            return await client.embeddings.create(
                model=model, input=inputs, encoding_format="float", timeout=self.timeout
            )

        response = await self.call(send, tally, "embedding")
        tally.add_usage(getattr(response, "usage", None))
        return response

    async def aclose(self) -> None:
        """Close the clients this transport made (a client passed in stays open); later calls fail with
        ``judge_closed``. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._endpoint is None:
            return
        here = asyncio.get_running_loop()
        entries = list(self._loop_clients.items())
        self._loop_clients.clear()
        if self._first_client_free:  # never handed to a loop, so no closer owns it
            await self._client.close()
        for loop, (_, closer) in entries:
            if loop is here:
                await closer.aclose()
            elif loop.is_running():
                # Its connections belong to that loop: close them there.
                asyncio.run_coroutine_threadsafe(closer.aclose(), loop)
            # Else that loop is gone (closed without shutdown_asyncgens, a forked parent's): its
            # connections cannot be closed from here and are dropped with the client.
