"""The pages' static files: their stylesheet and scripts (``static/``) and plotly.js (from the ``plotly`` package),
each served at a URL that names its content (``/static/<name>.<hash><suffix>``) so a browser keeps it for a year and
asks again only when it changed (a new collector's file has a new URL).

No page holds a script of its own: the Content-Security-Policy (``_http/_auth.py``) allows scripts from this
collector's files only (``script-src 'self'``), so what a span says can never run as script, even where a page
failed to escape it. A page passes its values to its script in ``data-*`` attributes or in a JSON data block
(``<script type="application/json">``, which no browser runs).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

__all__ = ["STATIC_PREFIX", "asset_routes", "asset_url"]

STATIC_PREFIX = "/static/"
IMMUTABLE = "public, max-age=31536000, immutable"
"""A year, and never revalidated: the URL changes with the content."""

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_OWN = ("pages.css", "pages.js", "records.js", "overview.js", "alerts.js", "review.js")
PLOTLY = "plotly.js"
"""plotly.js, the overview's charts' library: 4.8 MB, so loaded once and kept, never inlined in a page."""


@dataclass(frozen=True, slots=True)
class _Asset:
    name: str
    url: str
    body: bytes
    media_type: str


def _load(name: str) -> bytes:
    if name == PLOTLY:
        from plotly.offline import get_plotlyjs

        return str(get_plotlyjs()).encode("utf-8")
    return resources.files("ragtrace_collector._triage").joinpath("static", name).read_bytes()


@functools.cache
def _asset(name: str) -> _Asset:
    body = _load(name)
    stem, dot, suffix = name.rpartition(".")
    digest = hashlib.sha256(body).hexdigest()[:16]
    return _Asset(name, f"{STATIC_PREFIX}{stem}.{digest}{dot}{suffix}", body, _TYPES[f".{suffix}"])


def asset_url(name: str) -> str:
    """The versioned URL of the static file ``name`` (``pages.css``, ``records.js``, ``plotly.js``...)."""
    return _asset(name).url


@functools.cache
def _by_url() -> dict[str, _Asset]:
    return {_asset(name).url: _asset(name) for name in (*_OWN, PLOTLY)}


def asset_routes() -> list[BaseRoute]:
    """``GET /static/{file}``: each file at its versioned URL, with ``Cache-Control`` for a year (immutable); any
    other name (an older version's) is a 404 the browser does not keep."""
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    async def static(request: Request) -> Response:
        found = _by_url().get(request.url.path)
        if found is None:
            return PlainTextResponse(
                "no such file: the page that named it is older than this collector, reload it\n",
                status_code=404,
                headers={"Cache-Control": "no-store"},
            )
        return Response(
            found.body,
            media_type=found.media_type,
            headers={"Cache-Control": IMMUTABLE, "X-Content-Type-Options": "nosniff"},
        )

    return [Route(STATIC_PREFIX + "{file}", static, methods=["GET", "HEAD"], name="static")]
