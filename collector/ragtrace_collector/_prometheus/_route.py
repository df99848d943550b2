"""``GET /metrics``: the collector's state for Prometheus to scrape (``_exposition.render``).

Rendered on a worker thread (it reads the store's ``alert_groups`` through a read-only connection of its own),
so a scrape never blocks the event loop or ingestion. With a token set it is guarded like the page: Prometheus
sends the token with ``authorization: {credentials_file: ...}`` in its scrape config.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ragtrace_collector._prometheus._exposition import Sources, render

__all__ = ["SCRAPE_PATH", "metrics_routes"]

SCRAPE_PATH = "/metrics"


def metrics_routes(sources: Sources, *, clock: Callable[[], int] = time.time_ns) -> list[BaseRoute]:
    """The ``/metrics`` route over ``sources``."""

    async def scrape(request: Request) -> Response:
        body = await run_in_threadpool(render, sources, clock())
        # The classic text format, which every Prometheus since 2.0 (Debian's 2.42 included) parses as it is.
        return Response(body, media_type=CONTENT_TYPE_PLAIN_0_0_4)

    return [Route(SCRAPE_PATH, scrape, methods=["GET"])]
