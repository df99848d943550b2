"""Connections that never finish a request cannot take the HTTP port: a head deadline and a per-client limit.

uvicorn counts every open connection against ``limit_concurrency``, including one that has sent nothing or is
sending its headers a byte every two seconds, and times out none of them: 257 idle connections answered 503 to
everyone, ``/healthz`` included. So the collector serves with the protocol class ``guarded_protocol`` returns
(uvicorn's h11 protocol, plus):

* a head deadline: a connection must finish each request's head (request line and headers) within
  ``HEAD_TIMEOUT_SECONDS`` of opening, or of its previous reply, or it is closed. Counted from the start, not
  from the last byte, so a sender dripping bytes gains nothing. Between requests uvicorn's keep-alive timeout
  closes a connection that sends nothing.
* a per-client limit: ``PER_CLIENT_CONNECTIONS`` open connections per client address. A new connection past it
  closes that client's oldest connection still waiting for its head (a client that opens more than it uses loses
  its idle ones, not its new one); when none is waiting, the new connection is closed.

The limit on requests in flight (``ConcurrencyLimit``) counts requests whose head has arrived, never idle
connections, and always lets ``/healthz`` through.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEAD_TIMEOUT_SECONDS", "PER_CLIENT_CONNECTIONS", "ConcurrencyLimit", "guarded_protocol"]

_log = logging.getLogger("ragtrace_collector")

HEAD_TIMEOUT_SECONDS = 10.0
"""How long a connection has to send a request's whole head (an exporter sends it at once)."""

PER_CLIENT_CONNECTIONS = 512
"""Open connections per client address (an exporter keeps one or a few; a proxy in front, more)."""


def guarded_protocol(head_timeout: float | None = None, per_client: int | None = None) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a head deadline and a per-client connection limit (the module defaults when
    not given), with a registry of its own: one class per server."""
    timeout = HEAD_TIMEOUT_SECONDS if head_timeout is None else head_timeout
    limit = PER_CLIENT_CONNECTIONS if per_client is None else per_client
    # Per client address: its open connections, oldest first (dicts keep insertion order).
    open_by_client: dict[str, dict[GuardedProtocol, None]] = {}

    class GuardedProtocol(H11Protocol):
        """One connection; see the module docstring."""

        _head_timer: asyncio.TimerHandle | None = None
        _address: str | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            address = self.client[0] if self.client else ""
            mine = open_by_client.setdefault(address, {})
            if len(mine) >= limit:
                waiting = next((other for other in mine if other._waiting_for_head()), None)
                if waiting is None:
                    _log.debug("%s holds %d connections, all busy: a new one refused", address, len(mine))
                    transport.close()
                    return
                # Out of the count now: its connection_lost comes later, and the next one must not pick it again.
                del mine[waiting]
                waiting._address = None
                waiting._close(f"its client opened more than {limit} connections")
            self._address = address
            mine[self] = None
            self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head_timer()
            if self._address is not None:
                mine = open_by_client.get(self._address)
                if mine is not None:
                    mine.pop(self, None)
                    if not mine:
                        del open_by_client[self._address]
                self._address = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._waiting_for_head():
                self._disarm_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._waiting_for_head() and not self.transport.is_closing():
                self._arm_head_timer()  # the next request's head, on a kept-alive connection

        def _waiting_for_head(self) -> bool:
            """No request in progress: the connection is idle, or has sent part of a head."""
            return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

        def _arm_head_timer(self) -> None:
            self._disarm_head_timer()
            self._head_timer = self.loop.call_later(timeout, self._head_timed_out)

        def _disarm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self._waiting_for_head():
                self._close(f"no request head within {timeout:g} s")

        def _close(self, why: str) -> None:
            _log.debug("closing a connection from %s: %s", self.client[0] if self.client else "?", why)
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedProtocol


class ConcurrencyLimit:
    """ASGI middleware: past ``limit`` requests in flight, answer 503 (retryable in OTLP) with ``Connection:
    close``, as uvicorn's ``limit_concurrency`` did, but counting requests, not connections, and never refusing
    ``GET /healthz`` (a health check must see a collector that is busy, not one that is down)."""

    def __init__(self, app: ASGIApp, *, limit: int, open_paths: tuple[str, ...] = ("/healthz",)) -> None:
        self.app = app
        self.limit = limit
        self.open_paths = open_paths
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            _log.warning("%d requests in flight: answering 503", self.in_flight)
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"retry-after", b"1"),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"Service Unavailable"})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
