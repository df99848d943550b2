"""The triage pages' Starlette routes: ``/records`` (the list), ``/records/{span_id}`` (a record),
``/alerts/{id}`` (an alert; ``/alert?rule=&service=&route=`` opens a group's latest), ``/costs`` (judge
cost and coverage), ``/review`` (the review queue), ``/agreement`` (the judge against people), ``/api/records``
(the list's new rows, for live updates) and ``/static/...`` (the pages' stylesheet and scripts: ``_assets``).

Each request reads the store on a worker thread through its own read-only connection, as the overview
page does, so reading never blocks ingestion or the event loop. Every page takes the scope of ``_scope`` (a time
range and a service) from its URL and gives it to its links. A filter that does not parse is a 400 with the
reason, an unknown record or alert a 404, reads past the budget a 503: pages in the shared frame with the ways
back (``_layout.error_page``), the API in plain text.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ragtrace import environment_variables as env
from ragtrace_collector._agreement import agreement, weekly
from ragtrace_collector._http._bounded import DEFAULT_QUERY_SECONDS, bounded_call, interrupted_reply
from ragtrace_collector._store import ReadInterrupted, snapshot
from ragtrace_collector._store.arrival import Arrival
from ragtrace_collector._store.dialect import table_names
from ragtrace_collector._store.reviews import agreement_rows, review_queue
from ragtrace_collector._store.triage import (
    AlertDetail,
    alert_detail,
    alert_scope,
    last_row,
    latest_alert_id,
    list_records,
    newer_records,
    read_costs,
    record_detail,
    services,
)
from ragtrace_collector._triage._alert_html import alert_page, alert_records_filter
from ragtrace_collector._triage._alert_panel import AlertPanel, read_group_panel
from ragtrace_collector._triage._assets import asset_routes
from ragtrace_collector._triage._costs import costs_page
from ragtrace_collector._triage._filters import FilterError, RecordFilter, parse_filter
from ragtrace_collector._triage._layout import error_page
from ragtrace_collector._triage._list_html import list_page, row_html
from ragtrace_collector._triage._record_html import record_page
from ragtrace_collector._triage._review_html import agreement_page, queue_page
from ragtrace_collector._triage._scope import Scope

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

__all__ = ["TRACE_URL_VARIABLE", "error_response", "not_found_handler", "triage_routes"]


_MAX_ID = 2**63 - 1
"""The largest id SQLite stores: a larger one in a URL is a 400, not an overflow in the query."""

TRACE_URL_VARIABLE = env.RAGTRACE_COLLECTOR_TRACE_URL
"""A URL template with ``{trace_id}`` (and ``{span_id}``): the record view links its trace there, e.g.
``http://127.0.0.1:16686/trace/{trace_id}`` (Jaeger) or Phoenix's trace page."""


def triage_routes(
    source: object,
    *,
    trace_url: str | None = None,
    poll_ms: int = 10_000,
    query_seconds: float = DEFAULT_QUERY_SECONDS,
) -> list[BaseRoute]:
    """The routes, reading ``source`` (a store file path or URL); ``trace_url`` defaults to
    ``RAGTRACE_COLLECTOR_TRACE_URL``, ``poll_ms`` is how often the list asks for new records, ``query_seconds``
    how long one request's reads may run (then 503), and they stop as soon as its client leaves."""
    from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse
    from starlette.routing import Route

    template = trace_url if trace_url is not None else (os.environ.get(TRACE_URL_VARIABLE) or None)

    def filtered(request: Request, *, api: bool = False) -> RecordFilter | Response:
        try:
            return parse_filter(request.query_params)
        except FilterError as err:
            if api:
                return PlainTextResponse(f"{err}\n", status_code=400)
            return error_response(400, "That address does not parse", str(err))

    def in_snapshot(work: Any) -> Any:
        # One snapshot: a page's statements (its rows, then the newest row it counts as seen) see one state.
        with snapshot(source) as conn:
            return work(conn)

    async def read(request: Request, work: Any) -> Any:
        """``work(connection)`` within the request's budget, stopped if the client leaves."""
        return await bounded_call(request, query_seconds, in_snapshot, work)

    def bounded(handler: Any, *, api: bool = False) -> Any:
        """The route ``handler``, answering 503 (naming what to narrow) when its reads were stopped."""

        async def route(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except ReadInterrupted as why:
                reply = interrupted_reply(request, why)
                if api:
                    return reply
                return error_response(503, "This view took too long to read", bytes(reply.body).decode().strip())
            return response

        return route

    async def records(request: Request) -> Response:
        alert_id = request.query_params.get("alert")
        if alert_id is not None:
            # ?alert=<id>: the records that made that alert fire, as the list's own filters (bookmarkable).
            if not (alert_id.isascii() and alert_id.isdigit() and len(alert_id) < 19):
                return error_response(400, "That address does not parse", "alert= must be an alert's id")
            scope = await read(request, lambda c: alert_scope(c, int(alert_id)))
            if scope is None:
                return error_response(404, "No such alert", f"There is no alert {alert_id} in this store.")
            return RedirectResponse(f"/records?{alert_records_filter(scope).query()}", status_code=303)
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        result, names, row = await read(request, lambda c: (list_records(c, f), services(c), last_row(c)))
        return HTMLResponse(list_page(result, f, names, last_row=row.text(), poll_ms=poll_ms))

    async def api_records(request: Request) -> Response:
        f = filtered(request, api=True)
        if not isinstance(f, RecordFilter):
            return f
        try:
            after = Arrival.parse(request.query_params.get("after_row", "0"))
        except ValueError:
            after = None
        if after is None or max(after) >= 2**63:
            return PlainTextResponse("after_row must be the last_row a page was given\n", status_code=400)
        rows, next_row, more = await read(request, lambda c: newer_records(c, f, after))
        back = f.query()
        return JSONResponse(
            {
                "records": [_public(r) for r in rows],
                "rows_html": [row_html(r, back) for r in rows],
                "last_row": next_row.text(),
                "more": more,
            }
        )

    async def record(request: Request) -> Response:
        span_id = request.path_params["span_id"]
        detail = await read(request, lambda c: record_detail(c, span_id))
        if detail is None:
            return error_response(404, "No such record", f"There is no record {span_id} in this store.")
        back = urlencode(request.query_params.multi_items())
        f = filtered(request)  # the list it came from: its scope goes on in the navigation
        scope = f.scope if isinstance(f, RecordFilter) else Scope()
        return HTMLResponse(record_page(detail, back=back, trace_url=template, scope=scope))

    async def alert(request: Request) -> Response:
        alert_id = request.path_params["alert_id"]
        if alert_id > _MAX_ID:  # the route takes any digits; SQLite's integers stop here
            return error_response(
                400, "That address does not parse", f"alert id: at most {_MAX_ID}, as /alerts/{{id}} shows it."
            )
        detail, controls = await read(request, lambda c: _alert_and_controls(c, alert_id))
        if detail is None:
            return error_response(404, "No such alert", f"There is no alert {alert_id} in this store.")
        return HTMLResponse(alert_page(detail, controls))

    async def group_alert(request: Request) -> Response:
        q = request.query_params
        rule = q.get("rule")
        if not rule:
            return error_response(400, "That address does not parse", "Give the alert's rule: /alert?rule=...")
        found = await read(request, lambda c: latest_alert_id(c, rule, q.get("service"), q.get("route")))
        if found is None:
            return error_response(404, "No such alert", f"No alert of rule {rule} for that group in this store.")
        return RedirectResponse(f"/alerts/{found}", status_code=303)

    async def review(request: Request) -> Response:
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        (rows, since), names = await read(
            request,
            lambda c: (
                review_queue(c, since_ns=f.since_ns, until_ns=f.until_ns, service=f.service),
                services(c),
            ),
        )
        return HTMLResponse(queue_page(rows, since, scope=f.scope, services=names))

    async def agreement_view(request: Request) -> Response:
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        rows, names = await read(
            request,
            lambda c: (
                agreement_rows(c, records_since_ns=f.since_ns, records_until_ns=f.until_ns, service=f.service),
                services(c),
            ),
        )
        return HTMLResponse(agreement_page(agreement(rows), weekly(rows), scope=f.scope, services=names))

    async def costs(request: Request) -> Response:
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        data, names = await read(request, lambda c: (read_costs(c, f), services(c)))
        return HTMLResponse(costs_page(data, f, services=names))

    return [
        Route("/records", bounded(records), methods=["GET"], name="records"),
        Route("/records/{span_id}", bounded(record), methods=["GET"], name="record"),
        Route("/alerts/{alert_id:int}", bounded(alert), methods=["GET"], name="alert"),
        Route("/alert", bounded(group_alert), methods=["GET"], name="group_alert"),
        Route("/costs", bounded(costs), methods=["GET"], name="costs"),
        Route("/review", bounded(review), methods=["GET"], name="review"),
        Route("/agreement", bounded(agreement_view), methods=["GET"], name="agreement"),
        Route("/api/records", bounded(api_records, api=True), methods=["GET"], name="api_records"),
        *asset_routes(),
    ]


def error_response(status: int, title: str, message: str, *, scope: Scope | None = None) -> Response:
    """A page's error (400, 404, 503...) as a page in the shared frame, with the ways back."""
    from starlette.responses import HTMLResponse

    return HTMLResponse(error_page(status, title, message, scope=scope), status_code=status)


async def not_found_handler(request: Request, exc: Exception) -> Response:
    """The app's answer to a path nothing serves: the error page for a person, plain text for the API and the
    receivers (whose callers read no HTML)."""
    from starlette.responses import PlainTextResponse

    path = request.url.path
    if path.startswith(("/api/", "/v1/", "/metrics", "/static/")):
        return PlainTextResponse("Not Found\n", status_code=404)
    return error_response(404, "No such page", f"This collector has no page at {path[:200]}.")


def _alert_and_controls(conn: Any, alert_id: int) -> tuple[AlertDetail | None, AlertPanel]:
    """An alert and its group's controls (acknowledge, silence), read in one snapshot so they agree."""
    detail = alert_detail(conn, alert_id)
    if detail is None:
        return None, AlertPanel((), ())
    a = detail.scope.alert
    # The alerts table may keep an absent service or route as ""; the watcher's groups keep None.
    controls = read_group_panel(
        conn, table_names(conn), time.time_ns(), str(a["rule"]), a.get("service") or None, a.get("route") or None
    )
    return detail, controls


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record[k] for k in ("span_id", "trace_id", "service", "time_ns", "decision", "scores")}
