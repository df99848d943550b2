"""The records list: the filter form, one row per record (newest first, or in the order ``sort=`` asks: the
column headings link each order), the next-page link, and the script (``static/records.js``) that adds new records
at the top without moving the reader (live updates) and moves between rows from the keyboard (``j``/``k``,
``Enter`` opens, ``/`` searches)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ragtrace import semconv
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._store.triage import Page
from ragtrace_collector._triage._filters import RecordFilter
from ragtrace_collector._triage._sorting import parse_sort
from ragtrace_collector._triage._templates import Markup, render, render_page

__all__ = ["list_page", "row_html"]

_CUT = 140


def _cut(text: object) -> str:
    value = "" if text is None else str(text)
    return value if len(value) <= _CUT else value[: _CUT - 1] + "…"


def _chips(scores: dict[str, dict[str, Any]]) -> list[tuple[str, float, bool]]:
    """Each measured score as (metric, value, bad): bad past 0.5 on the metric's wrong side."""
    chips = []
    for metric in sorted(scores):
        value = scores[metric].get("value")
        if value is None:
            continue
        bad = value > 0.5 if metric_direction(metric) == "lower" else value < 0.5
        chips.append((metric, float(value), bad))
    return chips


def row_html(record: dict[str, Any], back: str) -> str:
    """One record as a table row (``templates/record_row.html``); its link keeps the list's filters (``back``) for
    the way back."""
    return render(
        "record_row.html",
        r=record,
        back=back,
        query=_cut(record["query"]),
        answer=_cut(record["answer"]),
        chips=_chips(record.get("scores") or {}),
    )


def _sort_link(f: RecordFilter, sort: str, text: str) -> dict[str, Any]:
    """A link to the list in order ``sort`` (its first page), marked when it is the order shown."""
    target = replace(f, sort=parse_sort(sort), before=None, after=None)
    return {"query": target.query(), "chosen": str(f.sort) == sort, "text": text}


def _orders(f: RecordFilter, result: Page) -> dict[str, Any]:
    """The orders the list offers: by time either way, by service, and by each metric on the page."""
    shown: set[str] = {str(m) for r in result.records for m in (r.get("scores") or {})}
    if f.sort.metric is not None:
        shown.add(f.sort.metric)
    return {
        "newest": _sort_link(f, "-time", "newest"),
        "oldest": _sort_link(f, "time", "oldest"),
        "service": _sort_link(f, "service", "service"),
        "by_score": [(m, _sort_link(f, m, "lowest"), _sort_link(f, "-" + m, "highest")) for m in sorted(shown)],
    }


def list_page(
    result: Page, f: RecordFilter, services: Sequence[str], *, last_row: str = "0", poll_ms: int = 10_000
) -> str:
    """The records list page (``templates/list.html``) for ``result`` under filter ``f``; ``last_row``: the store's
    newest row when it was read (the new records are the ones after it)."""
    query = f.query()
    return render_page(
        "list.html",
        title="records",
        scope=f.scope,
        services=services,
        here="/records",
        scripts=("records.js",),
        f=f,
        service_names=services,
        sort=str(f.sort),
        decisions=semconv.DECISIONS,
        scores=", ".join(str(b) for b in f.scores),
        meta=", ".join(f"{k}:{v}" for k, v in f.meta),
        orders=_orders(f, result),
        rows=[Markup(row_html(r, query)) for r in result.records],  # the row template's HTML
        # Live updates only on the first page newest first: a reader paging, or in another order, reads history.
        live="1" if f.before is None and f.after is None and f.sort.default else "0",
        query=query,
        last_row=last_row,
        poll_ms=int(poll_ms),
        next=result.next.query(paging=True) if result.next else None,
    )
