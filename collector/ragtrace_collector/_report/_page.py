"""``report()`` (markdown or HTML), ``write_report()`` to a file, ``overview()`` (the live overview page) and the
live pages' routes."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute
from ragtrace_collector._report._format import Format
from ragtrace_collector._report._html import html_page, overview_page
from ragtrace_collector._report._markdown import markdown
from ragtrace_collector._store import RAG_RECORDS, LendsReaders, ReadInterrupted, file_of, is_postgres
from ragtrace_collector._store.dialect import table_names
from ragtrace_collector._store.report import (
    alert_marks,
    open_source,
    problems,
    recent_alerts,
    series,
    summary,
)
from ragtrace_collector._store.triage import last_row, services
from ragtrace_collector._triage import FilterError, triage_routes
from ragtrace_collector._triage._alert_panel import read_alert_panel
from ragtrace_collector._triage._routes import error_response
from ragtrace_collector._triage._scope import Scope, parse_scope


def report(
    source: object,
    format: Format = "markdown",
    *,
    threshold: float = 0.6,
    limit: int = 20,
    since_ns: int | None = None,
    until_ns: int | None = None,
    refresh_seconds: int | None = None,
) -> str:
    """The report as markdown or as a self-contained HTML page with charts (plotly.js inlined: it needs no
    collector). ``refresh_seconds`` (HTML only) makes the page reload itself. The live overview is ``overview``."""
    if format not in ("markdown", "html"):
        raise ValueError(f"format must be 'markdown' or 'html', got {format!r}")
    head = summary(source, since_ns=since_ns, until_ns=until_ns)
    worst = problems(source, threshold, limit=limit, since_ns=since_ns, until_ns=until_ns)
    with open_source(source) as conn:
        tables = table_names(conn)
        recent = recent_alerts(conn, tables)
        if format == "markdown":
            return markdown(head, worst, threshold, recent)
        scores_over_time = series(conn, tables, since_ns, until_ns)
        marks = alert_marks(conn, tables)
    return html_page(head, worst, threshold, scores_over_time, marks, recent, refresh_seconds)


def overview(
    source: object, scope: Scope, *, threshold: float = 0.6, limit: int = 20, poll_seconds: int = 60, endpoint: str
) -> str:
    """The live overview page of ``scope`` (``_report._html.overview_page``): the alert panel's buttons, the records'
    links, the notice of new records; ``endpoint``, this collector's base URL, for an empty store's hint."""
    since, until, service = scope.since_ns, scope.until_ns, scope.service
    head = summary(source, since_ns=since, until_ns=until, service=service)
    worst = problems(source, threshold, limit=limit, since_ns=since, until_ns=until, service=service)
    with open_source(source) as conn:
        tables = table_names(conn)
        recent = recent_alerts(conn, tables)
        scores_over_time = series(conn, tables, since, until, service=service)
        marks = alert_marks(conn, tables)
        panel = read_alert_panel(conn, tables, time.time_ns(), service)
        newest = last_row(conn).text() if RAG_RECORDS in tables else "0"  # the triage pages' cursor, shared
        names = services(conn) if RAG_RECORDS in tables else []
    return overview_page(
        head,
        worst,
        threshold,
        scores_over_time,
        marks,
        recent,
        panel,
        last_row=newest,
        poll_seconds=poll_seconds,
        scope=scope,
        services=names,
        endpoint=endpoint,
    )


def write_report(
    db_path: str | os.PathLike[str], out_path: str | os.PathLike[str], format: Format | None = None, **options: Any
) -> Path:
    """Write the report of the store at ``db_path`` to ``out_path``; the format defaults to markdown
    for ``.md`` files and HTML otherwise. Returns the path written."""
    out = Path(out_path)
    chosen: Format = format or ("markdown" if out.suffix.lower() in (".md", ".markdown") else "html")
    text = report(db_path, chosen, **options)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def page_routes(store: object, *, refresh_seconds: int = 60) -> list[BaseRoute]:
    """Starlette routes serving the live overview at ``/`` (HTML with the alert panel, of the scope its URL gives:
    ``_triage._scope``; ``?format=markdown`` for text and ``?threshold=`` to change the problem threshold) and the
    triage pages (``_triage``: records, a record,
    an alert, cost and coverage). Each request reads the store on a worker thread
    through its own read-only connection, so the page never blocks ingestion or the event loop."""
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    from ragtrace_collector._http._bounded import DEFAULT_QUERY_SECONDS, bounded_call, interrupted_reply

    source = _page_source(store)

    async def page(request: Request) -> Response:
        try:
            threshold = float(request.query_params.get("threshold", "0.6"))
            if not 0.0 <= threshold <= 1.0:
                raise ValueError
        except ValueError:
            return error_response(400, "That address does not parse", "threshold= must be a number in [0, 1].")
        try:
            scope = parse_scope(request.query_params)
        except FilterError as err:
            return error_response(400, "That address does not parse", str(err))
        try:
            if request.query_params.get("format") == "markdown":
                text = await bounded_call(
                    request,
                    DEFAULT_QUERY_SECONDS,
                    functools.partial(
                        report,
                        source,
                        "markdown",
                        threshold=threshold,
                        since_ns=scope.since_ns,
                        until_ns=scope.until_ns,
                    ),
                )
                return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")
            body = await bounded_call(
                request,
                DEFAULT_QUERY_SECONDS,
                functools.partial(
                    overview,
                    source,
                    scope,
                    threshold=threshold,
                    poll_seconds=refresh_seconds,
                    endpoint=str(request.base_url),
                ),
            )
        except ReadInterrupted as why:
            reply = interrupted_reply(request, why)
            return error_response(503, "This view took too long to read", bytes(reply.body).decode().strip())
        return HTMLResponse(body)

    return [Route("/", page, methods=["GET"], name="report"), *triage_routes(source)]


def _page_source(store: object) -> object:
    """A source each request can read on its own thread: a ``PostgresStore`` itself (it lends each request a
    pooled connection), the store's file path, or a URL (each request then connects on its own)."""
    if isinstance(store, LendsReaders):
        return store
    target = getattr(store, "target", store)  # a Store: what opens it again
    if is_postgres(target):
        return target
    if isinstance(target, str | os.PathLike):
        return Path(target)
    database = store if hasattr(store, "conn") else getattr(store, "db", None)
    found = file_of(database)
    if found is not None:
        return found
    raise TypeError("page_routes needs a Store, a path or a file-backed sqlite_utils.Database")
