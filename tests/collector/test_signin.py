"""Sign-in and cross-site safety of the pages and the API (issue 25), over real HTTP against a real collector.

Each case is one an earlier collector failed: any Host accepted (DNS rebinding read ``/api/records`` and made a
silence), no Origin or CSRF check on state changes, pages that could be framed, one token for senders and people,
``?token=`` answered in place (links and live updates then had none), silences without end or matchers, and no
record of who acknowledged or silenced behind a proxy that knows.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from ragtrace_collector._grpc import SERVICE_NAME
from ragtrace_collector._server import Collector

from tests.collector._spans import SpanFactory, grpc_export, otlp_bytes, start_collector

PB = {"content-type": "application/x-protobuf"}
SILENCE = {"rule": "hallucination-spike", "duration": "1h"}


@pytest.fixture
def collector(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Collector]:
    options: dict[str, Any] = getattr(request, "param", {})
    running = start_collector(tmp_path / "c.db", page=True, **options)
    try:
        yield running
    finally:
        running.stop()


def _base(collector: Collector) -> str:
    return f"http://127.0.0.1:{collector.http_port}"


def _export() -> bytes:
    factory = SpanFactory(service="shop")
    factory.rag(query="what is the refund window?", scores={"faithfulness": 0.9}, decision="evaluated")
    return otlp_bytes(factory.all())


def test_a_host_not_allowed_is_refused_on_every_page_and_api_path(collector: Collector) -> None:
    """DNS rebinding: another site's name pointed at 127.0.0.1 arrives as the Host, and is refused (421)."""
    base = _base(collector)
    forged = {"host": "evil.example"}
    for path in ("/", "/records", "/api/records", "/api/alerts", "/costs", "/metrics"):
        assert httpx.get(base + path, headers=forged, timeout=60).status_code == 421, path
    assert httpx.post(f"{base}/api/silences", json=SILENCE, headers=forged, timeout=60).status_code == 421
    assert httpx.get(f"{base}/api/alerts", timeout=60).json()["silences"] == []
    for host in ("127.0.0.1", "localhost", f"localhost:{collector.http_port}", "[::1]:1"):
        assert httpx.get(f"{base}/api/alerts", headers={"host": host}, timeout=60).status_code == 200, host
    # The receivers and the health check answer any Host: senders reach a collector by whatever name.
    assert httpx.post(f"{base}/v1/traces", content=_export(), headers={**PB, **forged}).status_code == 200
    assert httpx.get(f"{base}/healthz", headers=forged).status_code == 200


@pytest.mark.parametrize("collector", [{"allowed_hosts": ("ragtrace.example",)}], indirect=True)
def test_allowed_host_adds_a_name(collector: Collector) -> None:
    reply = httpx.get(f"{_base(collector)}/api/alerts", headers={"host": "ragtrace.example:8443"}, timeout=60)
    assert reply.status_code == 200


def test_pages_cannot_be_framed(collector: Collector) -> None:
    base = _base(collector)
    for path in ("/", "/records", "/api/alerts", "/no-such-page"):
        reply = httpx.get(base + path, timeout=60)
        assert reply.headers["x-frame-options"] == "DENY", path
        assert "frame-ancestors 'none'" in reply.headers["content-security-policy"], path


def test_state_changes_from_another_site_are_refused(collector: Collector) -> None:
    """Origin and Sec-Fetch-Site are checked on every state change, and a browser's must carry the CSRF token."""
    base = _base(collector)
    own = f"http://127.0.0.1:{collector.http_port}"
    for headers in (
        {"origin": "http://evil.example"},
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": own},  # a browser on this origin, but without the CSRF token
    ):
        reply = httpx.post(f"{base}/api/silences", json=SILENCE, headers=headers, timeout=60)
        assert reply.status_code == 403, headers
        assert httpx.delete(f"{base}/api/silences/1", headers=headers, timeout=60).status_code == 403, headers
    with httpx.Client(base_url=base, timeout=60) as browser:
        browser.get("/")  # a page: it sets the CSRF cookie the page's script sends back
        csrf = browser.cookies["ragtrace_csrf"]
        headers = {"origin": own, "sec-fetch-site": "same-origin"}
        wrong = browser.post("/api/silences", json=SILENCE, headers={**headers, "x-csrf-token": "x" + csrf})
        assert wrong.status_code == 403
        made = browser.post("/api/silences", json=SILENCE, headers={**headers, "x-csrf-token": csrf})
        assert made.status_code == 201
        # The same host over https (a proxy in front ends TLS): this collector's own page still.
        tls = {"origin": own.replace("http://", "https://"), "x-csrf-token": csrf}
        assert browser.post("/api/silences", json=SILENCE, headers=tls).status_code == 201
    # A script or the alerts command (no browser headers, no cookie) on loopback without a token: as before.
    assert httpx.post(f"{base}/api/silences", json=SILENCE, timeout=60).status_code == 201


@pytest.mark.parametrize("collector", [{"ingest_token": "in-123", "admin_token": "ad-456"}], indirect=True)
def test_senders_and_people_have_separate_tokens(collector: Collector) -> None:
    base = _base(collector)
    body = _export()

    def send(token: str) -> int:
        return httpx.post(
            f"{base}/v1/traces", content=body, headers={**PB, "authorization": f"Bearer {token}"}
        ).status_code

    def read(token: str) -> int:
        return httpx.get(f"{base}/api/records", headers={"authorization": f"Bearer {token}"}, timeout=60).status_code

    assert (send("ad-456"), send("in-123")) == (401, 200)
    assert (read("in-123"), read("ad-456")) == (401, 200)
    assert httpx.get(f"{base}/metrics", headers={"authorization": "Bearer in-123"}).status_code == 401
    assert collector.grpc_port is not None
    with pytest.raises(grpc.RpcError) as refused:
        grpc_export(collector.grpc_port, SERVICE_NAME, body, metadata=(("authorization", "Bearer ad-456"),))
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    grpc_export(collector.grpc_port, SERVICE_NAME, body, metadata=(("authorization", "Bearer in-123"),))


def test_token_files_and_variables_keep_tokens_off_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragtrace_collector.__main__ import build_parser, serve_config

    def config(*argv: str) -> Any:
        return serve_config(build_parser().parse_args(["serve", "--db", str(tmp_path / "c.db"), *argv]))

    (tmp_path / "one").write_text("one-token\n", encoding="utf-8")
    (tmp_path / "in").write_text("in-token\n", encoding="utf-8")
    (tmp_path / "ad").write_text("ad-token", encoding="utf-8")
    one = config("--token-file", str(tmp_path / "one"))
    assert (one.sender_token, one.people_token) == ("one-token", "one-token")
    split = config("--ingest-token-file", str(tmp_path / "in"), "--admin-token-file", str(tmp_path / "ad"))
    assert (split.sender_token, split.people_token) == ("in-token", "ad-token")
    assert "in-token" not in repr(split) and "ad-token" not in repr(split)  # never in a repr, so never in a log
    legacy = config("--token", "legacy")  # as before: one token doing everything
    assert (legacy.sender_token, legacy.people_token) == ("legacy", "legacy")
    monkeypatch.setenv("RAGTRACE_COLLECTOR_INGEST_TOKEN", "env-in")
    monkeypatch.setenv("RAGTRACE_COLLECTOR_ADMIN_TOKEN", "env-ad")
    env = config()
    assert (env.sender_token, env.people_token) == ("env-in", "env-ad")


@pytest.mark.parametrize("collector", [{"token": "s3cret"}], indirect=True)
def test_a_person_signs_in_once_and_links_live_updates_and_buttons_work(collector: Collector) -> None:
    base = _base(collector)
    assert (
        httpx.post(f"{base}/v1/traces", content=_export(), headers={**PB, "authorization": "Bearer s3cret"}).status_code
        == 200
    )
    with httpx.Client(base_url=base, timeout=60) as browser:
        away = browser.get("/records?service=shop")
        assert away.status_code == 303 and away.headers["location"] == "/signin?next=%2Frecords%3Fservice%3Dshop"
        assert browser.get("/api/records").status_code == 401
        mistyped = browser.get("/records?token=s3cre&service=shop")  # a wrong token is not carried along
        assert mistyped.headers["location"] == "/signin?next=%2Frecords%3Fservice%3Dshop"
        form = browser.get("/signin?next=/records")
        assert form.status_code == 200 and 'type="password" name="token"' in form.text
        wrong = browser.post("/signin", data={"token": "nope", "next": "/records"})
        assert wrong.status_code == 401 and "ragtrace_session" not in browser.cookies
        # next= is only ever a path on this collector: no open redirect.
        signed = browser.post("/signin", data={"token": "s3cret", "next": "//evil.example/x"})
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        cookie = next(v for k, v in signed.headers.multi_items() if k == "set-cookie" and "ragtrace_session" in v)
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "s3cret" not in cookie
        assert browser.get("/records").status_code == 200
        live = browser.get("/api/records?after_row=0")  # what the pages poll
        assert live.status_code == 200 and len(live.json()["records"]) == 1
        own = {"origin": base, "sec-fetch-site": "same-origin"}
        assert browser.post("/api/silences", json=SILENCE, headers=own).status_code == 403  # no CSRF token
        csrf = {**own, "x-csrf-token": browser.cookies["ragtrace_csrf"]}
        assert browser.post("/api/silences", json=SILENCE, headers=csrf).status_code == 201
        assert browser.delete("/api/silences/1", headers=csrf).status_code == 200
        copy = browser.cookies["ragtrace_csrf"]
        browser.cookies.delete("ragtrace_csrf")  # the page's copy lost: the next page gives it again
        assert browser.get("/records").status_code == 200 and browser.cookies["ragtrace_csrf"] == copy
        assert browser.post("/signout", headers=csrf).status_code == 303
        assert browser.get("/api/records").status_code == 401
    with httpx.Client(base_url=base, timeout=60) as browser:
        # The link serve prints: signed in, and sent on to the same URL without the token.
        opened = browser.get("/records?token=s3cret&service=shop")
        assert opened.status_code == 303 and opened.headers["location"] == "/records?service=shop"
        assert browser.get("/records?service=shop").status_code == 200
        assert browser.get("/api/records").status_code == 200
    # A session from another token (the token changed) is no session.
    with httpx.Client(base_url=base, timeout=60, cookies={"ragtrace_session": "eyJjc3JmIjoieCJ9.x.y"}) as forged:
        assert forged.get("/api/records").status_code == 401


@pytest.mark.parametrize(
    "collector", [{"admin_token": "ad-456", "trusted_user_header": "X-Forwarded-User"}], indirect=True
)
def test_behind_a_trusted_proxy_acks_and_silences_record_who(collector: Collector) -> None:
    base = _base(collector)
    with httpx.Client(base_url=base, timeout=60, headers={"x-forwarded-user": "alice@example.com"}) as person:
        assert person.get("/records").status_code == 200
        csrf = {"x-csrf-token": person.cookies["ragtrace_csrf"], "origin": base}
        made = person.post("/api/silences", json={**SILENCE, "author": "mallory"}, headers=csrf)
        assert made.status_code == 201 and made.json()["silence"]["author"] == "alice@example.com"
        assert person.post("/api/silences", json=SILENCE).status_code == 403  # a browser's change needs its CSRF


def test_without_the_flag_a_user_header_is_no_credential(tmp_path: Path) -> None:
    running = start_collector(tmp_path / "c.db", page=True, admin_token="ad-456")
    try:
        reply = httpx.get(f"{_base(running)}/api/records", headers={"x-forwarded-user": "alice"}, timeout=60)
        assert reply.status_code == 401
    finally:
        running.stop()
