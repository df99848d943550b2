"""The stub server's HTTP side: the socket server, and the handler that logs each request and writes its reply.

A POST's body is read as a JSON object (anything else is a 400) and handed to the stub's ``handle``,
which decides the reply; the handler then counts the reply's ``usage`` tokens, checks a 200 against
the request's ``json_schema`` (``_stub_schema_check``) and logs one ``LoggedRequest`` before it
writes the reply, so a client holding its reply finds the entry (a failure while deciding is logged
as a 500). A client that hung up meanwhile is not an error. Only POST is served (other methods get the
stdlib's 501); the stdlib's own access log stays quiet: the stub's log is ``StubOpenAIServer.requests``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from ragtrace.testing._stub_request import error
from ragtrace.testing._stub_schema_check import schema_errors_of

if TYPE_CHECKING:
    from ragtrace.testing._stub_server import StubOpenAIServer

__all__ = ["LoggedRequest", "StubHTTPServer", "make_handler"]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request as the server saw it. Times are ``time.monotonic()`` seconds."""

    path: str
    body: Mapping[str, Any]
    started: float
    finished: float
    status: int
    step: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    schema_errors: tuple[str, ...] = ()
    """Where the reply broke the request's ``json_schema`` (enum, type, required, extra field); empty
    when it conformed or the request had no schema. A constrained server never breaks it."""

    @property
    def is_chat(self) -> bool:
        return self.path.endswith("/chat/completions")

    @property
    def is_embeddings(self) -> bool:
        return self.path.endswith("/embeddings")


class StubHTTPServer(ThreadingHTTPServer):
    # The stdlib default backlog of 5 overflows when a client opens dozens of connections at once,
    # and the kernel then resets some of them: spurious connection errors in the client.
    request_queue_size = 256
    daemon_threads = True


def make_handler(stub: StubOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; without this, delayed ACKs add ~40 ms per reply.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the stub's log is ``stub.requests``."""

        def do_POST(self) -> None:
            started = time.monotonic()
            stub._enter()
            status, step, logged, tokens = 500, None, {}, (0, 0)
            errors: tuple[str, ...] = ()
            headers: dict[str, str] = {}
            reply: Any = error(500, "stub failure")
            try:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                if isinstance(body, dict):
                    logged = body
                    status, headers, reply, step = stub.handle(self.path, body)
                else:
                    status, reply = 400, error(400, "body is not a JSON object")
                usage = reply.get("usage") if isinstance(reply, dict) else None
                if isinstance(usage, dict):
                    tokens = (int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
                errors = tuple(schema_errors_of(logged, reply)) if status == 200 else ()
            finally:
                # Logged before the reply is written: a client holding its reply finds the entry.
                entry = LoggedRequest(self.path, logged, started, time.monotonic(), status, step, *tokens, errors)
                stub._leave(entry)
            try:
                self._send(status, headers, reply)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up (a timeout test); nothing to answer.
                self.close_connection = True

        def _send(self, status: int, headers: Mapping[str, str], reply: Any) -> None:
            data = (
                json.dumps(reply).encode()
                if not isinstance(reply, (bytes, str))
                else (reply.encode() if isinstance(reply, str) else reply)
            )
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
