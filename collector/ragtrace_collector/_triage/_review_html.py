"""People correcting the judge: the review controls of the record page (the answer and each claim right or wrong,
with a note: ``templates/review.html``, which the record page imports), the review queue (``/review``: the records
most worth a person's look) and the agreement page (``/agreement``: how well the judge agrees with the reviews, per
judge and service and week by week).

The controls post JSON to the review API (``_http/_review_api.py``) with ``fetch`` (``static/review.js``) and
reload the page; the session cookie goes along, with the CSRF token from the ``ragtrace_csrf`` cookie, as the alert
controls' buttons do. The queue and the agreement are of the pages' scope (``_scope``: a time range and a service).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace_collector._agreement import CUT, Agreement
from ragtrace_collector._triage._scope import Scope
from ragtrace_collector._triage._templates import render_page

__all__ = ["agreement_page", "queue_page"]


def queue_page(
    rows: Sequence[dict[str, Any]], since_ns: int, *, scope: Scope | None = None, services: Sequence[str] = ()
) -> str:
    """``/review`` (``templates/review_queue.html``): scored records nobody reviewed, the judge's least sure first,
    in ``scope``."""
    return render_page(
        "review_queue.html",
        title="review queue",
        scope=scope,
        services=services,
        here="/review",
        rows=rows,
        since_ns=since_ns,
        cut=CUT,
    )


def agreement_page(
    groups: Sequence[Agreement],
    weeks: Sequence[tuple[int, Agreement]],
    *,
    scope: Scope | None = None,
    services: Sequence[str] = (),
) -> str:
    """``/agreement`` (``templates/agreement.html``): the judge against the people who reviewed its records (records
    of ``scope``)."""
    return render_page(
        "agreement.html",
        title="agreement",
        scope=scope,
        services=services,
        here="/agreement",
        groups=groups,
        weeks=weeks,
        cut=CUT,
    )
