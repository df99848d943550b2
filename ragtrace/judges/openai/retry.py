"""The OpenAI-compatible judge's retry loop: one call sent until it answers, retried and counted.

``Retrier`` is an object the judge's ``Transport`` holds, configured by a ``RetryPolicy``:
``call`` runs one request under the running loop's semaphore (bounding calls in flight) with
OpenTelemetry instrumentation suppressed, retries 429, 5xx, 408, 409, timeouts, connection errors and
non-JSON bodies with backoff and ``Retry-After``, sends a 400/422 again at once when the caller's
``adapt`` changed the request (a downgrade), and turns every other failure into a ``JudgeError``
carrying the cost so far; ``until_readable`` asks again while a reply cannot be read. Every call is
counted in a ``Tally``. What is sent, and through which client, is the transport's.

A ``JudgeError``'s message leaves the app (its log, the span, the collector's stored explanation), so
it never quotes an endpoint's error text: an HTTP failure is its status and the client's error type
(a 401 body may echo the ``Authorization`` header), a connection failure the URL without its
credentials and the transport's error type; whatever the message still quotes of a reply goes
through the transport's ``scrub`` (the judge's own key, its URL's credentials, anything bearer-like).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import openai
from opentelemetry import context as otel_context

from ragtrace._cost import Cost
from ragtrace._suppress import suppressed
from ragtrace.judges._base import UNPARSEABLE_REPLY, JudgeError, JudgeReply
from ragtrace.judges.openai.http import ReplyRefused
from ragtrace.judges.openai.parsing import (
    InvalidReply,
    ReplyDeadline,
    ReplyParseError,
)
from ragtrace.judges.openai.replies import _is_int

T = TypeVar("T")
R = TypeVar("R")

INVALID_REPLY = "invalid_reply"
"""``JudgeError.error_type`` of a reply that names items the request does not have, repeats one, or
has the wrong number of items (see ``parsing.InvalidReply``)."""

_CONTEXT_WORDS = ("context length", "context_length", "maximum context", "too many tokens")
_RETRYABLE_STATUS = {408: "timeout", 409: "http_409", 429: "rate_limited"}


class Tally:
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


def error_text(error: openai.APIStatusError) -> str:
    body = error.body
    try:
        body_text = json.dumps(body) if body is not None else ""
    except (TypeError, ValueError):
        body_text = str(body)
    return f"{error} {body_text}".lower()


def _kind(error: BaseException) -> str:
    """The error's type, and its cause's when the client wrapped one (``APIConnectionError: ConnectError``)."""
    cause = error.__cause__
    return f"{type(error).__name__}: {type(cause).__name__}" if cause is not None else type(error).__name__


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long a call may take and how often it is tried again (the judge checked every value)."""

    timeout: float
    """Seconds one attempt may take, the reply's reading included."""
    max_retries: int
    """Attempts after the first on a retryable failure."""
    parse_retries: int
    """Calls after the first while the reply cannot be read."""
    base_delay: float
    max_delay: float
    """Backoff bounds in seconds: attempt n waits a random 50-100% of ``min(max_delay, base_delay * 2**n)``."""
    max_retry_after: float
    """A ``Retry-After`` longer than this fails the call at once rather than stalling the scorer."""


class Retrier:
    """Sends one call until it answers, as ``policy`` says, at most ``max_concurrency`` in flight per loop.

    ``where`` (the endpoint's URL without credentials) goes into failure messages, every one of which
    passes through ``scrub`` first: they leave the app.
    """

    def __init__(self, policy: RetryPolicy, *, where: str, max_concurrency: int, scrub: Callable[[str], str]) -> None:
        self.policy = policy
        self.where = where
        self.max_concurrency = max_concurrency
        self._scrub = scrub
        # One per event loop: a semaphore is bound to the loop that first waits on it.
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def error(self, message: str, error_type: str, tally: Tally) -> JudgeError:
        """The ``JudgeError`` of a failed step, its message scrubbed (it leaves the app)."""
        return JudgeError(self._scrub(message), error_type=error_type, cost=tally.cost())

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = asyncio.Semaphore(self.max_concurrency)
            self._semaphores[loop] = semaphore
        return semaphore

    def _backoff(self, attempt: int) -> float:
        ceiling: float = min(self.policy.max_delay, self.policy.base_delay * 2.0**attempt)
        return ceiling * random.uniform(0.5, 1.0)

    async def call(
        self,
        send: Callable[[], Awaitable[R]],
        tally: Tally,
        kind: Literal["chat", "embedding"],
        adapt: Callable[[openai.APIStatusError], bool] | None = None,
    ) -> R:
        """Run ``send`` with retries; raise ``JudgeError`` (with the cost so far) when it keeps failing.

        ``adapt`` sees a 400/422 and returns True when it changed the request (a downgrade), in which
        case the call is repeated at once without using a retry.
        """
        timeout = self.policy.timeout
        failures = 0
        while True:
            if kind == "chat":
                tally.chat_calls += 1
            else:
                tally.embedding_calls += 1
            try:
                async with self._semaphore():
                    with _instrumentation_suppressed():
                        return await asyncio.wait_for(send(), timeout)
            except asyncio.TimeoutError:
                problem = _Retryable("timeout", f"no reply within {timeout} s")
            except openai.APITimeoutError:
                problem = _Retryable("timeout", f"no reply within {timeout} s")
            except ReplyRefused as error:
                # A redirect elsewhere or an oversized reply: the same request would get the same.
                raise self.error(str(error), error.error_type, tally) from None
            except openai.APIConnectionError as error:
                if isinstance(error.__cause__, ReplyRefused):  # an older client wraps it
                    raise self.error(str(error.__cause__), error.__cause__.error_type, tally) from None
                problem = _Retryable("connection", f"cannot reach {self.where} ({_kind(error)})")
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
                # RecursionError: a body nested deeper than the JSON parser goes (a hostile reply).
                # A 200 whose body is not JSON (a proxy cut it, a server crashed mid-write) is a
                # transient server fault: asked again like a 5xx.
                problem = _Retryable("invalid_response", f"the endpoint's reply is not JSON ({type(error).__name__})")
            except openai.APIStatusError as error:
                status = error.status_code
                if status in (400, 422) and adapt is not None and adapt(error):
                    continue
                if status in _RETRYABLE_STATUS or status >= 500:
                    error_type = _RETRYABLE_STATUS.get(status, "http_5xx")
                    problem = _Retryable(error_type, f"HTTP {status} ({_kind(error)})", _retry_after(error.response))
                else:
                    error_type = {401: "authentication", 403: "authentication", 404: "not_found"}.get(
                        status, "http_4xx"
                    )
                    if status == 400 and any(w in error_text(error) for w in _CONTEXT_WORDS):
                        error_type = "context_too_long"
                    # Status and type only: the body is the endpoint's, and may quote the request's key.
                    raise self.error(f"HTTP {status} ({_kind(error)})", error_type, tally) from None
            except openai.APIError as error:
                raise self.error(f"invalid response ({_kind(error)})", "invalid_response", tally) from None
            if failures >= self.policy.max_retries:
                raise self.error(f"{problem} (after {failures + 1} attempts)", problem.error_type, tally)
            if problem.retry_after is not None:
                if problem.retry_after > self.policy.max_retry_after:
                    raise self.error(
                        f"{problem}; the server asks to wait {problem.retry_after:.0f} s, "
                        f"more than max_retry_after={self.policy.max_retry_after} s",
                        problem.error_type,
                        tally,
                    )
                # Honour the server's wait; a little jitter spreads the calls that were refused together.
                delay = problem.retry_after * (1.0 + 0.1 * random.random())
            else:
                delay = self._backoff(failures)
            failures += 1
            await asyncio.sleep(delay)

    async def until_readable(self, step: str, tally: Tally, attempt: Callable[[], Awaitable[T]]) -> JudgeReply[T]:
        """``attempt()`` (one call, read) again while its reply cannot be read (``ReplyParseError``),
        ``parse_retries`` more times at most; then ``JudgeError`` with ``unparseable_reply``."""
        parse_retries = self.policy.parse_retries
        reason = ""
        for _ in range(parse_retries + 1):
            try:
                value = await attempt()
            except InvalidReply as error:
                # Readable, but not an answer to this request: not asked again (temperature 0).
                raise self.error(f"{step}: invalid reply: {error}", INVALID_REPLY, tally) from None
            except ReplyDeadline:
                message = f"{step}: reading the reply took past the {self.policy.timeout} s deadline"
                raise self.error(message, "timeout", tally) from None
            except ReplyParseError as error:
                reason = str(error)
                continue
            return JudgeReply(value=value, cost=tally.cost())
        raise self.error(
            f"{step}: unparseable reply after {parse_retries + 1} attempts: {reason}", UNPARSEABLE_REPLY, tally
        )
