"""Reads for a page or API request, within a time budget and stopped when the client leaves (issue 26).

``bounded_call(request, seconds, work, *args)`` runs ``work(*args)`` on a worker thread inside
``_store.within(QueryBudget(seconds))``: every connection the store opens for it reads within that budget. While
it runs, the request's connection is watched; when the client goes away the budget is cancelled, and the engine
stops the statement running (SQLite's progress handler, PostgreSQL's cancel request). A read that ran out of its
budget raises ``ReadInterrupted``, which ``interrupted_reply`` turns into a 503 naming what to narrow.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ragtrace_collector._store import QueryBudget, ReadInterrupted, within

__all__ = ["DEFAULT_QUERY_SECONDS", "bounded_call", "interrupted_reply"]

_log = logging.getLogger("ragtrace_collector")

T = TypeVar("T")

DEFAULT_QUERY_SECONDS = 2.0
"""How long one page or API request's reads may run: a request costs at most this much of a core."""
_DISCONNECT_POLL_SECONDS = 0.1


async def bounded_call(request: Request, seconds: float, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on a worker thread, its reads within ``seconds``, stopped if the client leaves."""
    budget = QueryBudget(seconds)

    def run() -> T:
        with within(budget):
            return work(*args)

    running = asyncio.ensure_future(run_in_threadpool(run))
    while not running.done():
        await asyncio.wait({running}, timeout=_DISCONNECT_POLL_SECONDS)
        if not running.done() and not budget.cancelled.is_set() and await request.is_disconnected():
            # Once, and on a worker thread: PostgreSQL's cancel request is a network call of its own.
            await asyncio.to_thread(budget.cancel)
    return running.result()


def interrupted_reply(request: Request, why: ReadInterrupted) -> Response:
    """The 503 of a request whose reads were stopped, naming what to narrow."""
    _log.warning("a page read stopped (%s): %s", why, request.url.path)
    return PlainTextResponse(
        f"this view's reads took {why}; narrow it (since=, until=, service=, fewer score=/meta=, a shorter q=) "
        "and ask again\n",
        status_code=503,
    )
