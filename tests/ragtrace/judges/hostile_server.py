"""A hostile OpenAI-compatible endpoint on 127.0.0.1 for the hostile-judge tests (and the bench).

``HostileServer(behaviour)`` serves every POST with ``behaviour(handler, body)``, which writes the
whole answer itself (status, headers, body, as slowly or as largely as it likes). The behaviours the
suite uses are module functions here: a 401 that echoes the request's ``Authorization`` header, a
redirect to another server, a completion whose content is a brace bomb, a giant reply, a slow drip.
A behaviour that writes a long answer stops when the client goes away (a write fails) or the server
stops, so no thread outlives ``stop()``. Every request's path and headers are logged.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Behaviour = Callable[["_Handler", dict[str, Any]], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    hostile: HostileServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the tests read the log below
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        hostile = self.server.hostile
        with hostile.lock:
            hostile.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client left: a bounded reader does
            hostile.behaviour(self, body)

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def stopping(self) -> bool:
        return self.server.hostile.stopped.is_set()


class HostileServer:
    """A real HTTP server whose every answer ``behaviour`` writes; ``requests`` logs (path, headers by
    lower-case name)."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.stopped = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.hostile = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="hostile-judge", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextmanager
def hostile(behaviour: Behaviour) -> Iterator[HostileServer]:
    server = HostileServer(behaviour).start()
    try:
        yield server
    finally:
        server.stop()


def completion(content: str) -> dict[str, Any]:
    """A chat completion whose one message is ``content``."""
    return {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def echo_key(handler: _Handler, body: dict[str, Any]) -> None:
    """A 401 whose body quotes the request's Authorization header, as some gateways do."""
    auth = handler.headers.get("Authorization", "")
    message = f"Incorrect API key provided. Request headers: Authorization: {auth}; key={auth.split()[-1]}"
    handler.send_json(401, {"error": {"message": message, "type": "invalid_request_error", "code": auth}})


def echo_everything(handler: _Handler, body: dict[str, Any]) -> None:
    """A 200 whose content quotes every request header (Authorization too): the reply is the leak."""
    auth = handler.headers.get("Authorization", "")
    headers = "; ".join(f"{k}: {v}" for k, v in handler.headers.items())
    handler.send_json(200, completion(f"Authorization: {auth} -- {auth.split()[-1]} -- all headers: {headers}"))


def redirect_to(target: str, status: int = 307) -> Behaviour:
    """Every request redirected to ``target`` + the request's path after ``/v1``."""

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        path = handler.path.split("/v1", 1)[-1]
        handler.send_json(status, {}, {"Location": target + path})

    return behaviour


def content(text: str) -> Behaviour:
    """Every request answered 200 with a completion whose content is ``text``."""

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_json(200, completion(text))

    return behaviour


def giant(total_bytes: int, piece: int = 1 << 16) -> Behaviour:
    """A 200 announcing ``total_bytes`` of JSON and writing them (a string of ``x``) until the client
    leaves; ``sent`` on the behaviour counts what was written."""
    head = b'{"id": "chatcmpl-giant", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "'
    tail = b'"}}]}'

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(total_bytes))
        handler.end_headers()
        handler.wfile.write(head)
        left = total_bytes - len(head) - len(tail)
        block = b"x" * piece
        while left > 0 and not handler.stopping():
            chunk = block[: min(piece, left)]
            handler.wfile.write(chunk)
            left -= len(chunk)
            with handler.server.hostile.lock:
                sent[0] += len(chunk)
        if left <= 0:
            handler.wfile.write(tail)

    sent = [0]
    behaviour.sent = sent  # type: ignore[attr-defined]
    return behaviour


def drip(total_bytes: int = 1 << 20) -> Behaviour:
    """A 200 announcing ``total_bytes`` and writing one byte every 0.05 s: a reply that never ends within
    any sane deadline. Stops when the client leaves (a write fails) or the server stops."""

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(total_bytes))
        handler.end_headers()
        handler.wfile.write(b"{")
        handler.wfile.flush()
        stopped = handler.server.hostile.stopped
        while not stopped.wait(0.05):  # the server's pace, not the test's: the test waits for nothing
            handler.wfile.write(b" ")
            handler.wfile.flush()

    return behaviour


def chunked_giant(total_bytes: int = 150 << 20) -> Behaviour:
    """A 200 with no length, writing ``total_bytes`` in 64 KiB chunks until the client leaves."""

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        piece = b"x" * (1 << 16)
        frame = b"%x\r\n%s\r\n" % (len(piece), piece)
        handler.wfile.write(b"1\r\n{\r\n")
        for _ in range(total_bytes // len(piece)):
            if handler.stopping():
                return
            handler.wfile.write(frame)

    return behaviour


def deep_body(depth: int = 100_000) -> Behaviour:
    """A 200 whose JSON body nests ``depth`` arrays: deeper than Python's JSON parser goes."""
    data = ('{"choices": ' + "[" * depth + "]" * depth + "}").encode()

    def behaviour(handler: _Handler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return behaviour


KINDS: dict[str, Callable[[], Behaviour]] = {
    # Not hostile: a judge that answers at once with a short JSON reply (no step's shape, so each step
    # fails fast): what any fast endpoint costs the app, for comparison with the hostile ones.
    "fast": lambda: content('{"claims": ["Brasilia is the capital."]}'),
    "echo-key": lambda: echo_key,
    "brace-bomb": lambda: content("Here: " + "{" * 60_000),  # under the search cap: the search's worst case
    "brace-bomb-200k": lambda: content("Here: " + "{" * 200_000),
    "giant": chunked_giant,
    "deep": deep_body,
    "drip": drip,
}
"""The behaviours ``python -m tests.ragtrace.judges.hostile_server KIND`` serves (bench/request_path.py)."""


if __name__ == "__main__":
    # Its own process, so that the hostile server's work is not the app's: prints its base URL, serves
    # until stdin closes (the parent ended) or it is terminated.
    import sys

    server = HostileServer(KINDS[sys.argv[1]]()).start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()
