"""Why the spans ``configure()`` exported did not arrive, and the fix, for the one WARNING that says they were dropped.

The OTLP exporter logs each failure in its own words (``Failed to export spans batch code: 401, reason:
Unauthorized``), which name neither the token nor where it is set. ``WatchedSession`` is the ``requests``
session ``configure()`` hands the OTLP/HTTP span exporter (its public ``session=`` argument): it remembers how
the last request ended, a status code or the error that kept it from being sent. ``fix_for`` turns that into
the clause the WARNING ends with:

* 401 or 403: the token is missing or wrong; pass it as ``headers=`` or ``OTEL_EXPORTER_OTLP_HEADERS``;
* no connection (refused, unknown host, timeout): start the collector, or check ``endpoint=`` /
  ``OTEL_EXPORTER_OTLP_ENDPOINT``;
* anything else, or nothing known (the gRPC exporter, which takes no session): both checks, so the message
  still names a fix.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import requests

__all__ = ["WatchedSession", "fix_for", "watchable"]

_CREDENTIAL_PROVIDERS = (
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
    "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
)
"""Variables with which the OTLP/HTTP exporter builds a session of its own (an authenticating one): with either
set, ``configure()`` leaves the session to the exporter and the message names both checks."""

PASS_TOKEN = (
    "pass it as configure(headers={'authorization': 'Bearer TOKEN'}) "
    "or set OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20TOKEN"
)
START_COLLECTOR = (
    "start the collector (ragtrace-collector serve --db ragtrace.db) "
    "or check configure(endpoint=...) / OTEL_EXPORTER_OTLP_ENDPOINT"
)


class WatchedSession(requests.Session):
    """A ``requests.Session`` that remembers how its last request ended: ``status`` (the HTTP status code) or
    ``error`` (the exception that kept it from being answered), the other None. Thread-safe enough for one
    exporter: the pair is replaced together under a lock."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._outcome: tuple[int | None, Exception | None] = (None, None)

    @property
    def outcome(self) -> tuple[int | None, Exception | None]:
        """``(status, error)`` of the last request; ``(None, None)`` before the first."""
        with self._lock:
            return self._outcome

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        # send, not request: every request of the session goes through it, and its signature is the simpler.
        try:
            response = super().send(request, **kwargs)
        except Exception as error:
            with self._lock:
                self._outcome = (None, error)
            raise
        with self._lock:
            self._outcome = (response.status_code, None)
        return response


def watchable() -> WatchedSession | None:
    """A session to watch the span exporter with, or None when an OTLP credential provider supplies one."""
    if any(os.environ.get(variable) for variable in _CREDENTIAL_PROVIDERS):
        return None
    return WatchedSession()


def fix_for(session: WatchedSession | None) -> str:
    """The clause that says why the spans were not exported and what to do, from how the last request ended."""
    status, error = session.outcome if session is not None else (None, None)
    if status in (401, 403):
        return f"the endpoint answered {status} (the token is missing or wrong): {PASS_TOKEN}"
    if isinstance(error, (requests.ConnectionError, requests.Timeout)):
        return f"nothing answered there: {START_COLLECTOR}"
    known = f"the endpoint answered {status}" if status is not None else "the exporter's log says why"
    return f"{known}; if nothing listens there, {START_COLLECTOR}; if it needs a token, {PASS_TOKEN}"
