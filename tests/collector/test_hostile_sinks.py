"""Hostile alert content and a hostile webhook receiver: redirects are failures and never carry the sink's
headers elsewhere; text from spans is escaped for each sink (Slack, logs, a terminal). Real HTTP on 127.0.0.1."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from ragtrace_collector._alerts import Alert, LogSink, StdoutSink, WebhookSink

NOW = 1_800_000_000 * 1_000_000_000


class Endpoint:
    """An HTTP server on 127.0.0.1 that records every request (method, headers, body) and answers ``status`` with
    ``headers``."""

    def __init__(self, status: int = 200, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                endpoint.requests.append((self.command, dict(self.headers), self.rfile.read(length)))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _any

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def elsewhere() -> Iterator[Endpoint]:
    endpoint = Endpoint()
    yield endpoint
    endpoint.close()


def _alert(service: str = "shop", message: str = "rate up") -> Alert:
    return Alert(NOW, "r", "spike", "hallucination", service, None, "ALERT", None, 9.0, 8.0, message)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_webhook_redirect_is_a_failure_and_the_sinks_headers_never_reach_the_other_host(
    elsewhere: Endpoint, status: int
) -> None:
    redirecting = Endpoint(status, (("Location", elsewhere.url),))
    sink = WebhookSink(redirecting.url, headers=(("Authorization", "Bearer s3cret"),), retries=2, backoff=0.01)
    try:
        sink.send(_alert())
        assert sink.flush(30)
    finally:
        sink.close(5)
        redirecting.close()
    assert (sink.delivered, sink.failed) == (0, 1)
    assert len(redirecting.requests) == 1  # not retried: it would redirect again
    assert elsewhere.requests == []


def test_slack_text_escapes_mentions_and_links_from_span_content() -> None:
    receiver = Endpoint()
    sink = WebhookSink(receiver.url)
    try:
        sink.send(_alert(service="<!channel>", message="see <https://evil.example|your bank> & more"))
        assert sink.flush(30)
    finally:
        sink.close(5)
        receiver.close()
    assert sink.delivered == 1
    body = json.loads(receiver.requests[0][2])
    text = body["text"]
    assert "<" not in text and ">" not in text
    assert "&lt;!channel&gt;" in text and "&lt;https://evil.example|your bank&gt; &amp; more" in text
    assert body["alert"]["service"] == "<!channel>"  # the structured alert is data, kept as it was


def test_a_service_name_with_a_newline_cannot_forge_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    forged = "shop\n2026-11-27 10:00:00 ERROR ragtrace_collector: admin token reset\x1b[2J\u2028"
    with caplog.at_level(logging.INFO, logger="ragtrace_collector.alerts"):
        LogSink().send(_alert(service=forged))
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line and "\x1b" not in line and "\u2028" not in line
    assert "shop\\n2026-11-27" in line and "\\x1b[2J" in line and "\\u2028" in line

    stream = io.StringIO()
    StdoutSink(stream=stream).send(_alert(service=forged))
    assert stream.getvalue().count("\n") == 1 and "\x1b" not in stream.getvalue()
