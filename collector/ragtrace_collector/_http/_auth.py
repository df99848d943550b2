"""Who may use the pages and the API, and what another site may make a browser do with them (issue 25).

``PageGuard`` wraps every path but the receivers and ``/healthz`` (the OTLP senders' paths, which check the ingest
token themselves and are no use to a browser: their content types need a CORS preflight nobody answers):

* **Host.** A request whose ``Host`` is not in ``Access.allowed_hosts`` (the bind address, ``localhost``,
  ``127.0.0.1``, ``::1``, and each ``--allowed-host``) is a 421: a page on another site that points its own name at
  127.0.0.1 (DNS rebinding) reaches the collector with its own name as the Host, and is refused.
* **Credentials**, when an admin token is set: ``Authorization: Bearer <admin token>`` (the API, scripts, the
  ``alerts`` command), the session cookie a browser gets by signing in (``/signin``, a form) or by opening any
  page once with ``?token=<admin token>`` (answered with a redirect to the same URL without it, the cookie set),
  or, with ``Access.user_header`` set, that header (a trusted proxy such as oauth2-proxy authenticated the person
  and names them). With ``Access.users`` (``serve --users-file``, ``_users``) the form asks a name and a password
  instead of the token, and the session names the person: acks, silences and reviews record that name (a session
  whose name left the file no longer counts). A page asked for without them redirects to the sign-in form; the API
  answers 401. ``?token=`` on an API path is still taken as it is, for the scripts that used it (deprecated: URLs
  end up in logs).
* **State changes** (any method but GET, HEAD, OPTIONS): an ``Origin`` that is not this collector's own, or a
  ``Sec-Fetch-Site`` other than ``same-origin``, is a 403; and a request a browser makes (it carries the session
  cookie, the proxy's user header, or with no admin token set, any of ``Origin``, ``Sec-Fetch-Site`` or a cookie)
  must carry ``X-CSRF-Token``: the value the session was signed with (the pages read it from the ``ragtrace_csrf``
  cookie, which other sites can neither read nor set), or without a session that cookie's own value. A request
  with the bearer token needs none: no other site can make a browser send it.
* **Framing and script.** Every answer says ``X-Frame-Options: DENY`` and, in its ``Content-Security-Policy``,
  ``frame-ancestors 'none'`` (an invisible frame's click once created a silence); ``Referrer-Policy: same-origin``.
  The policy lets scripts come from this collector's own files only (``script-src 'self'``, no inline script, no
  ``eval``), so text from a span can never run as script even where a page failed to escape it; nothing is
  fetched from another site (``default-src 'self'``), forms post only here, no plugin runs. Styles may be inline
  (plotly.js sets its charts' styles from script, and the trace waterfall positions its bars in ``style``): a
  style cannot run script. ``/static/`` (the pages' stylesheet and scripts, no data) is served to anyone who passes
  the Host check, so the sign-in form has its stylesheet.

The session cookie is HttpOnly and SameSite=Lax, not Strict: the alert messages (Slack, webhooks, logs) link to
the pages, and a link followed from another site is a cross-site navigation that Strict would send without the
cookie, landing every such click on the sign-in form. Lax still keeps the cookie off every cross-site request but
top-level GETs, and GETs change nothing; the state changes are guarded by the CSRF token and the checks above,
which do not depend on SameSite. It is signed (itsdangerous) with a key derived from the admin token, so changing
the token signs everyone out, and it expires after ``Access.session_seconds``. It never holds the token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragtrace_collector._http._token import bearer_matches
from ragtrace_collector._http._users import Users

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSRF_COOKIE",
    "CSRF_HEADER",
    "SESSION_COOKIE",
    "SIGNIN_PATH",
    "SIGNOUT_PATH",
    "USER_SCOPE_KEY",
    "Access",
    "PageGuard",
    "default_hosts",
]

SESSION_COOKIE = "ragtrace_session"
CSRF_COOKIE = "ragtrace_csrf"
CSRF_HEADER = "x-csrf-token"
SIGNIN_PATH = "/signin"
SIGNOUT_PATH = "/signout"
USER_SCOPE_KEY = "ragtrace_user"
"""Where the guard leaves the person's name (the trusted proxy's header, or the users file's name a session was
signed in with) in the request's scope, for the alert and review APIs to record who acknowledged, silenced or
reviewed."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_MAX_FORM_BYTES = 4096
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""Every guarded answer's policy (the module docstring says why each part)."""
_FRAMING = [
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"referrer-policy", b"same-origin"),
]
_PUBLIC_PREFIX = "/static/"
"""The pages' stylesheet and scripts: public code, no data; the sign-in form needs its stylesheet."""


def default_hosts(bind_host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names the pages answer: loopback's, the bind address unless it is a wildcard, and ``extra``."""
    names = {*_LOOPBACK_NAMES, *(name.strip().lower().strip("[]") for name in extra if name.strip())}
    if bind_host not in ("0.0.0.0", "::", ""):
        names.add(bind_host.lower().strip("[]"))
    return frozenset(names)


@dataclass(frozen=True)
class Access:
    """What the guard lets through. ``admin_token``: None lets anyone who reaches the port read and change (as
    before it, on loopback only unless ``--insecure``); ``allowed_hosts``: ``"*"`` among them turns the Host check
    off (a proxy in front checks it); ``user_header``: a header a trusted proxy sets to the signed-in person's name
    (then it authenticates: the port must be reachable only through that proxy); ``users``: the people who sign in by
    name and password (they need ``admin_token``, which keys the sessions)."""

    admin_token: str | None = field(default=None, repr=False)
    allowed_hosts: frozenset[str] = field(default_factory=lambda: default_hosts("127.0.0.1"))
    user_header: str | None = None
    session_seconds: int = 7 * 86_400
    users: Users | None = field(default=None, repr=False)

    def host_allowed(self, host_header: str) -> bool:
        """Whether ``host_header`` (``name[:port]``, ``[v6]:port``) names a host the pages answer."""
        if "*" in self.allowed_hosts:
            return True
        host = host_header.strip().lower()
        if host.startswith("["):
            name = host[1:].partition("]")[0]
        else:
            name = host.rpartition(":")[0] if host.count(":") == 1 else host
        return bool(name) and name in self.allowed_hosts

    def serializer(self) -> URLSafeTimedSerializer | None:
        if not self.admin_token:
            return None
        # A key of its own, derived from the token: the cookie's signature says nothing about the token.
        key = hmac.new(self.admin_token.encode(), b"ragtrace-collector session", hashlib.sha256).digest()
        return URLSafeTimedSerializer(key, salt="ragtrace-session")


class PageGuard:
    """The guard the module docstring describes, around ``app``; ``open_paths`` pass untouched (the receivers
    and ``/healthz``)."""

    def __init__(self, app: ASGIApp, access: Access, open_paths: Collection[str]) -> None:
        self.app = app
        self.access = access
        self.open_paths = frozenset(open_paths)
        self.sessions = access.serializer()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        new_cookies: list[str] = []
        response = await self._check(request, new_cookies)
        if response is None and request.url.path == SIGNIN_PATH:
            response = await self._signin(request, new_cookies)
        elif response is None and request.url.path == SIGNOUT_PATH and request.method == "POST":
            response = RedirectResponse(SIGNIN_PATH, status_code=303)
            new_cookies += [_cookie(SESSION_COOKIE, "", 0, request), _cookie(CSRF_COOKIE, "", 0, request)]
        if response is not None:
            for cookie in new_cookies:
                response.raw_headers.append((b"set-cookie", cookie.encode("latin-1")))
            response.raw_headers.extend(_FRAMING)
            await response(scope, receive, send)
            return

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _FRAMING:
                    headers.append(name.decode(), value.decode())
                for cookie in new_cookies:
                    headers.append("set-cookie", cookie)
            await send(message)

        await self.app(scope, receive, send_guarded)

    # -- the checks ---------------------------------------------------------------------------------------------

    async def _check(self, request: Request, new_cookies: list[str]) -> Response | None:
        """None when the request may go on (``new_cookies`` then holds cookies to set); else the refusal."""
        host = request.headers.get("host", "")
        if not self.access.host_allowed(host):
            return PlainTextResponse(
                f"this collector does not answer to the host {host[:100]!r}: open it by an address it was told "
                "about (serve --allowed-host NAME adds one)\n",
                status_code=421,
            )
        changing = request.method not in _SAFE_METHODS
        if changing:
            refused = _cross_site(request)
            if refused is not None:
                return PlainTextResponse(f"refused: {refused}\n", status_code=403)
        via, session = self._identify(request)
        csrf_cookie = request.cookies.get(CSRF_COOKIE, "")
        if via == "query" and request.method in ("GET", "HEAD") and not _is_api(request.url.path):
            # ?token= once: signed in by cookie, and the token out of the address bar, history and Referer.
            csrf = secrets.token_urlsafe(24)
            self._sign_in(request, new_cookies, csrf)
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            return RedirectResponse(request.url.path + (f"?{urlencode(rest)}" if rest else ""), status_code=303)
        if via is None and request.url.path.startswith(_PUBLIC_PREFIX) and request.method in ("GET", "HEAD"):
            return None
        if via is None and request.url.path != SIGNIN_PATH:
            if request.method in ("GET", "HEAD") and not _is_api(request.url.path):
                # Back here once signed in, without a wrong ?token= (it would sit in the address bar and history).
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                return RedirectResponse(f"{SIGNIN_PATH}?{urlencode({'next': target})}", status_code=303)
            return PlainTextResponse(
                "this collector needs its admin token: Authorization: Bearer <token>, or sign in at /signin\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        if via in ("open", "proxy") and not csrf_cookie:
            new_cookies.append(_cookie(CSRF_COOKIE, secrets.token_urlsafe(24), None, request, http_only=False))
        elif via == "cookie" and session is not None and csrf_cookie != session["csrf"]:
            # The page's copy lost (cleared alone): given again, or its buttons would fail until a new sign-in.
            seconds = self.access.session_seconds
            new_cookies.append(_cookie(CSRF_COOKIE, str(session["csrf"]), seconds, request, http_only=False))
        if changing and request.url.path != SIGNIN_PATH:
            expected = self._csrf_expected(request, via, session, csrf_cookie)
            if expected is not None:
                given = request.headers.get(CSRF_HEADER, "")
                if not given or not hmac.compare_digest(given.encode(), expected.encode()):
                    return PlainTextResponse(
                        f"refused: a change from a page must carry its {CSRF_HEADER} (reload the page)\n",
                        status_code=403,
                    )
        if via == "proxy":
            name = request.headers.get(self.access.user_header or "", "").strip()
            request.scope.setdefault("state", {})[USER_SCOPE_KEY] = name[:200]
        elif via == "cookie" and session is not None and isinstance(session.get("user"), str):
            request.scope.setdefault("state", {})[USER_SCOPE_KEY] = session["user"]
        return None

    def _identify(self, request: Request) -> tuple[str | None, dict[str, Any] | None]:
        """How the request is authenticated: ``bearer``, ``query`` (``?token=``), ``cookie`` (with its session),
        ``proxy`` (the trusted user header), ``open`` (no admin token set), or None."""
        token = self.access.admin_token
        header = self.access.user_header
        proxied = bool(header and request.headers.get(header, "").strip())
        if not token:
            return ("proxy" if proxied else "open"), None
        if bearer_matches(request.headers.get("authorization", ""), token):
            return "bearer", None
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode()):
            return "query", None
        session = self._session(request)
        if session is not None:
            return "cookie", session
        return ("proxy" if proxied else None), None

    def _session(self, request: Request) -> dict[str, Any] | None:
        raw = request.cookies.get(SESSION_COOKIE)
        if not raw or self.sessions is None:
            return None
        try:
            value = self.sessions.loads(raw, max_age=self.access.session_seconds)
        except BadSignature:  # SignatureExpired included
            return None
        if not isinstance(value, dict) or not isinstance(value.get("csrf"), str):
            return None
        users = self.access.users
        if "user" in value and (users is None or value["user"] not in users):
            return None  # the person left the users file (or it is gone): signed out
        return value

    def _csrf_expected(
        self, request: Request, via: str | None, session: dict[str, Any] | None, csrf_cookie: str
    ) -> str | None:
        """The CSRF value this state change must carry, or None when it needs none (not a browser's request)."""
        if via == "cookie":
            assert session is not None
            return str(session["csrf"])
        if via == "proxy" or (via == "open" and _from_a_browser(request)):
            return csrf_cookie or secrets.token_urlsafe(24)  # no cookie: a value nobody can send
        return None

    def _sign_in(self, request: Request, new_cookies: list[str], csrf: str, user: str | None = None) -> None:
        assert self.sessions is not None
        signed = self.sessions.dumps({"csrf": csrf, **({"user": user} if user is not None else {})})
        seconds = self.access.session_seconds
        new_cookies.append(_cookie(SESSION_COOKIE, signed, seconds, request))
        new_cookies.append(_cookie(CSRF_COOKIE, csrf, seconds, request, http_only=False))

    async def _signin(self, request: Request, new_cookies: list[str]) -> Response:
        """``GET /signin``: the form; ``POST /signin``: check the token, set the cookie, go where ``next`` says."""
        if self.sessions is None:
            return RedirectResponse("/", status_code=303)  # nothing to sign in to
        named = self.access.users is not None
        if request.method != "POST":
            return _signin_page(_local(request.query_params.get("next")), error=None, named=named)
        body = await _read_small(request)
        fields = dict(parse_qsl(body.decode("utf-8", "replace"))) if body is not None else {}
        target = _local(fields.get("next"))
        if self.access.users is not None:
            # The password is read, checked and dropped: never logged, never stored, never put back in the form.
            # On a worker thread: scrypt takes tens of ms by design, which the event loop (ingestion's) must not.
            user = await run_in_threadpool(
                self.access.users.check, fields.get("name", "").strip(), fields.get("password", "")
            )
            if user is None:
                return _signin_page(target, error="That name and password do not match.", status=401, named=True)
            self._sign_in(request, new_cookies, secrets.token_urlsafe(24), user)
            return RedirectResponse(target, status_code=303)
        given = fields.get("token", "")
        assert self.access.admin_token is not None
        if not given or not hmac.compare_digest(given.encode("utf-8", "replace"), self.access.admin_token.encode()):
            return _signin_page(target, error="That is not this collector's admin token.", status=401)
        self._sign_in(request, new_cookies, secrets.token_urlsafe(24))
        return RedirectResponse(target, status_code=303)


def _is_api(path: str) -> bool:
    return path.startswith("/api/") or path == "/metrics"


def _cross_site(request: Request) -> str | None:
    """Why a state change is refused as coming from another site, or None."""
    origin = request.headers.get("origin")
    if origin is not None:
        # Host and port, not the scheme: behind a proxy that ends TLS the page is https and the request http.
        scheme, _, netloc = origin.lower().partition("://")
        own = request.headers.get("host", "").lower()
        if scheme not in ("http", "https") or netloc != own:
            return f"Origin {origin[:100]!r} is not this collector ({own})"
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {fetch_site[:40]!r}: only this collector's own pages may change things"
    return None


def _from_a_browser(request: Request) -> bool:
    headers = request.headers
    return "origin" in headers or "sec-fetch-site" in headers or "cookie" in headers


def _local(target: str | None) -> str:
    """``target`` when it is a path on this collector, else ``/`` (no open redirect to another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _cookie(name: str, value: str, max_age: int | None, request: Request, *, http_only: bool = True) -> str:
    parts = [f"{name}={value}", "Path=/", "SameSite=Lax" if http_only else "SameSite=Strict"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if http_only:
        parts.append("HttpOnly")
    if request.url.scheme == "https":
        parts.append("Secure")
    return "; ".join(parts)


async def _read_small(request: Request) -> bytes | None:
    size = 0
    chunks = []
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_FORM_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _signin_page(target: str, *, error: str | None, status: int = 200, named: bool = False) -> HTMLResponse:
    """The sign-in form (``templates/signin.html``, a page of the triage package: imported here, when the form is
    asked for, so the guard does not load the pages to guard the receivers): the admin token, or with a users file
    (``named``) a name and a password."""
    from ragtrace_collector._triage._templates import render_page

    return HTMLResponse(
        render_page("signin.html", title="Sign in", action=SIGNIN_PATH, error=error, named=named, next=target),
        status_code=status,
    )
