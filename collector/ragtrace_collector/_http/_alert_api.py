"""The alert API: list the alert groups, acknowledge a firing one, silence and unsilence. The page's buttons and
``ragtrace-collector alerts`` both use it; what it stores is in SQLite (``_alerts._controls``), so a restart keeps
it and the watcher reads it at its next evaluation.

* ``GET /api/alerts``: ``{"now_ns", "groups": [...], "silences": [...]}``, every group the watcher keeps a state
  for (its state, since when, the last evaluation's value and message, its acknowledgement and the silences
  muting it) and every silence not over yet.
* ``POST /api/alerts/ack`` ``{"rule", "service", "route", "author", "comment"}``: acknowledges the group's current
  ALERT (201 ``{"ack"}``); 404 for a group the watcher does not know, 409 when it is not in ALERT.
* ``POST /api/silences`` ``{"rule", "service", "route", "all", "duration", "author", "comment"}``: ``rule``/
  ``service``/``route`` null or absent match any, and at least one must be given unless ``"all": true`` says the
  silence is meant for every alert; ``duration`` is ``"2h"``, ``"30m"``... or seconds, at most ``max_silence_ns``
  (30 days by default, ``serve --max-silence-days``) (201 ``{"silence"}``).
* ``DELETE /api/silences/{id}``: ends the silence now (200 ``{"silence"}``; 404 when there is none).

A mistake is a 400 ``{"error": "..."}`` that names it. Every request's store work runs as the pages' does
(``bounded_call``): within ``query_seconds`` (2 s), stopped when its client leaves, a 503 ``{"error"}`` naming
what happened when it was stopped (nothing written: its transaction is rolled back).

A body must be ``application/json``: a page on another
site can make a browser send a form to this collector, but not JSON without a CORS preflight this collector
never answers, so no other site can silence its alerts from a browser. With a token set, the API needs it as
the page does (``Authorization: Bearer`` with the admin token, or a signed-in page's cookie and its CSRF token;
``_auth``). Behind a trusted proxy that names the person (``serve --trusted-user-header``), ``author`` is that
name, whatever the body says.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ragtrace import ConfigurationError
from ragtrace_collector._http._auth import USER_SCOPE_KEY
from ragtrace_collector._http._bounded import DEFAULT_QUERY_SECONDS, bounded_call
from ragtrace_collector._rule_table import parse_duration
from ragtrace_collector._store import ReadInterrupted, snapshot, writing
from ragtrace_collector._store.alerts import (
    add_ack,
    add_silence,
    expire_silence,
    group_state,
    group_views,
    silences,
)

_log = logging.getLogger("ragtrace_collector")

__all__ = ["ALERTS_API_PATH", "SILENCES_API_PATH", "alert_api_routes"]

ALERTS_API_PATH = "/api/alerts"
SILENCES_API_PATH = "/api/silences"
_MAX_BODY = 64 * 1024
_MAX_TEXT = 1000
_MAX_ID = 2**63 - 1
_NS_PER_DAY = 86_400 * 1_000_000_000
DEFAULT_MAX_SILENCE_NS = 30 * _NS_PER_DAY
"""Longest silence by default: 30 days (a longer one is a typo, or forgotten until the alert it hides matters)."""


class _Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.error = error


def _text(body: dict[str, Any], key: str, *, limit: int = 200) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > limit:
        raise _Refused(400, f"`{key}` must be a non-empty string of at most {limit} characters, or null")
    return value


async def _json_body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
        raise _Refused(415, "send the body as application/json")
    raw = await request.body()
    if len(raw) > _MAX_BODY:
        raise _Refused(413, f"the body is over {_MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise _Refused(400, "the body must be a JSON object")
    return body


def alert_api_routes(
    store: object,
    *,
    rule_names: Collection[str] | None = None,
    clock: Callable[[], int] = time.time_ns,
    query_seconds: float = DEFAULT_QUERY_SECONDS,
    max_silence_ns: int = DEFAULT_MAX_SILENCE_NS,
) -> list[BaseRoute]:
    """The API's routes over ``store`` (a path or URL, or the collector's store: a ``PostgresStore`` lends its pooled
    readers). ``rule_names``: the rules the watcher runs, when known (a
    silence or an acknowledgement naming another rule is refused as a typo). ``query_seconds``: how long one
    request's store work may run (then 503); it stops as soon as its client leaves. ``max_silence_ns``: the longest
    silence accepted."""
    db = store

    def connect() -> Any:
        # Within the request's budget (bounded_call's): the writes are small, but a store locked or slow must not
        # hold a worker thread past it.
        return writing(db)

    def check_rule(rule: str | None) -> None:
        if rule is not None and rule_names is not None and rule not in rule_names:
            known = ", ".join(sorted(rule_names)) or "none"
            raise _Refused(400, f"no rule is named {rule!r} (rules: {known})")

    def listing() -> dict[str, Any]:
        now = clock()
        with snapshot(db) as conn:
            views = group_views(conn, now)
            pending = [s for s in silences(conn) if s.ends_ns > now]
        return {
            "now_ns": now,
            "groups": [v.as_json() for v in views],
            "silences": [s.as_json() for s in reversed(pending)],
        }

    def acknowledge(body: dict[str, Any]) -> dict[str, Any]:
        rule = _text(body, "rule")
        if rule is None:
            raise _Refused(400, "`rule` is required: name the rule of the alert to acknowledge")
        check_rule(rule)
        service, route = _text(body, "service"), _text(body, "route")
        with connect() as conn:
            row = group_state(conn, rule, service, route)
            if row is None:
                raise _Refused(404, f"no alert group {rule} [service={service}, route={route}]")
            if row[0] != "ALERT":
                raise _Refused(409, f"{rule} [service={service}, route={route}] is {row[0]}, not ALERT: nothing to ack")
            ack = add_ack(
                conn,
                rule=rule,
                service=service,
                route=route,
                episode_ns=int(row[1]),
                now_ns=clock(),
                author=_text(body, "author"),
                comment=_text(body, "comment", limit=_MAX_TEXT),
            )
        return {"ack": ack.as_json()}

    def silence(body: dict[str, Any]) -> dict[str, Any]:
        rule = _text(body, "rule")
        check_rule(rule)
        if body.get("duration") is None:
            raise _Refused(400, '`duration` is required, e.g. "2h" or 7200 (seconds)')
        try:
            duration = parse_duration(body["duration"], where="`duration`")
        except (ConfigurationError, OverflowError, ValueError) as exc:
            # OverflowError: a number of seconds past what a float makes an integer of (1e308).
            reason = str(exc) if isinstance(exc, ConfigurationError) else f"{body['duration']!r} is not a duration"
            raise _Refused(400, reason if reason.startswith("`duration`") else f"`duration`: {reason}") from None
        if duration > max_silence_ns:
            raise _Refused(400, f"`duration` is at most {max_silence_ns / _NS_PER_DAY:g} days")
        every = body.get("all")
        if every not in (None, False, True):
            raise _Refused(400, "`all` must be true or false")
        if rule is None and body.get("service") is None and body.get("route") is None and every is not True:
            raise _Refused(
                400, 'a silence needs a `rule`, `service` or `route` to match, or `"all": true` to mute every alert'
            )
        now = clock()
        with connect() as conn:
            made = add_silence(
                conn,
                rule=rule,
                service=_text(body, "service"),
                route=_text(body, "route"),
                starts_ns=now,
                ends_ns=now + duration,
                author=_text(body, "author"),
                comment=_text(body, "comment", limit=_MAX_TEXT),
            )
        return {"silence": made.as_json()}

    def unsilence(silence_id: int) -> dict[str, Any]:
        with connect() as conn:
            ended = expire_silence(conn, silence_id, clock())
        if ended is None:
            raise _Refused(404, f"no silence {silence_id}")
        return {"silence": ended.as_json()}

    async def get_alerts(request: Request) -> Response:
        try:
            return JSONResponse(await bounded_call(request, query_seconds, listing))
        except ReadInterrupted as why:
            return _interrupted(request, why)

    async def post_ack(request: Request) -> Response:
        return await _answer(request, acknowledge, 201, query_seconds)

    async def post_silence(request: Request) -> Response:
        return await _answer(request, silence, 201, query_seconds)

    async def delete_silence(request: Request) -> Response:
        try:
            silence_id = int(request.path_params["silence_id"])
            if silence_id > _MAX_ID:  # the route takes any digits; SQLite's integers stop here
                raise _Refused(400, f"the silence id is at most {_MAX_ID}")
            return JSONResponse(await bounded_call(request, query_seconds, unsilence, silence_id))
        except _Refused as refused:
            return JSONResponse({"error": refused.error}, status_code=refused.status)
        except ReadInterrupted as why:
            return _interrupted(request, why)

    return [
        Route(ALERTS_API_PATH, get_alerts, methods=["GET"]),
        Route(f"{ALERTS_API_PATH}/ack", post_ack, methods=["POST"]),
        Route(SILENCES_API_PATH, post_silence, methods=["POST"]),
        Route(SILENCES_API_PATH + "/{silence_id:int}", delete_silence, methods=["DELETE"]),
    ]


async def _answer(
    request: Request, handle: Callable[[dict[str, Any]], dict[str, Any]], status: int, seconds: float
) -> Response:
    try:
        body = await _json_body(request)
        user = request.scope.get("state", {}).get(USER_SCOPE_KEY)
        if user:  # named by the trusted proxy (_auth): that is who did it
            body["author"] = user
        return JSONResponse(await bounded_call(request, seconds, handle, body), status_code=status)
    except _Refused as refused:
        return JSONResponse({"error": refused.error}, status_code=refused.status)
    except ReadInterrupted as why:
        return _interrupted(request, why)


def _interrupted(request: Request, why: ReadInterrupted) -> Response:
    """The 503 of a request whose store work was stopped (nothing of it was written)."""
    _log.warning("an alert API request stopped (%s): %s", why, request.url.path)
    return JSONResponse({"error": f"the store work took {why}; ask again"}, status_code=503)
