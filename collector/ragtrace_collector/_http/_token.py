"""The collector's token: ``bearer_matches`` (both receivers) and the middleware that guards the page with it.

Every comparison of a given token with the real one takes the same time whatever the given one is.
"""

from __future__ import annotations

import hmac
from collections.abc import Collection

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["PageTokenMiddleware", "bearer_matches"]


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an ``Authorization`` value is ``Bearer <token>``, the scheme in any case (RFC 7235 section 2.1).

    The token itself is compared in constant time.
    """
    scheme, _, credentials = authorization.strip().partition(" ")
    given = credentials.strip().encode("utf-8", errors="replace")
    # Compare even when the scheme is wrong, so the time taken does not tell which part was.
    same = hmac.compare_digest(given, token.encode("utf-8"))
    return scheme.lower() == "bearer" and same


class PageTokenMiddleware:
    """Require the token on every path but ``open_paths`` (the receivers, which answer in OTLP terms, and ``/healthz``).

    Accepts ``Authorization: Bearer <token>`` or, for a browser, ``?token=<token>``.
    """

    def __init__(self, app: ASGIApp, token: str, open_paths: Collection[str]) -> None:
        self.app = app
        self.token = token
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given_query = request.query_params.get("token", "").encode("utf-8", errors="replace")
        header_ok = bearer_matches(request.headers.get("authorization", ""), self.token)
        if header_ok or hmac.compare_digest(given_query, self.token.encode("utf-8")):
            await self.app(scope, receive, send)
            return
        response = PlainTextResponse(
            "this collector needs its token: add ?token=... to the URL\n",
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)
