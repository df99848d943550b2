"""``StubOpenAIServer``: the stub's state and lifecycle, its request log, and the decision of each reply.

The server binds 127.0.0.1 (an ephemeral port by default) and serves from one daemon thread, each
request on its own thread (``_stub_http``). One lock guards the log, the script queue and the
in-flight count, so tests may read ``requests`` while clients run. ``handle`` decides a reply in this
order: wait ``latency`` (plus a scripted delay; ``stop()`` cuts the wait short); a scripted reply with
an error status or a whole body is served as is; then the route (embeddings, chat completions, else
404); then the ``mode``'s refusal of the response format (400); then the chat completion
(``_stub_replies``), with a scripted content if one was queued. Scripted replies are consumed one per
request, whatever its route.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ragtrace.testing._stub_http import LoggedRequest, StubHTTPServer, make_handler
from ragtrace.testing._stub_replies import Mode, ReplyStyle, Responder, chat_completion, embeddings, rejection
from ragtrace.testing._stub_request import error, recognise_step

__all__ = ["StubOpenAIServer", "StubReply"]

_EMPTY: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class StubReply:
    """A one-shot scripted reply: status, headers, an optional raw chat content or whole body, a delay."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    content: str | None = None
    body: Any = None
    delay: float = 0.0


class StubOpenAIServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1; see ``ragtrace.testing._stub_openai``'s docstring.

    Use as a context manager (or ``start()`` / ``stop()``); ``base_url`` is the ``.../v1`` URL to give
    a client. All attributes may be changed while it runs; the request log is thread-safe.
    """

    def __init__(
        self,
        *,
        mode: Mode = "json_schema",
        reply_style: ReplyStyle = "json",
        latency: float = 0.0,
        logprobs: bool = True,
        responder: Responder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.mode: Mode = mode
        self.reply_style: ReplyStyle = reply_style
        self.latency = latency
        self.logprobs = logprobs
        self.responder = responder
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._script: collections.deque[StubReply] = collections.deque()
        self._in_flight = 0
        self._max_in_flight = 0
        self._stopping = threading.Event()
        self._server: StubHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> StubOpenAIServer:
        """Bind and serve from a daemon thread. Returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = StubHTTPServer((self._host, self._port), make_handler(self))
        self._server = server
        # A short poll interval keeps stop() quick (shutdown waits for the loop to notice).
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="ragtrace-stub-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any delayed reply, close the socket and join the thread. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> StubOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stub server is not running: call start() or use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return self.url + "/v1"

    # -- scripting and the log ---------------------------------------------------------------------

    def script(self, *replies: StubReply) -> None:
        """Queue one-shot replies; each of the next requests takes the next one, then defaults resume."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every finished request, in the order they finished."""
        with self._lock:
            return list(self._log)

    @property
    def chat_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.is_chat]

    @property
    def embedding_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.is_embeddings]

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was handling at once since the last ``reset()``."""
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Clear the log, the script and the in-flight peak."""
        with self._lock:
            self._log.clear()
            self._script.clear()
            self._max_in_flight = self._in_flight

    def usage(self, requests: Sequence[LoggedRequest] | None = None) -> tuple[int, int]:
        """Summed (prompt, completion) tokens the server reported for ``requests`` (default: all)."""
        chosen = self.requests if requests is None else requests
        prompt = completion = 0
        for request in chosen:
            prompt += request.prompt_tokens
            completion += request.completion_tokens
        return prompt, completion

    # -- handling (called from handler threads) ----------------------------------------------------

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._in_flight -= 1
            self._log.append(entry)

    def _next_script(self) -> StubReply | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def handle(self, path: str, body: Mapping[str, Any]) -> tuple[int, dict[str, str], Any, str | None]:
        """Decide the reply to one request: (status, headers, JSON body, recognised step)."""
        step = recognise_step(body) if path.endswith("/chat/completions") else None
        scripted = self._next_script()
        self._wait(self.latency + (scripted.delay if scripted else 0.0))
        headers = dict(scripted.headers) if scripted else {}
        if scripted is not None and (scripted.status != 200 or scripted.body is not None):
            reply = scripted.body if scripted.body is not None else error(scripted.status, "scripted failure")
            return scripted.status, headers, reply, step
        if path.endswith("/embeddings"):
            return 200, headers, embeddings(body), None
        if not path.endswith("/chat/completions"):
            return 404, headers, error(404, f"no route {path}"), None
        rejected = rejection(body, self.mode)
        if rejected is not None:
            return 400, headers, rejected, step
        content = scripted.content if scripted else None
        reply = chat_completion(
            body, step, content, reply_style=self.reply_style, logprobs=self.logprobs, responder=self.responder
        )
        return 200, headers, reply, step
