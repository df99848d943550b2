"""The HTTP client a judge makes for itself: no redirect across origins, a byte cap on every reply,
no credentials in the URL it logs.

The OpenAI client's default HTTP client follows every redirect: a 307 to another host re-sent the
prompt (the record's text) there. It reads any reply whole: a 150 MB reply took the app's RSS to 588
MiB. And a ``http://user:pass@host`` base URL is logged as is by the HTTP package on every request.
``judge_http_client`` builds the OpenAI client's default HTTP client with one response hook, which

- refuses a redirect whose target is another origin (scheme, host or port): ``ReplyRefused`` with
  ``error_type="redirect"``; a redirect within the origin is followed as before;
- refuses a compressed reply (the client asks for ``identity``, so a compressed body is the server's
  choice: its decoded size is not what the wire says) and a reply whose ``Content-Length`` is above
  ``max_bytes``, and caps what is read of any other: past ``max_bytes`` the read stops and the
  connection is dropped, ``ReplyRefused`` with ``error_type="reply_too_large"``;

and takes the credentials out of the base URL (``split_credentials``) into the client's Basic auth,
which is what the HTTP package did with them, so every URL it logs or quotes is credential-free.

``ReplyRefused`` is an ``openai.OpenAIError``: the client re-raises those as they are (older clients
wrap them in ``APIConnectionError``, whose cause it then is); the retry loop fails the step at once.
The package is the one the installed ``openai`` is built on (``httpx``, or ``httpx2`` from openai 3).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

import openai

MAX_REPLY_BYTES: Final = 1 << 20
"""Bytes read of one reply at most (1 MiB). A JSON step's reply is capped at ``JSON_MAX_TOKENS`` tokens
(tens of KB); G-Eval's with logprobs is ~0.5 KB a token. Past it the reply is refused, not read."""

REDIRECT: Final = "redirect"
"""``JudgeError.error_type`` of a redirect to another origin (never followed)."""

REPLY_TOO_LARGE: Final = "reply_too_large"
"""``JudgeError.error_type`` of a reply over ``MAX_REPLY_BYTES``, or compressed when it was asked not to be."""


def _http_package() -> Any:
    """The HTTP package under the installed ``openai`` (its ``AsyncClient`` is the default's base)."""
    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


_HTTP = _http_package()


class ReplyRefused(openai.OpenAIError):
    """The endpoint's reply was refused before it was read whole; the message names why, not its text."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


def split_credentials(url: str | None) -> tuple[str | None, tuple[str, str] | None]:
    """``url`` without its user information, and the (user, password) it held (None when none)."""
    if url is None:
        return None, None
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username or ""), unquote(parts.password or ""))


class _CappedStream(_HTTP.AsyncByteStream):  # type: ignore[misc,name-defined]
    """``inner``'s bytes until ``limit`` of them have come; then ``ReplyRefused`` (the connection is closed)."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ReplyRefused(f"the reply is larger than {self._limit} bytes", REPLY_TOO_LARGE)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _origin(url: Any) -> tuple[str, str, int | None]:
    port = url.port if url.port is not None else {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host, port)


def _guard(max_bytes: int) -> Any:
    async def on_response(response: Any) -> None:
        if response.has_redirect_location:
            target = response.request.url.join(response.headers["location"])
            if _origin(target) != _origin(response.request.url):
                # The prompt is the record's text: it goes to the endpoint configured, nowhere else.
                raise ReplyRefused(f"HTTP {response.status_code} redirect to another origin, not followed", REDIRECT)
            return
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReplyRefused(f"a {encoding} reply, though identity was asked for", REPLY_TOO_LARGE)
        length = response.headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > max_bytes:
            raise ReplyRefused(f"the reply announces {int(length)} bytes, more than {max_bytes}", REPLY_TOO_LARGE)
        response.stream = _CappedStream(response.stream, max_bytes)

    return on_response


def judge_http_client(
    *, timeout: float, credentials: tuple[str, str] | None = None, max_bytes: int = MAX_REPLY_BYTES
) -> Any:
    """The OpenAI client's default HTTP client (connection limits, redirects within the origin), guarded
    as the module docstring says; ``credentials`` become its Basic auth."""
    auth = _HTTP.BasicAuth(*credentials) if credentials is not None else None
    return openai.DefaultAsyncHttpxClient(
        timeout=timeout,
        auth=auth,
        headers={"Accept-Encoding": "identity"},
        event_hooks={"response": [_guard(max_bytes)]},
    )
