"""The sinks, registered by type: ``log``, ``stdout`` and ``webhook``, and ``build_sinks`` for a rules file.

A rules file's ``[[sinks]]`` table names a ``type``; ``build_sinks`` builds each from the factory registered
for that type (``register_sink``). An unknown type is a ``ConfigurationError`` naming the known ones, at
start: never a silent fall-back to another sink. A new sink type is one factory ``SinkConfig -> Sink``
registered here (see docs/contributing.md).

An alert's text carries what senders chose (a service name, a route, a rule's message built from span content),
so each sink escapes it for where it goes: ``log_text`` for log lines and terminals (control characters and line
separators written as escapes, so a service name holding a newline cannot forge a second log line) and
``slack_text`` for the webhook's Slack ``text`` (``&``, ``<`` and ``>`` escaped as Slack asks, so no
``<!channel>`` mention or ``<https://...|...>`` link reaches a channel from span content). The webhook never
follows a redirect: its headers (often ``Authorization``) would go to another host, and the alert would count as
delivered though its receiver never got it; a redirect is a failed delivery, logged with the status.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import IO, Any, TextIO

from ragtrace import ConfigurationError
from ragtrace_collector import _drift
from ragtrace_collector._alerts._alert import Alert, Sink, logger
from ragtrace_collector._rule_types import SinkConfig

SinkFactory = Callable[[SinkConfig], Sink]
"""Builds a sink from its ``[[sinks]]`` table (already checked by the rules parser)."""

_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def log_text(text: str) -> str:
    """``text`` with every character Python does not call printable (control characters, line and paragraph
    separators, format characters; the space is kept) written as its escape (``\\n``, ``\\x1b``,
    ``\\u2028``): one line, and nothing a terminal acts on."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char == " " else char.encode("unicode_escape").decode("ascii") for char in text
    )


def slack_text(text: str) -> str:
    """``text`` escaped for a Slack message: ``&``, ``<`` and ``>`` as entities, so span content cannot make a
    mention (``<!channel>``) or a link; then as ``log_text``. Slack's own ``*bold*`` is kept."""
    return log_text(text.translate(_SLACK_ESCAPES))


def webhook_payload(alert: Alert) -> dict[str, Any]:
    """The webhook body: ``Alert.payload()`` with its Slack ``text`` escaped (the structured ``alert`` is JSON,
    escaped by its encoding)."""
    payload = alert.payload()
    payload["text"] = slack_text(alert.text)
    return payload


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the error it is for a webhook: ``HTTPError`` with the 3xx status."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class LogSink:
    """Logs each notification on the ``ragtrace_collector.alerts`` logger: ALERT at ERROR, WARNING and
    NO_DATA at WARNING, OK at INFO."""

    def __init__(self, name: str = "log", log: logging.Logger | None = None) -> None:
        self.name = name
        self._logger = log or logger

    def send(self, alert: Alert) -> None:
        level = {
            _drift.ALERT: logging.ERROR,
            _drift.WARNING: logging.WARNING,
            _drift.NO_DATA: logging.WARNING,
        }.get(alert.state, logging.INFO)
        self._logger.log(level, "%s", log_text(alert.text))

    def close(self, timeout: float = 5.0) -> None:
        return None


class StdoutSink:
    """Prints one line per notification (to ``stream``, standard output by default)."""

    def __init__(self, name: str = "stdout", stream: TextIO | None = None) -> None:
        self.name = name
        self._stream = stream

    def send(self, alert: Alert) -> None:
        stream = self._stream or sys.stdout
        try:
            print(log_text(alert.text), file=stream, flush=True)
        except (OSError, ValueError):
            logger.exception("stdout sink could not print an alert")

    def close(self, timeout: float = 5.0) -> None:
        return None


class WebhookSink:
    """POSTs ``Alert.payload()`` as JSON to ``url`` from its own thread.

    Each delivery is tried ``1 + retries`` times with a ``timeout`` per attempt and exponential back-off
    (0.5 s, 1 s, 2 s, ...) on connection errors, 429 and 5xx; other 4xx are not retried. At most
    ``max_pending`` notifications wait; past that the newest is dropped and logged rather than let a
    dead receiver grow memory. ``delivered`` and ``failed`` count outcomes.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "webhook",
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.5,
        headers: Sequence[tuple[str, str]] = (),
        max_pending: int = 1000,
    ) -> None:
        self.name = name
        self.url = url
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = {"Content-Type": "application/json", "User-Agent": "ragtrace-collector", **dict(headers)}
        self.delivered = 0
        self.failed = 0
        self._queue: queue.Queue[Alert | None] = queue.Queue(maxsize=max_pending)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ragtrace-webhook-{name}", daemon=True)
        self._thread.start()

    def send(self, alert: Alert) -> None:
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            self.failed += 1
            logger.error(
                "webhook %s: %d notifications pending, dropped: %s",
                self.name,
                self._queue.qsize(),
                log_text(alert.text),
            )

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued notification was delivered or given up on; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        self._closing.set()
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            try:
                if alert is None:
                    return
                if self._deliver(alert):
                    self.delivered += 1
                else:
                    self.failed += 1
            except Exception:  # the delivery thread must outlive any surprise
                self.failed += 1
                logger.exception("webhook %s: delivery crashed", self.name)
            finally:
                self._queue.task_done()

    def _deliver(self, alert: Alert) -> bool:
        body = json.dumps(webhook_payload(alert)).encode("utf-8")
        for attempt in range(self.retries + 1):
            # Back-off that a close() cuts short: shutting down must not wait out a dead receiver.
            if attempt and self._closing.wait(self.backoff * 2 ** (attempt - 1)):
                break
            # A receiver that dedupes (Alertmanager's webhook proxies, most incident tools) pages once an episode.
            headers = {**self.headers, "Idempotency-Key": alert.idempotency_key}
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    response.read()
                return True
            except urllib.error.HTTPError as exc:
                exc.close()
                if 300 <= exc.code < 400:
                    # Not followed (the headers would go along) and not retried (it would redirect again).
                    logger.warning(
                        "webhook %s: HTTP %d redirect not followed: set the sink's url to where it redirects",
                        self.name,
                        exc.code,
                    )
                    break
                retryable = exc.code == 429 or exc.code >= 500
                logger.warning("webhook %s: HTTP %d (attempt %d)", self.name, exc.code, attempt + 1)
                if not retryable:
                    break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                logger.warning("webhook %s: %s (attempt %d)", self.name, exc, attempt + 1)
        logger.error("webhook %s: gave up on: %s", self.name, log_text(alert.text))
        return False


def _webhook(config: SinkConfig) -> Sink:
    assert config.url is not None  # validated by the rules parser
    return WebhookSink(
        config.url, name=config.name, timeout=config.timeout, retries=config.retries, headers=config.headers
    )


_FACTORIES: dict[str, SinkFactory] = {
    "webhook": _webhook,
    "log": lambda config: LogSink(config.name),
    "stdout": lambda config: StdoutSink(config.name),
}


def register_sink(type_name: str, factory: SinkFactory) -> None:
    """Make ``type = "<type_name>"`` in a rules file build its sink with ``factory``.

    Raises ``ValueError`` when the type is taken: replacing a built-in sink silently would be a surprise.
    """
    if not type_name or not isinstance(type_name, str):
        raise ValueError(f"a sink type is a non-empty string, not {type_name!r}")
    if type_name in _FACTORIES:
        raise ValueError(f"sink type {type_name!r} is already registered")
    _FACTORIES[type_name] = factory


def unregister_sink(type_name: str) -> None:
    """Forget a registered sink type (tests that register a toy sink clean up with this)."""
    _FACTORIES.pop(type_name, None)


def sink_types() -> tuple[str, ...]:
    """The registered sink types, built-in ones first, in the order they were registered."""
    return tuple(_FACTORIES)


def build_sinks(configs: Sequence[SinkConfig]) -> list[Sink]:
    """Instantiate the sinks a rules file describes; ``ConfigurationError`` for a type nobody registered."""
    sinks: list[Sink] = []
    for config in configs:
        factory = _FACTORIES.get(config.type)
        if factory is None:
            raise ConfigurationError(
                f"sink {config.name!r}: type {config.type!r} is not a sink type; use one of {', '.join(sink_types())}"
            )
        sinks.append(factory(config))
    return sinks
