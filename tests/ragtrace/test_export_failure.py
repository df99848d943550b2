"""The WARNING about spans that could not be exported names the fix (issue 29): a refused token names
``headers=`` and ``OTEL_EXPORTER_OTLP_HEADERS``; an endpoint where nothing answers says to start the collector
or check the endpoint; a cause ragtrace cannot see (the gRPC exporter) names both. Real OTLP/HTTP exporters
against real sockets on 127.0.0.1."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

import ragtrace
from ragtrace._export_failure import PASS_TOKEN, START_COLLECTOR, WatchedSession, fix_for, watchable


@ragtrace.rag
def answer(question: str) -> str:
    return "Brasilia."


class Refusing:
    """An OTLP/HTTP endpoint on 127.0.0.1 that answers every export with ``status`` (a collector whose token
    the app does not send)."""

    def __init__(self, status: int) -> None:
        self.status = status

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture(params=[401, 403])
def refusing(request: pytest.FixtureRequest) -> Iterator[Refusing]:
    endpoint = Refusing(request.param)
    yield endpoint
    endpoint.close()


def test_a_refused_token_names_headers_and_the_variable(
    refusing: Refusing, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_HEADERS", raising=False)
    handle = ragtrace.configure(
        endpoint=refusing.url, sample_rate=0.0, batch=False, export_metrics=False, set_global=False
    )
    for i in range(3):
        answer(f"q{i}")  # batch=False: each span is exported (and refused) as it ends
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        handle.shutdown()
    ours = [r.getMessage() for r in caplog.records if r.name == "ragtrace"]
    assert ours == [
        f"ragtrace: 3 spans could not be exported to {refusing.url} and were dropped; the endpoint answered "
        f"{refusing.status} "
        "(the token is missing or wrong): pass it as configure(headers={'authorization': 'Bearer TOKEN'}) "
        "or set OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20TOKEN"
    ]


def test_the_session_remembers_how_the_last_request_ended(refusing: Refusing) -> None:
    session = WatchedSession()
    assert session.outcome == (None, None)
    session.post(refusing.url + "/v1/traces", data=b"")
    assert session.outcome == (refusing.status, None)
    assert fix_for(session) == f"the endpoint answered {refusing.status} (the token is missing or wrong): {PASS_TOKEN}"
    with pytest.raises(requests.ConnectionError):
        session.post("http://127.0.0.1:1/v1/traces", data=b"", timeout=5)
    assert fix_for(session) == f"nothing answered there: {START_COLLECTOR}"


def test_an_unknown_cause_names_both_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gRPC exporter takes no session: nothing is known, so both checks are named.
    assert fix_for(None) == (
        f"the exporter's log says why; if nothing listens there, {START_COLLECTOR}; if it needs a token, {PASS_TOKEN}"
    )
    assert "start the collector (ragtrace-collector serve --db ragtrace.db)" in START_COLLECTOR
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in START_COLLECTOR
    # An OTLP credential provider brings its own (authenticating) session: it is left to the exporter.
    monkeypatch.setenv("OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER", "mine")
    assert watchable() is None
