"""``OpenAIJudge``: every judge step answered by any OpenAI-compatible endpoint.

OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server and LiteLLM all speak ``/v1/chat/completions``
and ``/v1/embeddings``. Each step is ONE chat call (verification of all claims against all chunks,
the rating of all chunks, the n questions with their noncommittal flags) and ``embed`` is ONE
embeddings call. The contract of each step is in ``ragtrace.judges._base``; what this module adds:

- Structured output. Calls ask for a strict JSON schema; an endpoint that rejects it (400/422 naming
  the response format, as older vLLM and llama.cpp do) is asked again in JSON mode, then with no
  response format at all and the reply read tolerantly. The downgrade is remembered per judge, so
  later calls do not pay for it.
- Retries are ours, not the client's (the client runs with ``max_retries=0``), so that every call is
  counted: exponential backoff with jitter on 429, 5xx, 408, timeouts and connection errors, waiting
  what ``Retry-After`` asks. A reply that cannot be read is asked again ``parse_retries`` times, then
  the step fails with ``error_type="unparseable_reply"``: a verdict is never guessed.
- Every call runs with OpenTelemetry instrumentation suppressed, so an instrumented OpenAI or HTTP
  client in the user's app makes no spans for the judge.
- ``Cost`` counts every call made (failed attempts too), the tokens the endpoint reported and the
  step's wall time; a failed step carries what it spent on its ``JudgeError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import email.utils
import json
import math
import random
import re
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard, TypeVar

import openai
from opentelemetry import context as otel_context

from ragtrace import environment_variables as env
from ragtrace._suppress import suppressed
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges import _prompts
from ragtrace.judges._base import (
    ALL_CAPABILITIES,
    GEvalRating,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
)
from ragtrace.judges._parsing import (
    InvalidReply,
    ReplyParseError,
    align,
    as_bool,
    as_index,
    as_number,
    as_str,
    index_set,
    json_candidates,
    pick,
    pick_list,
    read_first,
)
from ragtrace.metrics._base import REASON_UNPARSEABLE, Cost

T = TypeVar("T")
R = TypeVar("R")

ResponseMode = Literal["json_schema", "json_object", "text"]
"""How the judge asks for JSON: strict schema, JSON mode, or plain text read tolerantly."""

_MODES: tuple[ResponseMode, ...] = ("json_schema", "json_object", "text")
_DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 180.0
"""Seconds per call when neither ``timeout=`` nor ``RAGTRACE_JUDGE_TIMEOUT`` is given: long enough for
a small model on a CPU (first calls of a 0.5B-1.5B model on 2 cores took 43-133 s). The app never
waits for it: a span held past its deadline is exported unscored and its scores follow on a carrier."""
INVALID_REPLY = "invalid_reply"
"""``JudgeError.error_type`` of a reply that names items the request does not have, repeats one, or
has the wrong number of items (see ``_parsing.InvalidReply``)."""
VerifyMode = Literal["auto", "per_claim", "batched"]
ExtractMode = Literal["auto", "llm", "sentences"]
"""How ``extract_claims`` splits an answer: by the model (one call), or into its sentences (no call)."""
"""How ``verify`` asks: one yes/no question per claim (small models), or all claims in one call."""
_OPENAI_HOST = "api.openai.com"
_BARE_ANSWER_WORDS = 8
_EVASION = re.compile(
    r"\b(i (do not|don't|cannot|can't) (know|say|answer|tell)|not sure|no information|unable to answer)\b", re.I
)
_DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
_PLACEHOLDER_KEY = "not-needed"
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json", "grammar")
_CONTEXT_WORDS = ("context length", "context_length", "maximum context", "too many tokens")
_RETRYABLE_STATUS = {408: "timeout", 409: "http_409", 429: "rate_limited"}
_VERDICT_WORDS = {
    "supported": Verdict.SUPPORTED,
    "support": Verdict.SUPPORTED,
    "supports": Verdict.SUPPORTED,
    "entailed": Verdict.SUPPORTED,
    "yes": Verdict.SUPPORTED,
    "contradicted": Verdict.CONTRADICTED,
    "contradicts": Verdict.CONTRADICTED,
    "contradiction": Verdict.CONTRADICTED,
    "neither": Verdict.NEITHER,
    "neutral": Verdict.NEITHER,
    "none": Verdict.NEITHER,
    "no": Verdict.NEITHER,
}
_SCORE_VALUE = re.compile(r'"score"\s*:\s*"?\s*(\d+)')

TokenLogprobs = list[tuple[str, list[tuple[str, float]]]]
"""Per generated token: its text and the top alternatives with their logprobs."""


@dataclass(frozen=True, slots=True)
class _ChatReply:
    content: str
    logprobs: TokenLogprobs | None


class _Tally:
    """What one step spent so far (mutable, private to one step)."""

    __slots__ = ("chat_calls", "completion_tokens", "embedding_calls", "prompt_tokens", "started")

    def __init__(self) -> None:
        self.chat_calls = 0
        self.embedding_calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.started = time.perf_counter()

    def add_usage(self, usage: Any) -> None:
        # An endpoint's usage is informative only: a count that is not a whole number is not counted.
        self.prompt_tokens += _token_count(getattr(usage, "prompt_tokens", None))
        self.completion_tokens += _token_count(getattr(usage, "completion_tokens", None))

    def cost(self) -> Cost:
        return Cost(
            chat_calls=self.chat_calls,
            embedding_calls=self.embedding_calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            seconds=time.perf_counter() - self.started,
        )


class _Retryable(Exception):
    def __init__(self, error_type: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retry_after = retry_after


@contextlib.contextmanager
def _instrumentation_suppressed() -> Iterator[None]:
    """Set the OpenTelemetry API's suppress keys so instrumented clients make no spans for the judge.

    OpenTelemetry instrumentations (openai, httpx, requests, ...) check ``suppress_instrumentation``
    and HTTP ones also ``suppress_http_instrumentation`` in the current context before making a span.
    """
    token = otel_context.attach(suppressed())
    try:
        yield
    finally:
        otel_context.detach(token)


def _retry_after(response: Any) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` as seconds or a date)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _token_count(value: Any) -> int:
    return value if _is_int(value) and value > 0 else 0


def _error_text(error: openai.APIStatusError) -> str:
    body = error.body
    try:
        body_text = json.dumps(body) if body is not None else ""
    except (TypeError, ValueError):
        body_text = str(body)
    return f"{error} {body_text}".lower()


class OpenAIJudge:
    """A judge served by an OpenAI-compatible endpoint; see the module docstring for the behaviour.

    Arguments win over ``RAGTRACE_JUDGE_*`` variables, which win over the defaults:

    - ``model`` (``RAGTRACE_JUDGE_MODEL``, default ``gpt-4o-mini``) and ``embedding_model``
      (``RAGTRACE_JUDGE_EMBEDDING_MODEL``, default ``text-embedding-3-small``).
    - ``client``: an ``openai.AsyncOpenAI`` you configured (Azure, proxies, ...). The judge uses a copy
      with the client's own retries off, and does not close it. Otherwise the judge creates one from
      ``base_url`` (``RAGTRACE_JUDGE_BASE_URL``) and ``api_key`` (``RAGTRACE_JUDGE_API_KEY``, then
      ``OPENAI_API_KEY``; a local endpoint given by ``base_url`` needs none) and ``aclose`` closes it.
    - ``timeout`` seconds per call (``RAGTRACE_JUDGE_TIMEOUT``, ``DEFAULT_TIMEOUT`` = 180, sized for a
      small model on a CPU; the app never waits for it), ``max_retries`` per call
      (``RAGTRACE_JUDGE_MAX_RETRIES``, 3), ``max_concurrency`` calls in flight
      (``RAGTRACE_JUDGE_MAX_CONCURRENCY``, 16).
    - ``response_mode``: ``auto`` starts with a JSON schema and downgrades as needed; or force
      ``json_schema``, ``json_object`` or ``text``.
    - ``parse_retries``: extra calls for a reply that could not be read (default 1).
    - ``retry_base_delay`` / ``retry_max_delay``: backoff bounds in seconds; ``max_retry_after``: a
      ``Retry-After`` longer than this fails the call at once rather than stalling the scorer.
    - ``logprobs``: ask for token logprobs in G-Eval scoring and per-claim verification
      (``top_logprobs`` alternatives).
    - ``extract``: ``llm`` asks the model to split an answer into atomic claims (one call);
      ``sentences`` takes the answer's sentences as its claims, each prefixed with the question when
      there is one so that it keeps the question's meaning (no call: small models asked to rewrite
      often return the question without its answer). ``auto``: sentences when verifying per claim.
    - ``verify``: ``per_claim`` asks one yes/no question per claim (n calls, sent concurrently; what a
      0.5B-7B model answers well, scored by P(yes) from the logprobs), ``batched`` asks for all claims
      against all chunks in one call (cheaper; for large hosted models). ``auto`` (default): batched
      on api.openai.com, per claim on any other endpoint (a self-hosted llama.cpp, Ollama, vLLM).

    Wrong settings raise ``ConfigurationError`` naming the fix.
    """

    capabilities: frozenset[str] = ALL_CAPABILITIES

    def __init__(
        self,
        model: str | None = None,
        embedding_model: str | None = None,
        *,
        client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        max_concurrency: int | None = None,
        response_mode: Literal["auto", "json_schema", "json_object", "text"] = "auto",
        parse_retries: int = 1,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 20.0,
        max_retry_after: float = 60.0,
        logprobs: bool = True,
        top_logprobs: int = 5,
        verify: VerifyMode = "auto",
        extract: ExtractMode = "auto",
    ) -> None:
        self.model = self._model(model, env.RAGTRACE_JUDGE_MODEL, _DEFAULT_MODEL, "model")
        self.embedding_model = self._model(
            embedding_model, env.RAGTRACE_JUDGE_EMBEDDING_MODEL, _DEFAULT_EMBEDDING_MODEL, "embedding_model"
        )
        self.name = f"openai:{self.model}"
        self.timeout = self._positive_float(timeout, env.RAGTRACE_JUDGE_TIMEOUT, DEFAULT_TIMEOUT, "timeout")
        self.max_retries = self._count(max_retries, env.RAGTRACE_JUDGE_MAX_RETRIES, 3, "max_retries", minimum=0)
        self.max_concurrency = self._count(
            max_concurrency, env.RAGTRACE_JUDGE_MAX_CONCURRENCY, 16, "max_concurrency", minimum=1
        )
        if response_mode != "auto" and response_mode not in _MODES:
            raise ConfigurationError(
                f"response_mode={response_mode!r} is unknown: use 'auto', 'json_schema', 'json_object' or 'text'"
            )
        delays = (
            ("retry_base_delay", retry_base_delay),
            ("retry_max_delay", retry_max_delay),
            ("max_retry_after", max_retry_after),
        )
        for label, value in delays:
            if not (_is_finite(value) and value >= 0):
                raise ConfigurationError(f"{label}={value!r} is invalid: give a number of seconds >= 0")
        if not isinstance(parse_retries, int) or parse_retries < 0:
            raise ConfigurationError(f"parse_retries={parse_retries!r} is invalid: give an integer >= 0")
        if extract not in ("auto", "llm", "sentences"):
            raise ConfigurationError(f"extract={extract!r} is unknown: use 'auto', 'llm' or 'sentences'")
        if verify not in ("auto", "per_claim", "batched"):
            raise ConfigurationError(f"verify={verify!r} is unknown: use 'auto', 'per_claim' or 'batched'")
        if not isinstance(top_logprobs, int) or not 1 <= top_logprobs <= 20:
            raise ConfigurationError(f"top_logprobs={top_logprobs!r} is invalid: give an integer from 1 to 20")
        self._mode: ResponseMode = "json_schema" if response_mode == "auto" else response_mode
        self._auto_downgrade = response_mode == "auto"
        self._parse_retries = parse_retries
        self._retry_base_delay = float(retry_base_delay)
        self._retry_max_delay = float(retry_max_delay)
        self._max_retry_after = float(max_retry_after)
        self._logprobs = logprobs
        self._top_logprobs = top_logprobs
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._closed = False
        if client is not None:
            if base_url is not None or api_key is not None:
                raise ConfigurationError("pass either client=... or base_url/api_key, not both")
            # A copy shares the caller's connection pool; only its retry policy differs.
            self._client = client.with_options(max_retries=0, timeout=self.timeout)
            self._owns_client = False
        else:
            url = base_url if base_url is not None else env.read_str(env.RAGTRACE_JUDGE_BASE_URL)
            key = api_key or env.read_str(env.RAGTRACE_JUDGE_API_KEY) or env.read_str("OPENAI_API_KEY")
            if key is None:
                if url is None:
                    raise ConfigurationError(
                        "OpenAIJudge has no API key: set OPENAI_API_KEY or RAGTRACE_JUDGE_API_KEY, pass api_key=..., "
                        "or point base_url (RAGTRACE_JUDGE_BASE_URL) at a local OpenAI-compatible server"
                    )
                key = _PLACEHOLDER_KEY
            self._client_options: dict[str, Any] = {
                "api_key": key,
                "base_url": url,
                "timeout": self.timeout,
                "max_retries": 0,
            }
            self._client = openai.AsyncOpenAI(**self._client_options)
            self._owns_client = True
        if verify == "auto":
            verify = "batched" if _OPENAI_HOST in str(self._client.base_url) else "per_claim"
        self.verify_mode: Literal["per_claim", "batched"] = verify
        if extract == "auto":
            extract = "sentences" if verify == "per_claim" else "llm"
        self.extract_mode: Literal["llm", "sentences"] = extract
        # One client per event loop, each closed when its loop ends (see _client_here).
        self._loop_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._first_client_free = True
        self._loop_clients_lock = threading.Lock()

    # ----------------------------------------------------------------------------------------------
    # configuration
    # ----------------------------------------------------------------------------------------------

    @staticmethod
    def _model(value: str | None, variable: str, default: str, label: str) -> str:
        chosen = value if value is not None else env.read_str(variable, default)
        if not isinstance(chosen, str) or not chosen.strip():
            raise ConfigurationError(f"{label} is empty: pass {label}='...' or set {variable}")
        return chosen.strip()

    @staticmethod
    def _positive_float(value: float | None, variable: str, default: float, label: str) -> float:
        if value is None:
            parsed = env.read_float(variable, default, minimum=0.0)
            value = default if parsed is None else parsed
        if not (_is_finite(value) and value > 0):
            raise ConfigurationError(f"{label}={value!r} is invalid: give a number of seconds > 0 (or set {variable})")
        return float(value)

    @staticmethod
    def _count(value: int | None, variable: str, default: int, label: str, *, minimum: int) -> int:
        if value is None:
            parsed = env.read_int(variable, default, minimum=minimum)
            value = default if parsed is None else parsed
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigurationError(f"{label}={value!r} is invalid: give an integer >= {minimum} (or set {variable})")
        return value

    @property
    def response_mode(self) -> ResponseMode:
        """The response format currently used (after any downgrade)."""
        return self._mode

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={str(self._client.base_url)!r}, mode={self._mode!r})"

    # ----------------------------------------------------------------------------------------------
    # transport: one HTTP call, retried
    # ----------------------------------------------------------------------------------------------

    def _semaphore(self) -> asyncio.Semaphore:
        # One per event loop: a semaphore is bound to the loop that first waits on it.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.max_concurrency)
            self._semaphores[loop] = semaphore
        return semaphore

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
            client = self._client if self._first_client_free else openai.AsyncOpenAI(**self._client_options)
            self._first_client_free = False
        closer = self._close_when_loop_ends(loop, client)
        await closer.__anext__()  # started: the loop now knows it, and will close it
        self._loop_clients[loop] = (client, closer)
        return client

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

    def _backoff(self, attempt: int) -> float:
        ceiling: float = min(self._retry_max_delay, self._retry_base_delay * 2.0**attempt)
        return ceiling * random.uniform(0.5, 1.0)

    async def _call(
        self,
        send: Callable[[], Awaitable[R]],
        tally: _Tally,
        kind: Literal["chat", "embedding"],
        adapt: Callable[[openai.APIStatusError], bool] | None = None,
    ) -> R:
        """Run ``send`` with retries; raise ``JudgeError`` (with the cost so far) when it keeps failing.

        ``adapt`` sees a 400/422 and returns True when it changed the request (a downgrade), in which
        case the call is repeated at once without using a retry.
        """
        if self._closed:
            raise JudgeError(f"{self.name} is closed", error_type="judge_closed", cost=tally.cost())
        failures = 0
        while True:
            if kind == "chat":
                tally.chat_calls += 1
            else:
                tally.embedding_calls += 1
            try:
                async with self._semaphore():
                    with _instrumentation_suppressed():
                        return await asyncio.wait_for(send(), self.timeout)
            except asyncio.TimeoutError:
                problem = _Retryable("timeout", f"no reply within {self.timeout} s")
            except openai.APITimeoutError:
                problem = _Retryable("timeout", f"no reply within {self.timeout} s")
            except openai.APIConnectionError as error:
                problem = _Retryable("connection", f"cannot reach {self._client.base_url}: {error}")
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                # A 200 whose body is not JSON (a proxy cut it, a server crashed mid-write) is a
                # transient server fault: asked again like a 5xx.
                problem = _Retryable("invalid_response", f"the endpoint's reply is not JSON: {error}")
            except openai.APIStatusError as error:
                status = error.status_code
                if status in (400, 422) and adapt is not None and adapt(error):
                    continue
                if status in _RETRYABLE_STATUS or status >= 500:
                    error_type = _RETRYABLE_STATUS.get(status, "http_5xx")
                    problem = _Retryable(error_type, f"HTTP {status}: {error}", _retry_after(error.response))
                else:
                    error_type = {401: "authentication", 403: "authentication", 404: "not_found"}.get(
                        status, "http_4xx"
                    )
                    if status == 400 and any(w in _error_text(error) for w in _CONTEXT_WORDS):
                        error_type = "context_too_long"
                    raise JudgeError(f"HTTP {status}: {error}", error_type=error_type, cost=tally.cost()) from error
            except openai.APIError as error:
                raise JudgeError(
                    f"invalid response: {error}", error_type="invalid_response", cost=tally.cost()
                ) from error
            if failures >= self.max_retries:
                raise JudgeError(
                    f"{problem} (after {failures + 1} attempts)", error_type=problem.error_type, cost=tally.cost()
                )
            if problem.retry_after is not None:
                if problem.retry_after > self._max_retry_after:
                    raise JudgeError(
                        f"{problem}; the server asks to wait {problem.retry_after:.0f} s, "
                        f"more than max_retry_after={self._max_retry_after} s",
                        error_type=problem.error_type,
                        cost=tally.cost(),
                    )
                # Honour the server's wait; a little jitter spreads the calls that were refused together.
                delay = problem.retry_after * (1.0 + 0.1 * random.random())
            else:
                delay = self._backoff(failures)
            failures += 1
            await asyncio.sleep(delay)

    def _adapt_chat(self, want_logprobs: list[bool]) -> Callable[[openai.APIStatusError], bool]:
        def adapt(error: openai.APIStatusError) -> bool:
            text = _error_text(error)
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
            elif self._mode == "json_schema":
                kwargs["response_format"] = prompt.response_format(schema)
            elif self._mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            if want_logprobs[0]:
                kwargs["logprobs"] = True
                kwargs["top_logprobs"] = self._top_logprobs
            client = await self._client_here()
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
        return _ChatReply(content=content or "", logprobs=_token_logprobs(choices[0]))

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
            return read_first(json_candidates(reply.content), lambda obj: read(obj, reply))

        return await self._until_readable(prompt.step, tally, attempt)

    async def _until_readable(self, step: str, tally: _Tally, attempt: Callable[[], Awaitable[T]]) -> JudgeReply[T]:
        """``attempt()`` (one call, read) again while its reply cannot be read (``ReplyParseError``),
        ``parse_retries`` more times at most; then ``JudgeError`` with ``unparseable_reply``."""
        reason = ""
        for _ in range(self._parse_retries + 1):
            try:
                value = await attempt()
            except InvalidReply as error:
                # Readable, but not an answer to this request: not asked again (temperature 0).
                message = f"{step}: invalid reply: {error}"
                raise JudgeError(message, error_type=INVALID_REPLY, cost=tally.cost()) from None
            except ReplyParseError as error:
                reason = str(error)
                continue
            return JudgeReply(value=value, cost=tally.cost())
        raise JudgeError(
            f"{step}: unparseable reply after {self._parse_retries + 1} attempts: {reason}",
            error_type=REASON_UNPARSEABLE,
            cost=tally.cost(),
        )

    # ----------------------------------------------------------------------------------------------
    # steps
    # ----------------------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        """Claims of ``text``; an empty text has none (no call).

        A bare short answer to a question ("1959" to "In what year was she born?") is one claim that
        keeps the question's meaning, "<question> <answer>", made without a call: a small model asked
        to rewrite it may drop the question, and "1959" alone cannot be checked against anything.
        """
        if not text.strip():
            return JudgeReply(value=[])
        bare = _bare_answer_claim(text, question)
        if bare is not None:
            return JudgeReply(value=[bare])
        if self.extract_mode == "sentences":
            return JudgeReply(value=_sentence_claims(text, question))

        def read(obj: Any, _: _ChatReply) -> list[str]:
            claims: list[str] = []
            for item in pick_list(obj, "claims", "statements"):
                claim = as_str(pick(item, "claim", "text", "statement") if isinstance(item, Mapping) else item, "claim")
                if claim not in claims:
                    claims.append(claim)
            return claims

        return await self._ask(_prompts.EXTRACT_CLAIMS, _prompts.render_extract_claims(text, question), read)

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        """``value[claim][chunk]``: one yes/no question per claim (``verify_mode == "per_claim"``, the
        calls sent concurrently) or all claims against all chunks in one call (``"batched"``).

        Per claim, the claim is SUPPORTED (at the chunk the judge names, the only chunk of a
        one-chunk record) when P(yes) >= 0.5, P(yes) read from the logprobs of the answer token
        normalised over yes and no, or the written answer when the endpoint returns no logprobs;
        else CONTRADICTED there when the judge says the context contradicts it, else NEITHER.
        Batched, a chunk the judge lists both as supporting and contradicting a claim counts as
        neither: a self-contradictory verdict is not evidence either way.

        A reply naming a claim or chunk the request does not have, or the wrong number of results,
        fails with ``invalid_reply``.
        """
        if not claims:
            return JudgeReply(value=[])
        if not chunks:
            return JudgeReply(value=[[] for _ in claims])
        if self.verify_mode == "per_claim":
            reply = await self._claim_answers(claims, chunks)
            return JudgeReply([answer.verdicts(len(chunks)) for answer in reply.value], reply.cost)
        return await self._verify_batched(claims, chunks)

    async def support(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Beyond the protocol, as ``OfflineJudge.support``: ``value[claim][chunk]``, the probability that
        the chunks support the claim, from one yes/no question per claim (whatever ``verify_mode``).

        P(yes) normalised over yes and no from the answer token's logprobs; 1.0 or 0.0 from the written
        answer when the endpoint returns no logprobs. With several chunks the claim is asked about
        all of them at once: its probability stands at the chunk the judge names, and the other
        chunks carry 0.0 (not asked about separately), so the best chunk's value is the claim's.
        """
        if not claims:
            return JudgeReply(value=[])
        if not chunks:
            return JudgeReply(value=[[] for _ in claims])
        reply = await self._claim_answers(claims, chunks)
        return JudgeReply([answer.probabilities(len(chunks)) for answer in reply.value], reply.cost)

    async def _claim_answers(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[_ClaimAnswer]]:
        """One VERIFY_CLAIM call per claim, concurrently; the step fails when any of them fails."""
        count = len(chunks)
        schema = _prompts.verify_claim_schema(count)
        prompt = _prompts.VERIFY_CLAIM_WORD if count == 1 else _prompts.VERIFY_CLAIM

        def read(obj: Any, reply: _ChatReply) -> _ClaimAnswer:
            if prompt.word:
                return _read_claim_word(obj, reply)
            return _read_claim_answer(obj, reply, count)

        async def one(claim: str) -> JudgeReply[_ClaimAnswer]:
            user = _prompts.render_verify_claim(claim, chunks)
            return await self._ask(prompt, user, read, logprobs=True, schema=schema)

        outcomes = await asyncio.gather(*(one(c) for c in claims), return_exceptions=True)
        cost = Cost()
        answers: list[_ClaimAnswer] = []
        failure: BaseException | None = None
        for outcome in outcomes:
            if isinstance(outcome, JudgeError):
                cost = cost + outcome.cost
                failure = failure or outcome
            elif isinstance(outcome, BaseException):
                failure = failure or outcome
            else:
                cost = cost + outcome.cost
                answers.append(outcome.value)
        # The calls ran concurrently: the step took as long as the slowest, not their sum.
        seconds = max((o.cost.seconds for o in outcomes if isinstance(o, (JudgeReply, JudgeError))), default=0.0)
        cost = dataclasses.replace(cost, seconds=seconds)
        if isinstance(failure, JudgeError):
            raise JudgeError(str(failure), error_type=failure.error_type, cost=cost) from failure
        if failure is not None:
            raise failure
        return JudgeReply(answers, cost)

    async def _verify_batched(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        count = len(chunks)

        def read_item(item: Any) -> list[Verdict]:
            if not isinstance(item, Mapping):
                raise ReplyParseError(f"verify result is not an object: {item!r}")
            if "verdicts" in item:
                # The one other shape read as meant: a verdict word per chunk, in chunk order.
                verdicts = item["verdicts"]
                if not isinstance(verdicts, list):
                    raise ReplyParseError(f"verify result needs a list of verdicts: {item!r}")
                if len(verdicts) != count:
                    raise InvalidReply(f"verify result has {len(verdicts)} verdicts for {count} chunks")
                return [_verdict_word(v) for v in verdicts]
            # Both lists are required: a chunk missing from a list the reply does not hold is unread,
            # and reading it as "neither" would report the claim as a hallucination.
            supported = index_set(pick(item, "supported_by", "supported"), count, "supported_by")
            contradicted = index_set(pick(item, "contradicted_by", "contradicted"), count, "contradicted_by")
            row: list[Verdict] = []
            for number in range(1, count + 1):
                if number in supported and number not in contradicted:
                    row.append(Verdict.SUPPORTED)
                elif number in contradicted and number not in supported:
                    row.append(Verdict.CONTRADICTED)
                else:
                    row.append(Verdict.NEITHER)
            return row

        def read(obj: Any, _: _ChatReply) -> list[list[Verdict]]:
            items = pick_list(obj, "results", "claims", "verdicts")
            return align(items, len(claims), key="claim", read=read_item, what="claim")

        schema = _prompts.verify_schema(len(claims), count)
        return await self._ask(_prompts.VERIFY, _prompts.render_verify(claims, chunks), read, schema=schema)

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        """For every claim, whether the reference supports it."""
        if not claims:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[bool]:
            items = pick_list(obj, "results", "claims")
            return align(
                items,
                len(claims),
                key="claim",
                read=lambda item: as_bool(pick(item, "correct", "supported", "verdict"), "correct"),
                what="claim",
            )

        user = _prompts.render_classify_claims(claims, reference)
        return await self._ask(_prompts.CLASSIFY_CLAIMS, user, read, schema=_prompts.classify_schema(len(claims)))

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        """For every statement, whether it is relevant to the query."""
        if not statements:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[bool]:
            items = pick_list(obj, "results", "statements")
            return align(
                items,
                len(statements),
                key="statement",
                read=lambda item: as_bool(pick(item, "relevant", "verdict"), "relevant"),
                what="statement",
            )

        user = _prompts.render_rate_statements(query, statements)
        return await self._ask(
            _prompts.RATE_STATEMENTS, user, read, schema=_prompts.rate_statements_schema(len(statements))
        )

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        """Up to ``n`` questions with noncommittal flags, in one call (at least one, or the step fails)."""
        if n < 1:
            raise ValueError(f"n={n}: ask for at least one question")

        def read(obj: Any, _: _ChatReply) -> list[Question]:
            questions: list[Question] = []
            for item in pick_list(obj, "questions"):
                if not isinstance(item, Mapping):
                    raise ReplyParseError(f"question without its noncommittal flag: {item!r}")
                questions.append(
                    Question(
                        text=as_str(pick(item, "question", "text"), "question"),
                        noncommittal=as_bool(pick(item, "noncommittal", "committal_flag"), "noncommittal"),
                    )
                )
            if not questions:
                raise ReplyParseError("reply has no questions")
            return questions[:n]

        return await self._ask(_prompts.GENERATE_QUESTIONS, _prompts.render_generate_questions(answer, n), read)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        """Whether the answer is evasive or noncommittal."""

        def read(obj: Any, _: _ChatReply) -> bool:
            return as_bool(pick(obj, "noncommittal"), "noncommittal")

        return await self._ask(_prompts.DETECT_NONCOMMITTAL, _prompts.render_detect_noncommittal(answer), read)

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Every text embedded in one embeddings call, in input order.

        A reply without one vector of finite numbers per text is asked again ``parse_retries`` times,
        then fails with ``unparseable_reply``.
        """
        if not texts:
            return JudgeReply(value=[])
        tally = _Tally()
        # Endpoints reject empty strings; a space embeds as "nothing" just as well.
        inputs = [text if text.strip() else " " for text in texts]

        async def send() -> Any:
            client = await self._client_here()
            return await client.embeddings.create(
                model=self.embedding_model, input=inputs, encoding_format="float", timeout=self.timeout
            )

        async def attempt() -> list[list[float]]:
            response = await self._call(send, tally, "embedding")
            tally.add_usage(getattr(response, "usage", None))
            return _vectors(response, len(texts))

        return await self._until_readable("embed", tally, attempt)

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        """Every chunk's relevance in [0, 1], in one call."""
        if not chunks:
            return JudgeReply(value=[])

        def read(obj: Any, _: _ChatReply) -> list[float]:
            items = pick_list(obj, "ratings", "chunks", "results")
            return align(
                items,
                len(chunks),
                key="chunk",
                read=lambda item: as_number(pick(item, "relevance", "score", "rating"), "relevance", low=0.0, high=1.0),
                what="chunk",
            )

        user = _prompts.render_rate_chunks(query, chunks)
        return await self._ask(_prompts.RATE_CHUNKS, user, read, schema=_prompts.rate_chunks_schema(len(chunks)))

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        """How well the answer addresses the query, in [0, 1], with the judge's explanation."""

        def read(obj: Any, _: _ChatReply) -> Rating:
            value = as_number(pick(obj, "score", "rating"), "score", low=0.0, high=1.0)
            explanation = obj.get("explanation", "") if isinstance(obj, Mapping) else ""
            return Rating(value=value, explanation=str(explanation or ""))

        return await self._ask(_prompts.RATE_ANSWER, _prompts.render_rate_answer(query, answer), read)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        """Evaluation steps for the criteria (the caller caches them)."""

        def read(obj: Any, _: _ChatReply) -> list[str]:
            steps = [as_str(s, "step") for s in pick_list(obj, "steps", "evaluation_steps")]
            if not steps:
                raise ReplyParseError("reply has no steps")
            return steps

        return await self._ask(_prompts.GEVAL_STEPS, _prompts.render_geval_steps(criteria), read)

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        """The score on ``score_range``, probability-weighted over the score token when logprobs come back."""
        low, high = score_range
        if low >= high:
            raise ValueError(f"score_range={score_range}: the low end must be below the high end")

        def read(obj: Any, reply: _ChatReply) -> GEvalRating:
            written = as_number(pick(obj, "score", "rating"), "score", low=low, high=high)
            explanation = obj.get("explanation", "") if isinstance(obj, Mapping) else ""
            weighted = _weighted_score(reply, low, high)
            if weighted is None:
                return GEvalRating(score=float(round(written)), explanation=str(explanation or ""), weighted=False)
            return GEvalRating(score=weighted, explanation=str(explanation or ""), weighted=True)

        user = _prompts.render_geval_score(criteria, steps, params, score_range)
        return await self._ask(_prompts.GEVAL_SCORE, user, read, logprobs=True)

    async def aclose(self) -> None:
        """Close the client this judge created (a client passed in stays open). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self._owns_client:
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


def _verdict_word(value: Any) -> Verdict:
    word = str(value).strip().lower()
    if word in _VERDICT_WORDS:
        return _VERDICT_WORDS[word]
    raise ReplyParseError(f"unknown verdict {value!r}")


def _vectors(response: Any, count: int) -> list[list[float]]:
    """The ``count`` vectors of an embeddings reply in input order; raise ``ReplyParseError`` otherwise."""
    data = getattr(response, "data", None)
    if not isinstance(data, list):
        raise ReplyParseError("embeddings reply has no data list")
    placed: dict[int, list[float]] = {}
    for position, item in enumerate(data):
        index = getattr(item, "index", None)
        index = position if index is None else index
        if not _is_int(index) or index in placed:
            raise ReplyParseError(f"embedding {position} has a bad or repeated index: {index!r}")
        vector = getattr(item, "embedding", None)
        if not isinstance(vector, list) or not vector or not all(_is_finite(x) for x in vector):
            raise ReplyParseError(f"embedding {index} is not a list of finite numbers")
        placed[index] = [float(x) for x in vector]
    if sorted(placed) != list(range(count)):
        raise ReplyParseError(f"asked for {count} vectors, got {len(placed)}")
    return [placed[i] for i in range(count)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _token_logprobs(choice: Any) -> TokenLogprobs | None:
    """The reply's token logprobs; None when absent or malformed (G-Eval then uses the written integer)."""
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not isinstance(content, list) or not content:
        return None
    tokens: TokenLogprobs = []
    for item in content:
        token = getattr(item, "token", None)
        alternatives = getattr(item, "top_logprobs", None) or []
        if not isinstance(token, str) or not isinstance(alternatives, list):
            return None
        top: list[tuple[str, float]] = []
        for alt in alternatives:
            text, logprob = getattr(alt, "token", None), getattr(alt, "logprob", None)
            if not isinstance(text, str) or not _is_finite(logprob):
                return None
            top.append((text, float(logprob)))
        tokens.append((token, top))
    return tokens


def _weighted_score(reply: _ChatReply, low: int, high: int) -> float | None:
    """G-Eval's probability-weighted score: sum of v * p(v) over the score token's integer alternatives.

    The score token is found by rebuilding the text from the tokens and locating the ``"score"``
    value; ``None`` when there are no logprobs or no alternative is an integer in range.
    """
    if not reply.logprobs:
        return None
    text = "".join(token for token, _ in reply.logprobs)
    match = _SCORE_VALUE.search(text)
    if match is None:
        return None
    offset = match.start(1)
    position = 0
    for token, top in reply.logprobs:
        if position <= offset < position + len(token):
            weights: dict[int, float] = {}
            for alternative, logprob in top or [(token, 0.0)]:
                stripped = alternative.strip()
                if stripped.isdigit() and low <= int(stripped) <= high:
                    weights[int(stripped)] = weights.get(int(stripped), 0.0) + math.exp(logprob)
            total = sum(weights.values())
            if total <= 0:
                return None
            return sum(value * p for value, p in weights.items()) / total
        position += len(token)
    return None


_YES_WORDS = ("yes", "true", "supported")
_NO_WORDS = ("no", "false", "unsupported")
_ANSWER_VALUE = re.compile(r'"supported"\s*:\s*"?')


@dataclass(frozen=True, slots=True)
class _ClaimAnswer:
    """One claim's answer: P(yes) (from logprobs, or 1.0/0.0 from the written word), the written
    contradiction flag, and the chunk it rests on (0-based)."""

    p_yes: float
    contradicted: bool
    chunk: int
    weighted: bool

    def verdicts(self, count: int) -> list[Verdict]:
        row = [Verdict.NEITHER] * count
        if self.p_yes >= 0.5:
            row[self.chunk] = Verdict.SUPPORTED
        elif self.contradicted:
            row[self.chunk] = Verdict.CONTRADICTED
        return row

    def probabilities(self, count: int) -> list[float]:
        row = [0.0] * count
        row[self.chunk] = self.p_yes
        return row


def _yes_no(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().strip('."').lower()
    if word in _YES_WORDS:
        return True
    if word in _NO_WORDS:
        return False
    raise ReplyParseError(f"{what} is not yes or no: {value!r}")


def _read_claim_answer(obj: Any, reply: _ChatReply, count: int) -> _ClaimAnswer:
    supported = _yes_no(pick(obj, "supported", "answer", "verdict"), "supported")
    contradicted = False
    if isinstance(obj, Mapping) and any(str(k).lower() == "contradicted" for k in obj):
        contradicted = _yes_no(pick(obj, "contradicted"), "contradicted")
    chunk = 0
    cited = isinstance(obj, Mapping) and any(str(k).lower() in ("chunk", "passage") for k in obj)
    if count > 1 or cited:
        number = as_index(pick(obj, "chunk", "passage"), "chunk")
        if not 1 <= number <= count:
            raise InvalidReply(f"the answer rests on chunk {number}, but the request has chunks 1 to {count}")
        chunk = number - 1
    p_yes = _yes_probability(reply)
    if p_yes is None:
        return _ClaimAnswer(1.0 if supported else 0.0, contradicted and not supported, chunk, weighted=False)
    return _ClaimAnswer(p_yes, contradicted and p_yes < 0.5, chunk, weighted=True)


def _read_claim_word(text: str, reply: _ChatReply) -> _ClaimAnswer:
    """One word: yes, no or contradicted (any case, punctuation around it); P(yes) from the logprobs."""
    words = re.findall(r"[a-z]+", text.lower())
    if not words:
        raise ReplyParseError(f"the reply is not yes, no or contradicted: {text[:40]!r}")
    word = words[0]
    if word.startswith("contradict"):
        supported, contradicted = False, True
    elif word in ("yes", "no"):
        supported, contradicted = word == "yes", False
    else:
        raise ReplyParseError(f"the reply is not yes, no or contradicted: {text[:40]!r}")
    p_yes = _yes_probability(reply)
    if p_yes is None:
        return _ClaimAnswer(1.0 if supported else 0.0, contradicted, 0, weighted=False)
    return _ClaimAnswer(p_yes, contradicted and p_yes < 0.5, 0, weighted=True)


def _answer_class(token: str) -> bool | None:
    """True for a token that starts "yes", False for one that starts "no", None otherwise."""
    word = token.strip().strip('"').strip().lower()
    if not word:
        return None
    if word.startswith("y"):
        return True
    if word.startswith("n") and not word.startswith("ne"):  # "neither" is not a no to a yes/no question
        return False
    return None


def _yes_probability(reply: _ChatReply) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the answer token, from its top alternatives; None without logprobs
    or when no alternative there is a yes or a no."""
    if not reply.logprobs:
        return None
    text = "".join(token for token, _ in reply.logprobs)
    match = _ANSWER_VALUE.search(text)
    offset = match.end() if match is not None else len(text) - len(text.lstrip())
    position = 0
    for token, top in reply.logprobs:
        end = position + len(token)
        # The token holding the answer's first letter (a token may also hold the opening quote).
        if end > offset and token[max(0, offset - position) :].strip().strip('"'):
            yes = no = 0.0
            for alternative, logprob in top or [(token, 0.0)]:
                kind = _answer_class(alternative)
                if kind is True:
                    yes += math.exp(logprob)
                elif kind is False:
                    no += math.exp(logprob)
            if yes + no <= 0.0:
                return None
            return yes / (yes + no)
        position = end
    return None


def _bare_answer_claim(text: str, question: str | None) -> str | None:
    """ "<question> <answer>" for a bare short answer (a name, a number, yes/no), else None."""
    if not question or not question.strip():
        return None
    answer = text.strip()
    if _EVASION.search(answer):
        return None
    words = answer.split()
    if len(words) > _BARE_ANSWER_WORDS or re.search(r"[.!?;:]\s+\S", answer) or "\n" in answer:
        return None
    # A sentence with a verb of its own ("She was born in 1959.") is extracted as usual.
    if len(words) > 3 and answer.endswith("."):
        return None
    return f"{question.strip()} {answer.rstrip('.')}"


def _sentence_claims(text: str, question: str | None) -> list[str]:
    """The sentences of ``text`` as claims, each after the question when there is one."""
    import pysbd  # a dependency of the package (the offline judge's segmenter); imported on first use

    head = f"{question.strip()} " if question and question.strip() else ""
    claims: list[str] = []
    for sentence in pysbd.Segmenter(language="en", clean=False).segment(text):
        sentence = sentence.strip()
        if not re.search(r"\w", sentence) or sentence.endswith("?") or _EVASION.search(sentence):
            continue  # a question or an evasion asserts nothing to check
        if head + sentence not in claims:
            claims.append(head + sentence)
    return claims
