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
from ragtrace_collector._triage._layout import e, page
from ragtrace_collector._triage._sorting import parse_sort
from ragtrace_collector._triage._templates import render

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


def _form(f: RecordFilter, services: Sequence[str]) -> str:
    def field(name: str, label: str, value: object, hint: str = "") -> str:
        return (
            f'<label>{e(label)}<input name="{name}" value="{e(value or "")}" placeholder="{e(hint)}" '
            f'aria-label="{e(label)}"></label>'
        )

    service_options = "".join(
        f'<option value="{e(s)}"{" selected" if s == f.service else ""}>{e(s)}</option>' for s in services
    )
    decisions = "".join(f"<option{' selected' if d == f.decision else ''}>{e(d)}</option>" for d in semconv.DECISIONS)
    return (
        '<form class="filters" method="get" action="/records" role="search">'
        + (f'<input type="hidden" name="range" value="{e(f.range)}">' if f.range else "")
        + ("" if f.sort.default else f'<input type="hidden" name="sort" value="{e(str(f.sort))}">')
        + field("since", "since", None if f.range else f.since_ns, "2026-11-24T09:00Z")
        + field("until", "until", f.until_ns, "ns or ISO time")
        + f'<label>service<select name="service"><option value="">any</option>{service_options}</select></label>'
        + f'<label>decision<select name="decision"><option value="">any</option>{decisions}</select></label>'
        + field("score", "score", ", ".join(str(b) for b in f.scores) or None, "hallucination>0.5")
        + field("meta", "metadata", ", ".join(f"{k}:{v}" for k, v in f.meta) or None, "user:alice")
        + field("q", "text", f.text, "words in query or answer")
        + '<button type="submit">filter</button> <a href="/records">clear</a></form>'
    )


def _sort_link(f: RecordFilter, sort: str, text: str) -> str:
    """A link to the list in order ``sort`` (its first page), marked when it is the order shown."""
    chosen = str(f.sort) == sort
    target = replace(f, sort=parse_sort(sort), before=None, after=None)
    mark = ' aria-current="true" class="sorted"' if chosen else ""
    return f'<a href="/records?{e(target.query())}"{mark}>{e(text)}</a>'


def _orders(f: RecordFilter, result: Page) -> str:
    """The orders the list offers: by time either way, by service, and by each metric on the page."""
    shown: set[str] = {str(m) for r in result.records for m in (r.get("scores") or {})}
    if f.sort.metric is not None:
        shown.add(f.sort.metric)
    by_score = " ".join(
        f"{e(m)} {_sort_link(f, m, 'lowest')}/{_sort_link(f, '-' + m, 'highest')}" for m in sorted(shown)
    )
    return (
        '<p class="muted" id="orders">Sort: '
        + _sort_link(f, "-time", "newest")
        + " · "
        + _sort_link(f, "time", "oldest")
        + " · "
        + _sort_link(f, "service", "service")
        + (f" · by score: {by_score}" if by_score else "")
        + (f". Records without a {e(f.sort.metric)} score are not in this order." if f.sort.metric is not None else ".")
        + "</p>"
    )


def list_page(
    result: Page, f: RecordFilter, services: Sequence[str], *, last_row: int = 0, poll_ms: int = 10_000
) -> str:
    """The records list page for ``result`` under filter ``f``; ``last_row``: the store's newest row when
    it was read (the new records are the ones after it)."""
    query = f.query()
    rows = "".join(row_html(r, query) for r in result.records)
    empty = ""
    if not rows:
        empty = (
            '<tr class="none"><td colspan="6" class="muted">No record matches these filters'
            + (f" in {e(f.scope.describe())}" if f.scope.params() else "")
            + '. <a href="/records">Every record</a>.</td></tr>'
        )
    # Live updates only on the first page newest first: a reader paging, or in another order, is reading history.
    live = "1" if f.before is None and f.after is None and f.sort.default else "0"
    more = (
        f'<p><a rel="next" href="/records?{e(result.next.query(paging=True))}">'
        + ("older records" if f.sort.default else "next page")
        + "</a></p>"
        if result.next
        else ""
    )
    body = (
        "<h1>Records</h1>"
        + _form(f, services)
        + _orders(f, result)
        + '<p class="muted">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous record, <kbd>Enter</kbd> opens it, '
        + "<kbd>/</kbd> searches. New records appear at the top as they are scored.</p>"
        + '<p id="live" class="notice" role="status" aria-live="polite"></p>'
        + f'<table id="records" data-live="{live}" data-query="{e(query)}" data-last-row="{last_row}" '
        + f'data-poll-ms="{int(poll_ms)}">'
        + "<thead><tr><th>time</th><th>service</th><th>query</th><th>answer</th><th>decision</th><th>scores</th>"
        + f"</tr></thead><tbody>{rows}{empty}</tbody></table>{more}"
    )
    return page("records", body, scope=f.scope, services=services, here="/records", scripts=("records.js",))
