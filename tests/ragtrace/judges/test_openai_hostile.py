"""A hostile judge endpoint over real HTTP (``hostile_server``): nothing secret leaves, and it costs the app little.

Each case runs the whole app path, a decorated RAG call scored by an ``OpenAIJudge`` pointed at the
hostile server through ``ragtrace.testing.capture``, and looks for the secrets (the API key, the URL's
credentials and their Basic encoding) in every log line (INFO and up, every logger: what an app prints),
in every exported span (attributes, events, status: what the collector stores, explanations included)
and in the judge's error. The bounds are asserted by what was read, never by a clock.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan

import ragtrace
from ragtrace import semconv, wire
from ragtrace._exporters import _check_endpoint, export_target, otlp_span_exporter
from ragtrace._record import RagRecord
from ragtrace._secrets import CUT, MASK, MAX_CHARS, scrub, strip_url
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges import JudgeError
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.openai.http import MAX_REPLY_BYTES, REPLY_TOO_LARGE
from ragtrace.metrics import build_suite
from ragtrace.testing import FakeJudge, capture
from tests.ragtrace.judges import hostile_server as hs

KEY = "sk-hostile0123456789abcdefSECRETKEY"
USER, PASSWORD = "judge-user", "pw-SECRET-4711"
SECRETS = (KEY, PASSWORD, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())
CHUNK = "Brasilia has been the capital of Brazil since 1960."


@ragtrace.retrieve
def search(query: str) -> list[str]:
    return [CHUNK]


@ragtrace.rag
def answer(query: str) -> str:
    search(query)
    return "The capital of Brazil is Brasilia. It was built in the 1950s."


@dataclass
class Outcome:
    """What left the app: the exported spans as text, the log, and each score's explanation."""

    spans: str
    log: str
    explanations: list[str]
    error_types: list[str]

    def leaks(self, secrets: tuple[str, ...] = SECRETS) -> list[str]:
        return [s for s in secrets for where in (self.spans, self.log, *self.explanations) if s in where]


def _span_text(span: ReadableSpan) -> str:
    parts: list[object] = [span.name, span.status.description, dict(span.attributes or {})]
    parts += [(e.name, dict(e.attributes or {})) for e in span.events]
    return json.dumps(parts, default=str)


def run_app(judge: OpenAIJudge, caplog: pytest.LogCaptureFixture) -> Outcome:
    """One scored RAG call with ``judge``; what left the app."""
    with caplog.at_level(logging.INFO), capture(judge, metrics=["faithfulness", "context_relevance"]) as captured:
        answer("What is the capital of Brazil?")
        spans = captured.spans()
    explanations, error_types = [], []
    for span in spans:
        for event in span.events:
            attributes = event.attributes or {}
            if event.name == semconv.GEN_AI_EVALUATION_RESULT:
                explanations.append(str(attributes.get(semconv.GEN_AI_EVALUATION_EXPLANATION, "")))
                error_types.append(str(attributes.get(semconv.ERROR_TYPE, "")))
    log = "\n".join(record.getMessage() for record in caplog.records)
    return Outcome("\n".join(map(_span_text, spans)), log, explanations, error_types)


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A port bound but not listening: connections are refused, and it stays ours during the test."""
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        yield dead.getsockname()[1]


# -- echoed keys ---------------------------------------------------------------------------------


def test_a_401_that_echoes_the_key_leaves_it_nowhere(caplog: pytest.LogCaptureFixture) -> None:
    with hs.hostile(hs.echo_key) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0, verify="batched", extract="llm")
        outcome = run_app(judge, caplog)
        assert any(KEY in headers.get("authorization", "") for _, headers in server.requests)  # it was sent
    assert outcome.leaks() == []
    assert set(outcome.error_types) == {"authentication"}
    assert all("HTTP 401 (AuthenticationError)" in e for e in outcome.explanations)
    assert "HTTP 401" in outcome.log  # the failure is still named in the app's log


async def test_the_judge_error_of_an_echoed_key_is_status_and_type() -> None:
    with hs.hostile(hs.echo_key) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0)
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert str(caught.value) == "HTTP 401 (AuthenticationError)"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no body in a traceback


def test_a_reply_that_quotes_the_key_is_scrubbed_where_it_is_quoted(caplog: pytest.LogCaptureFixture) -> None:
    # A 200 whose content quotes the request headers: the parse error quotes the reply's start.
    with hs.hostile(hs.echo_everything) as server:
        judge = OpenAIJudge(
            base_url=server.base_url, api_key=KEY, max_retries=0, parse_retries=0, verify="batched", extract="llm"
        )
        outcome = run_app(judge, caplog)
    assert outcome.leaks() == []
    assert set(outcome.error_types) == {"unparseable_reply"}


async def test_the_collectors_own_scoring_stores_no_echoed_key() -> None:
    # The collector scores with the same judges and stores what ragtrace.wire decodes (its score rows):
    # the explanations it stores are the scrubbed ones, from the source.
    from ragtrace_collector._carrier import encode

    with hs.hostile(hs.echo_key) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0, verify="batched", extract="llm")
        try:
            record = RagRecord.of("What is the capital of Brazil?", [CHUNK], "Brasilia.")
            result = await build_suite("faithfulness,hallucination,context_relevance").score(record, judge)
        finally:
            await judge.aclose()
    encoded = encode(result)
    rows = wire.decode(encoded.attributes, encoded.events)
    assert {fields.get("error_type") for fields in rows.values()} == {"authentication"}
    stored = json.dumps(rows, default=str)
    assert [s for s in SECRETS if s in stored] == []
    assert "HTTP 401" in stored


# -- credentials in URLs -------------------------------------------------------------------------


def test_credentials_in_the_judge_url_leave_nowhere_when_it_is_down(
    caplog: pytest.LogCaptureFixture, dead_port: int
) -> None:
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:{dead_port}/v1"
    judge = OpenAIJudge(base_url=url, api_key=KEY, max_retries=0, verify="batched", extract="llm")
    assert PASSWORD not in repr(judge)
    outcome = run_app(judge, caplog)
    assert outcome.leaks() == []
    assert set(outcome.error_types) == {"connection"}
    assert all(f"cannot reach http://127.0.0.1:{dead_port}/v1" in e for e in outcome.explanations)


def test_credentials_in_the_judge_url_leave_nowhere_when_it_answers_401(caplog: pytest.LogCaptureFixture) -> None:
    with hs.hostile(hs.echo_key) as server:
        url = server.base_url.replace("http://", f"http://{USER}:{PASSWORD}@")
        judge = OpenAIJudge(base_url=url, api_key=KEY, max_retries=0, verify="batched", extract="llm")
        outcome = run_app(judge, caplog)
        # The credentials still authenticate, as the HTTP package made them: a Basic header.
        assert {headers.get("authorization") for _, headers in server.requests} == {f"Basic {SECRETS[2]}"}
    assert outcome.leaks() == []
    assert set(outcome.error_types) == {"authentication"}


def test_credentials_in_the_otlp_endpoint_stay_out_of_messages() -> None:
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:4318"
    exporter = otlp_span_exporter(url, "http/protobuf", None)
    try:
        assert PASSWORD not in export_target(exporter, url)
        assert PASSWORD not in export_target(exporter, None)
    finally:
        exporter.shutdown()
    with pytest.raises(ConfigurationError) as caught:
        _check_endpoint(f"ftp://{USER}:{PASSWORD}@host")
    assert PASSWORD not in str(caught.value)


def test_credentials_in_a_down_otlp_endpoint_reach_no_log_line(
    caplog: pytest.LogCaptureFixture, dead_port: int
) -> None:
    # The shutdown's warning named the endpoint as given: http://user:pass@host.
    handle = ragtrace.configure(
        endpoint=f"http://{USER}:{PASSWORD}@127.0.0.1:{dead_port}",
        judge=FakeJudge(),
        sample_rate=0.0,
        export_metrics=False,
        set_global=False,
    )
    with caplog.at_level(logging.INFO):
        try:
            answer("q")
        finally:
            handle.shutdown(timeout_millis=1000)  # the exporter retries until the budget runs out
    log = "\n".join(record.getMessage() for record in caplog.records)
    assert f"http://{MASK}@127.0.0.1:{dead_port}" in log  # the warning is there, without the password
    assert PASSWORD not in log


# -- what scrub takes out ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"http://{USER}:{PASSWORD}@host:8000/v1",
        f"Authorization: Bearer {PASSWORD}",
        f'{{"authorization": "Basic {PASSWORD}"}}',
        f"https://host/v1?api_key={PASSWORD}&x=1",
        f'{{"password": "{PASSWORD}"}}',
        f"token is Bearer {PASSWORD}",
        "key sk-proj-abcdefghijklmnopqrstuvwx in prose",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl here",
    ],
)
def test_scrub_masks_credentials_in_any_text(text: str) -> None:
    scrubbed = scrub(text)
    assert PASSWORD not in scrubbed
    assert "abcdefghijklmnop" not in scrubbed and "c2lnbmF0dXJl" not in scrubbed
    assert MASK in scrubbed


def test_scrub_keeps_ordinary_text_and_masks_known_secrets() -> None:
    plain = "HTTP 401 (AuthenticationError): cannot reach http://127.0.0.1:8000/v1; 3 of 4 claims supported"
    assert scrub(plain) == plain
    prose = "The answer covers basic geography; the bearer instrument is a task-management-system concept."
    assert scrub(prose) == prose
    assert scrub("the key is hunter2-xyz", known=["hunter2-xyz", "ab"]) == f"the key is {MASK}"
    assert strip_url(f"http://{USER}:{PASSWORD}@h/v1") == f"http://{MASK}@h/v1"


# -- cross-origin redirects ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 308, 302])
def test_a_redirect_to_another_origin_is_not_followed(caplog: pytest.LogCaptureFixture, status: int) -> None:
    with hs.hostile(hs.echo_everything) as elsewhere, hs.hostile(hs.redirect_to(elsewhere.base_url, status)) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=2, verify="batched", extract="llm")
        outcome = run_app(judge, caplog)
        assert elsewhere.requests == []  # the prompt (the record's text) went nowhere else
        assert len(server.requests) == 2  # one call per metric: a refused redirect is not retried
    assert set(outcome.error_types) == {"redirect"}
    assert outcome.leaks() == []


async def test_a_redirect_within_the_origin_is_followed() -> None:
    def moved(handler: hs._Handler, body: dict[str, object]) -> None:
        if handler.path.startswith("/v1/"):
            handler.send_json(307, {}, {"Location": handler.path.replace("/v1/", "/v2/")})
        else:
            handler.send_json(200, hs.completion('{"noncommittal": true}'))

    with hs.hostile(moved) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0)
        try:
            reply = await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert reply.value is True
    assert [path for path, _ in server.requests] == ["/v1/chat/completions", "/v2/chat/completions"]


# -- a giant reply, a slow drip ------------------------------------------------------------------


async def test_a_giant_reply_is_refused_after_the_byte_cap() -> None:
    behaviour = hs.giant(150 << 20)
    with hs.hostile(behaviour) as server:
        # The announced length alone refuses it: nothing of the body is read.
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=3)
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert caught.value.error_type == REPLY_TOO_LARGE
    assert caught.value.cost.chat_calls == 1  # not asked again: the same request gets the same reply


async def test_a_giant_reply_without_a_length_is_cut_at_the_byte_cap() -> None:
    # 150 MB took the app's RSS to 588 MiB: now the read stops at the cap, and so does the memory.
    with hs.hostile(hs.chunked_giant()) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0)
        tracemalloc.start()
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            await judge.aclose()
    assert caught.value.error_type == REPLY_TOO_LARGE
    assert str(MAX_REPLY_BYTES) in str(caught.value)
    assert peak < 8 * MAX_REPLY_BYTES, peak


async def test_a_slow_drip_ends_at_the_judge_deadline() -> None:
    with hs.hostile(hs.drip()) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=0.5)
        try:
            with pytest.raises(JudgeError) as caught:
                await judge.detect_noncommittal("I do not know.")
        finally:
            await judge.aclose()
    assert caught.value.error_type == "timeout"


def test_scrub_cuts_a_long_text_without_leaving_part_of_a_secret() -> None:
    # A hostile judge's 1 MB "explanation" is cut, and the cut never leaves a secret's prefix behind.
    text = "x " * (MAX_CHARS // 2 - 5) + KEY + " tail " * 1000
    scrubbed = scrub(text)
    assert len(scrubbed) <= MAX_CHARS + len(CUT) and scrubbed.endswith(CUT)
    assert KEY[:12] not in scrubbed
    assert scrub("a:" * 500_000).endswith(CUT)
