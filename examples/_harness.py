"""Process plumbing shared by ``demo.py`` and ``e2e_phoenix.py``: free ports, child servers, a webhook inbox.

Every child is started in its own session (so a Ctrl-C in the terminal reaches only the script,
which then stops the child in order), logs to a file, and is stopped with SIGTERM, then SIGKILL
after a grace period. ``Children`` stops everything it started, in reverse order, exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any


def poll(check: Callable[[], Any], timeout: float, interval: float = 0.25) -> Any:
    """Call ``check`` until it returns something truthy or ``timeout`` passes; return the last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)  # waiting on another process's progress


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ChildFailed(RuntimeError):
    """A child process exited or never became ready; the message quotes the end of its log."""


class Child:
    """One child process with its log file."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            list(argv),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the child's log."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        """Raise ``ChildFailed`` when the child has exited."""
        code = self.process.poll()
        if code is not None:
            raise ChildFailed(f"{self.name} exited with status {code}; its log ({self.log_path}) ends:\n{self.tail()}")

    def wait_http(self, url: str, timeout: float = 60.0) -> None:
        """Wait until ``url`` answers with a status below 500, or raise ``ChildFailed``."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                with urllib.request.urlopen(url, timeout=2.0) as reply:
                    if reply.status < 500:
                        return
            except urllib.error.HTTPError as error:
                if error.code < 500:
                    return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ChildFailed(f"{self.name} did not answer {url} within {timeout:.0f} s; log ends:\n{self.tail()}")
            time.sleep(0.2)  # polling a server that is starting up; not a test

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` seconds. Returns the exit status. Idempotent."""
        process = self.process
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5.0)
        self._log.close()
        return process.returncode


class Children:
    """Starts children and stops them all, newest first, on ``close()`` (also used as a context manager)."""

    def __init__(self) -> None:
        self._children: list[Child] = []

    def start(self, name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> Child:
        """Start a child and remember it for ``close()``."""
        child = Child(name, argv, log_path, env)
        self._children.append(child)
        return child

    def close(self) -> None:
        """Stop every child started, newest first."""
        while self._children:
            child = self._children.pop()
            child.stop()

    def __enter__(self) -> Children:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def terminate_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit`` so ``finally`` blocks stop the children, as Ctrl-C does."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


class WebhookInbox:
    """A real HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it (an alert receiver)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                try:
                    payload = json.loads(body)
                except ValueError:
                    payload = {"raw": body.decode("utf-8", errors="replace")}
                with inbox._arrived:
                    inbox.received.append(payload if isinstance(payload, dict) else {"value": payload})
                    inbox._arrived.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # keep the demo's output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="webhook-inbox", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """Where to POST."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/alerts"

    def wait_for(self, predicate: Any, timeout: float) -> dict[str, Any] | None:
        """The first received body for which ``predicate(body)`` is true, waiting up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                for body in self.received:
                    if predicate(body):
                        return body
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._arrived.wait(remaining)

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
