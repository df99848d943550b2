"""The review API: people say whether the judge was right about a record, and the collector hands their verdicts
back as labels and as the judge's agreement with them. The record page's buttons use it; so can scripts.

* ``POST /api/reviews`` ``{"span_id", "claim", "grounded", "note", "author"}``: the person's verdict on the record's
  answer (``claim`` null or absent) or on one of its claims (its index, from 0): ``grounded`` true when it is
  supported by the record's chunks, false when not. A later review of the same replaces it (201 ``{"review"}``;
  404 for a record the store does not have).
* ``GET /api/reviews?span_id=``: one record's reviews.
* ``GET /api/reviews.jsonl[?since=NS]``: every record reviewed as a whole, one JSON object a line, as
  ``ragtrace calibrate`` reads it (``query``, ``chunks``, ``answer``, ``grounded``, ``metadata``):
  ``curl .../api/reviews.jsonl > labels.jsonl && ragtrace calibrate labels.jsonl``.
* ``GET /api/agreement[?since=NS]``: the judge's agreement with the reviews (``_agreement.py``), overall, per judge
  and service, and week by week.

Bodies are ``application/json`` only, as the alert API's, and a browser's post carries the CSRF token the guard
(``_auth.py``) set beside its session. Behind a trusted proxy (``--trusted-user-header``) the review's ``author``
is the signed-in person, whatever the body says. A mistake is a 400 ``{"error"}`` naming it. Every request works
within the pages' query budget (2 s, stopped when the client leaves): past it, a 503 with nothing written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ragtrace_collector._agreement import agreement, weekly
from ragtrace_collector._http._alert_api import _MAX_TEXT, _answer, _Refused, _text
from ragtrace_collector._http._bounded import DEFAULT_QUERY_SECONDS, bounded_call
from ragtrace_collector._store import ReadInterrupted, snapshot, writing
from ragtrace_collector._store.reviews import ANSWER, agreement_rows, labelled_records, reviews_of, save_review

__all__ = ["REVIEWS_API_PATH", "review_api_routes"]

REVIEWS_API_PATH = "/api/reviews"
_MAX_CLAIM = 10_000
_MAX_NS = 2**63 - 1


def _since(request: Request) -> int | None:
    raw = request.query_params.get("since")
    if raw is None or raw == "":
        return None
    if not raw.isascii() or not raw.isdigit() or int(raw) > _MAX_NS:
        raise _Refused(400, f"since: {raw[:40]!r} is not a time in ns since the epoch")
    return int(raw)


def review_api_routes(store: object, *, clock: Callable[[], int] = time.time_ns) -> list[BaseRoute]:
    """The API's routes over ``store`` (a SQLite file's path, a PostgreSQL URL, or the collector's store: a
    ``PostgresStore`` lends its pooled readers)."""
    where = store

    def review(body: dict[str, Any]) -> dict[str, Any]:
        span_id = _text(body, "span_id", limit=64)
        if span_id is None:
            raise _Refused(400, "`span_id` is required: the record's span id, as its page shows it")
        claim = body.get("claim")
        if claim is not None and (not isinstance(claim, int) or isinstance(claim, bool) or not 0 <= claim < _MAX_CLAIM):
            raise _Refused(400, "`claim` must be a claim's index (0 for the first), or null for the whole answer")
        grounded = body.get("grounded")
        if not isinstance(grounded, bool):
            raise _Refused(400, "`grounded` must be true (supported by the chunks) or false (not)")
        note, author = _text(body, "note", limit=_MAX_TEXT), _text(body, "author")
        with writing(where) as conn, conn:  # within the request's budget, as the alert API's writes
            saved = save_review(
                conn,
                span_id,
                claim=ANSWER if claim is None else claim,
                grounded=grounded,
                note=note,
                author=author,
                now_ns=clock(),
            )
        if not saved:
            raise _Refused(404, f"no record {span_id} in this store")
        return {"review": {"span_id": span_id, "claim": claim, "grounded": grounded, "note": note, "author": author}}

    def listed(span_id: str) -> dict[str, Any]:
        with snapshot(where) as conn:
            found = reviews_of(conn, span_id)
        for row in found:
            row["grounded"] = bool(row["grounded"])
            row["claim"] = None if row["claim"] == ANSWER else row["claim"]
        return {"reviews": found}

    def exported(since: int | None) -> str:
        with snapshot(where) as conn:
            rows = labelled_records(conn, since)
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)

    def measured(since: int | None) -> dict[str, Any]:
        with snapshot(where) as conn:
            rows = agreement_rows(conn, since)
        return {
            "cut": 0.5,
            "groups": [asdict(a) for a in agreement(rows)],
            "weeks": [{"week_ns": week, **asdict(a)} for week, a in weekly(rows)],
        }

    async def post_review(request: Request) -> Response:
        return await _answer(request, review, 201, DEFAULT_QUERY_SECONDS)

    async def get_reviews(request: Request) -> Response:
        span_id = request.query_params.get("span_id")
        if not span_id or len(span_id) > 64:
            return JSONResponse({"error": "give the record: ?span_id=..."}, status_code=400)
        return await _read(request, listed, span_id)

    async def get_export(request: Request) -> Response:
        try:
            since = _since(request)
            body = await bounded_call(request, DEFAULT_QUERY_SECONDS, exported, since)
        except _Refused as refused:
            return JSONResponse({"error": refused.error}, status_code=refused.status)
        except ReadInterrupted as why:
            return JSONResponse({"error": f"the store work took {why}; ask again"}, status_code=503)
        return Response(body, media_type="application/x-ndjson")

    async def get_agreement(request: Request) -> Response:
        try:
            since = _since(request)
        except _Refused as refused:
            return JSONResponse({"error": refused.error}, status_code=refused.status)
        return await _read(request, measured, since)

    async def _read(request: Request, work: Callable[[Any], dict[str, Any]], arg: Any) -> Response:
        """``work(arg)`` within the request's query budget (2 s, stopped when the client leaves): JSON, or a 503."""
        try:
            return JSONResponse(await bounded_call(request, DEFAULT_QUERY_SECONDS, work, arg))
        except ReadInterrupted as why:
            return JSONResponse({"error": f"the store work took {why}; ask again"}, status_code=503)

    return [
        Route(REVIEWS_API_PATH, post_review, methods=["POST"]),
        Route(REVIEWS_API_PATH, get_reviews, methods=["GET"]),
        Route(REVIEWS_API_PATH + ".jsonl", get_export, methods=["GET"]),
        Route("/api/agreement", get_agreement, methods=["GET"]),
    ]
