"""The triage pages' Starlette routes: ``/records`` (the list), ``/records/{span_id}`` (a record),
``/alerts/{id}`` (an alert; ``/alert?rule=&service=&route=`` opens a group's latest), ``/costs`` (judge
cost and coverage) and ``/api/records`` (the list's new rows, for live updates).

Each request reads the store on a worker thread through its own read-only connection, as the overview
page does, so reading never blocks ingestion or the event loop. A filter that does not parse is a 400
with the reason; an unknown record or alert a 404.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ragtrace import environment_variables as env
from ragtrace_collector._agreement import agreement, weekly
from ragtrace_collector._http._bounded import DEFAULT_QUERY_SECONDS, bounded_call, interrupted_reply
from ragtrace_collector._store import ReadInterrupted, snapshot
from ragtrace_collector._store.reviews import agreement_rows, review_queue
from ragtrace_collector._store.triage import (
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
from ragtrace_collector._triage._costs import costs_page
from ragtrace_collector._triage._filters import FilterError, RecordFilter, parse_filter
from ragtrace_collector._triage._list_html import list_page, row_html
from ragtrace_collector._triage._record_html import record_page
from ragtrace_collector._triage._review_html import agreement_page, queue_page

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

__all__ = ["TRACE_URL_VARIABLE", "triage_routes"]


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

    def filtered(request: Request) -> RecordFilter | Response:
        try:
            return parse_filter(request.query_params)
        except FilterError as err:
            return PlainTextResponse(f"{err}\n", status_code=400)

    def in_snapshot(work: Any) -> Any:
        # One snapshot: a page's statements (its rows, then the newest row it counts as seen) see one state.
        with snapshot(source) as conn:
            return work(conn)

    async def read(request: Request, work: Any) -> Any:
        """``work(connection)`` within the request's budget, stopped if the client leaves."""
        return await bounded_call(request, query_seconds, in_snapshot, work)

    def bounded(handler: Any) -> Any:
        """The route ``handler``, answering 503 (naming what to narrow) when its reads were stopped."""

        async def route(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except ReadInterrupted as why:
                return interrupted_reply(request, why)
            return response

        return route

    async def records(request: Request) -> Response:
        alert_id = request.query_params.get("alert")
        if alert_id is not None:
            # ?alert=<id>: the records that made that alert fire, as the list's own filters (bookmarkable).
            if not (alert_id.isascii() and alert_id.isdigit() and len(alert_id) < 19):
                return PlainTextResponse("alert must be an alert's id, as /alerts/{id} shows it\n", status_code=400)
            scope = await read(request, lambda c: alert_scope(c, int(alert_id)))
            if scope is None:
                return PlainTextResponse(f"no alert {alert_id} in this store\n", status_code=404)
            return RedirectResponse(f"/records?{alert_records_filter(scope).query()}", status_code=303)
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        result, names, row = await read(request, lambda c: (list_records(c, f), services(c), last_row(c)))
        return HTMLResponse(list_page(result, f, names, last_row=row, poll_ms=poll_ms))

    async def api_records(request: Request) -> Response:
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        after_text = request.query_params.get("after_row", "0")
        if not (after_text.isascii() and after_text.isdigit() and len(after_text) < 19):
            return PlainTextResponse("after_row must be the last_row a page was given\n", status_code=400)
        rows, next_row, more = await read(request, lambda c: newer_records(c, f, int(after_text)))
        back = f.query()
        return JSONResponse(
            {
                "records": [_public(r) for r in rows],
                "rows_html": [row_html(r, back) for r in rows],
                "last_row": next_row,
                "more": more,
            }
        )

    async def record(request: Request) -> Response:
        span_id = request.path_params["span_id"]
        detail = await read(request, lambda c: record_detail(c, span_id))
        if detail is None:
            return PlainTextResponse(f"no record {span_id} in this store\n", status_code=404)
        back = urlencode(request.query_params.multi_items())
        return HTMLResponse(record_page(detail, back=back, trace_url=template))

    async def alert(request: Request) -> Response:
        alert_id = request.path_params["alert_id"]
        if alert_id > _MAX_ID:  # the route takes any digits; SQLite's integers stop here
            return PlainTextResponse(f"alert id: at most {_MAX_ID}, as /alerts/{{id}} shows it\n", status_code=400)
        detail = await read(request, lambda c: alert_detail(c, alert_id))
        if detail is None:
            return PlainTextResponse(f"no alert {alert_id} in this store\n", status_code=404)
        return HTMLResponse(alert_page(detail))

    async def group_alert(request: Request) -> Response:
        q = request.query_params
        rule = q.get("rule")
        if not rule:
            return PlainTextResponse("give the alert's rule: /alert?rule=...&service=...\n", status_code=400)
        found = await read(request, lambda c: latest_alert_id(c, rule, q.get("service"), q.get("route")))
        if found is None:
            return PlainTextResponse(f"no alert of rule {rule} for that group in this store\n", status_code=404)
        return RedirectResponse(f"/alerts/{found}", status_code=303)

    async def review(request: Request) -> Response:
        rows, since = await read(request, review_queue)
        return HTMLResponse(queue_page(rows, since))

    async def agreement_view(request: Request) -> Response:
        rows = await read(request, lambda c: agreement_rows(c))
        return HTMLResponse(agreement_page(agreement(rows), weekly(rows)))

    async def costs(request: Request) -> Response:
        f = filtered(request)
        if not isinstance(f, RecordFilter):
            return f
        data = await read(request, lambda c: read_costs(c, f))
        return HTMLResponse(costs_page(data, f))

    return [
        Route("/records", bounded(records), methods=["GET"], name="records"),
        Route("/records/{span_id}", bounded(record), methods=["GET"], name="record"),
        Route("/alerts/{alert_id:int}", bounded(alert), methods=["GET"], name="alert"),
        Route("/alert", bounded(group_alert), methods=["GET"], name="group_alert"),
        Route("/costs", bounded(costs), methods=["GET"], name="costs"),
        Route("/review", bounded(review), methods=["GET"], name="review"),
        Route("/agreement", bounded(agreement_view), methods=["GET"], name="agreement"),
        Route("/api/records", bounded(api_records), methods=["GET"], name="api_records"),
    ]


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record[k] for k in ("span_id", "trace_id", "service", "time_ns", "decision", "scores")}
