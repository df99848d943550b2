"""The records list: the filter form, one row per record (newest first), the next-page link, and the
script that adds new records at the top without moving the reader (live updates) and moves between rows
from the keyboard (``j``/``k``, ``Enter`` opens, ``/`` searches)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragtrace import semconv
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._store.triage import Page
from ragtrace_collector._triage._filters import RecordFilter
from ragtrace_collector._triage._layout import e, fmt_time, page

__all__ = ["list_page", "row_html"]

_CUT = 140


def _cut(text: object) -> str:
    value = "" if text is None else str(text)
    return value if len(value) <= _CUT else value[: _CUT - 1] + "…"


def _chips(scores: dict[str, dict[str, Any]]) -> str:
    chips = []
    for metric in sorted(scores):
        value = scores[metric].get("value")
        if value is None:
            continue
        bad = value > 0.5 if metric_direction(metric) == "lower" else value < 0.5
        chips.append(f'<span class="chip{" bad" if bad else ""}">{e(metric)} {value:.2f}</span>')
    return "".join(chips)


def row_html(record: dict[str, Any], back: str) -> str:
    """One record as a table row; its link keeps the list's filters (``back``) for the way back."""
    link = f"/records/{e(record['span_id'])}" + (f"?{e(back)}" if back else "")
    return (
        f'<tr class="row" data-time="{record["time_ns"]}" data-span="{e(record["span_id"])}">'
        f"<td>{e(fmt_time(record['time_ns']))}</td><td>{e(record['service'])}</td>"
        f'<td><a class="open" href="{link}">{e(_cut(record["query"]) or record["span_id"])}</a></td>'
        f"<td>{e(_cut(record['answer']))}</td><td>{e(record['decision'])}</td>"
        f"<td>{_chips(record.get('scores') or {})}</td></tr>"
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
        + field("since", "since", f.since_ns, "2026-11-24T09:00Z")
        + field("until", "until", f.until_ns, "ns or ISO time")
        + f'<label>service<select name="service"><option value="">any</option>{service_options}</select></label>'
        + f'<label>decision<select name="decision"><option value="">any</option>{decisions}</select></label>'
        + field("score", "score", ", ".join(str(b) for b in f.scores) or None, "hallucination>0.5")
        + field("meta", "metadata", ", ".join(f"{k}:{v}" for k, v in f.meta) or None, "user:alice")
        + field("q", "text", f.text, "words in query or answer")
        + '<button type="submit">filter</button> <a href="/records">clear</a></form>'
    )


_SCRIPT = """
(function () {
  const table = document.getElementById('records');
  const note = document.getElementById('live');
  const rows = () => Array.from(table.querySelectorAll('tr.row a.open'));
  document.addEventListener('keydown', (ev) => {
    if (ev.target.matches('input, select, textarea') || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const links = rows(); const i = links.indexOf(document.activeElement);
    if (ev.key === 'j') { (links[i + 1] || links[0]) && (links[i + 1] || links[0]).focus(); ev.preventDefault(); }
    if (ev.key === 'k') { (links[i - 1] || links[0]) && (links[i - 1] || links[0]).focus(); ev.preventDefault(); }
    if (ev.key === '/') { document.querySelector('input[name=q]').focus(); ev.preventDefault(); }
  });
  const live = table.dataset.live === '1';
  if (!live) return;
  let added = 0;
  async function poll() {
    let again = POLL_MS;
    try {
      const reply = await fetch('/api/records?' + table.dataset.query + (table.dataset.query ? '&' : '') +
                                'after_row=' + table.dataset.lastRow, {headers: {'Accept': 'application/json'}});
      if (reply.ok) {
        const data = await reply.json();
        table.dataset.lastRow = data.last_row;
        if (data.rows_html.length) {
          const y = window.scrollY, h = document.body.scrollHeight;
          // They come in the order they arrived: each goes on top of the one before.
          for (const row of data.rows_html) table.querySelector('tbody').insertAdjacentHTML('afterbegin', row);
          // New rows above push the page down: keep the reader's rows where they were on screen.
          if (y > 0) window.scrollTo(0, y + document.body.scrollHeight - h);
          added += data.rows_html.length;
          note.textContent = added + ' new record(s) added at the top since this page loaded';
        }
        if (data.more) again = 0;  // a burst: take the rest now, a page at a time
      }
    } catch (err) { /* the next poll tries again */ }
    setTimeout(poll, again);
  }
  setTimeout(poll, POLL_MS);
})();
"""


def list_page(
    result: Page, f: RecordFilter, services: Sequence[str], *, last_row: int = 0, poll_ms: int = 10_000
) -> str:
    """The records list page for ``result`` under filter ``f``; ``last_row``: the store's newest row when
    it was read (the new records are the ones after it)."""
    query = f.query()
    rows = "".join(row_html(r, query) for r in result.records)
    empty = '<tr><td colspan="6" class="muted">no record matches these filters</td></tr>' if not rows else ""
    # Live updates only on the first page: a reader paging back in time is reading history.
    live = "1" if f.before is None else "0"
    more = (
        f'<p><a rel="next" href="/records?{e(result.next.query(paging=True))}">older records</a></p>'
        if result.next
        else ""
    )
    body = (
        "<h1>Records</h1>"
        + _form(f, services)
        + '<p class="muted">Keys: <kbd>j</kbd>/<kbd>k</kbd> next/previous record, <kbd>Enter</kbd> opens it, '
        + "<kbd>/</kbd> searches. New records appear at the top as they are scored.</p>"
        + '<p id="live" class="notice" role="status" aria-live="polite"></p>'
        + f'<table id="records" data-live="{live}" data-query="{e(query)}" data-last-row="{last_row}">'
        + "<thead><tr><th>time</th><th>service</th><th>query</th><th>answer</th><th>decision</th><th>scores</th>"
        + f"</tr></thead><tbody>{rows}{empty}</tbody></table>{more}"
    )
    return page("records", body, script=_SCRIPT.replace("POLL_MS", json.dumps(poll_ms)))
