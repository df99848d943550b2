"""People correcting the judge: the review controls of the record page (the answer and each claim right or wrong,
with a note), the review queue (``/review``: the records most worth a person's look) and the agreement page
(``/agreement``: how well the judge agrees with the reviews, per judge and service and week by week).

The controls post JSON to the review API (``_http/_review_api.py``) with ``fetch`` (``static/review.js``) and
reload the page; the session cookie goes along, with the CSRF token from the ``ragtrace_csrf`` cookie, as the alert
panel's buttons do. The queue and the agreement are of the pages' scope (``_scope``: a time range and a service).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace_collector._agreement import CUT, Agreement
from ragtrace_collector._store.reviews import ANSWER
from ragtrace_collector._triage._layout import e, fmt_time, page
from ragtrace_collector._triage._scope import Scope

__all__ = ["agreement_page", "claim_buttons", "queue_page", "review_section"]


def _verdict(review: dict[str, Any]) -> str:
    word = "right" if review["grounded"] else "wrong"
    who = e(review.get("author") or "someone")
    note = f": “{e(review['note'])}”" if review.get("note") else ""
    chip = "chip" if review["grounded"] else "chip bad"
    return f'<span class="{chip}">{word}</span> by {who}, {e(fmt_time(review["time_ns"]))}{note}'


def claim_buttons(index: int, reviews: Sequence[dict[str, Any]]) -> str:
    """The cell of a claim's row: its review, if any, and the buttons to give one."""
    mine = next((r for r in reviews if r["claim"] == index), None)
    said = _verdict(mine) + "<br>" if mine else ""
    return (
        f'{said}<button type="button" data-grounded="true" data-claim="{index}">right</button> '
        f'<button type="button" data-grounded="false" data-claim="{index}">wrong</button>'
    )


def review_section(span_id: str, reviews: Sequence[dict[str, Any]]) -> str:
    """The record page's review of the whole answer: what people said, and the form to say it."""
    answer = next((r for r in reviews if r["claim"] == ANSWER), None)
    said = f"<p>Reviewed: {_verdict(answer)}</p>" if answer else '<p class="muted">Not reviewed yet.</p>'
    return (
        "<h2>Was the judge right?</h2>"
        '<p class="muted">Say whether the answer is grounded in its chunks (and each claim, in the claims table). '
        'Reviews are labels: exported for <code>ragtrace calibrate</code> at <a href="/api/reviews.jsonl">'
        '/api/reviews.jsonl</a>, and measured against the judge on <a href="/agreement">agreement</a>.</p>'
        f'{said}<form id="review" data-span="{e(span_id)}" class="filters">'
        '<label>your name <input name="author" maxlength="200" autocomplete="name"></label>'
        '<label>note <input name="note" maxlength="1000" size="40"></label>'
        '<button type="button" data-grounded="true" data-claim="">the answer is right</button>'
        '<button type="button" data-grounded="false" data-claim="">the answer is wrong</button>'
        '<span id="review-status" role="status" class="muted"></span></form>'
    )


def queue_page(
    rows: Sequence[dict[str, Any]], since_ns: int, *, scope: Scope | None = None, services: Sequence[str] = ()
) -> str:
    """``/review``: scored records nobody reviewed, the judge's least sure first, in ``scope``."""
    scope = scope or Scope()
    if not rows:
        body = (
            "<h1>Review queue</h1>"
            f'<p class="notice">Nothing to review in {e(scope.describe())}: every record scored since '
            f"{e(fmt_time(since_ns))} has been reviewed, or none was scored. Records appear here once the judge "
            f'scores them; see <a href="{e(scope.link("/records"))}">records</a>.</p>'
        )
        return page("review queue", body, scope=scope, services=services, here="/review")
    items = "".join(
        f'<tr><td><a href="/records/{e(r["span_id"])}{"?" + e(scope.query()) if scope.query() else ""}">'
        f"{e(fmt_time(r['time_ns']))}</a></td><td>{e(r['service'])}</td>"
        f"<td>{e((r['query'] or '')[:160])}</td><td>{r['faithfulness']:.3f}</td><td>{e(r['label'])}</td></tr>"
        for r in rows
    )
    body = (
        "<h1>Review queue</h1>"
        f'<p class="muted">{e(scope.describe())}: scored since {e(fmt_time(since_ns))} and not reviewed, '
        "the judge's least sure first "
        f"(faithfulness nearest its cut, {CUT}). Open one, read its claims and chunks, and say whether the judge was "
        "right.</p>"
        "<table><thead><tr><th>when</th><th>service</th><th>query</th><th>faithfulness</th><th>label</th></tr>"
        f"</thead><tbody>{items}</tbody></table>"
    )
    return page("review queue", body, scope=scope, services=services, here="/review")


def _figure(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return '<span class="muted">needs both kinds</span>'
    spread = f' <span class="muted">[{interval[0]:.2f}, {interval[1]:.2f}]</span>' if interval else ""
    return f"{value:.3f}{spread}"


def _rows(groups: Sequence[Agreement], first: str) -> str:
    return "".join(
        f"<tr><td>{e(label)}</td><td>{e(a.judge)}</td><td>{e(a.service)}</td><td>{a.records}</td>"
        f"<td>{a.grounded}</td><td>{_figure(a.auroc, a.auroc_interval)}</td>"
        f"<td>{_figure(a.balanced_accuracy, a.balanced_interval)}</td></tr>"
        for label, a in ((first if i == 0 else "", a) for i, a in enumerate(groups))
    )


def agreement_page(
    groups: Sequence[Agreement],
    weeks: Sequence[tuple[int, Agreement]],
    *,
    scope: Scope | None = None,
    services: Sequence[str] = (),
) -> str:
    """``/agreement``: the judge against the people who reviewed its records (records of ``scope``)."""
    scope = scope or Scope()
    head = (
        "<table><thead><tr><th></th><th>judge</th><th>service</th><th>reviewed</th><th>said right</th>"
        "<th>AUROC [95 %]</th><th>balanced accuracy at the cut [95 %]</th></tr></thead><tbody>"
    )
    if not groups or groups[0].records == 0:
        body = (
            "<h1>The judge against people</h1>"
            f'<p class="notice">No review yet. (Records of {e(scope.describe())}.) Open a record (the '
            f'<a href="{e(scope.link("/review"))}">review queue</a> lists the ones most worth a look) and say whether '
            "its answer is right: the judge's agreement with people shows here.</p>"
        )
        return page("agreement", body, scope=scope, services=services, here="/agreement")
    by_week = "".join(
        f"<tr><td>{e(fmt_time(week)[:10])}</td><td>all</td><td>all</td><td>{a.records}</td><td>{a.grounded}</td>"
        f"<td>{_figure(a.auroc, a.auroc_interval)}</td>"
        f"<td>{_figure(a.balanced_accuracy, a.balanced_interval)}</td></tr>"
        for week, a in weeks
    )
    body = (
        "<h1>The judge against people</h1>"
        f'<p class="muted">Records of {e(scope.describe())}. Each record a person reviewed as a whole, beside the '
        "judge's faithfulness of it (else one "
        "minus its hallucination). AUROC: how often the judge scores a record people call right above one they call "
        f"wrong (0.5 is chance). Balanced accuracy: how often its verdict at the cut ({CUT}) matches theirs, each "
        "kind weighed alike. Intervals: 95 % bootstrap.</p>"
        f"<h2>Per judge and service</h2>{head}{_rows(groups, 'all reviews')}</tbody></table>"
        f"<h2>Week by week</h2>{head.replace('<th></th>', '<th>week of</th>')}{by_week}</tbody></table>"
    )
    return page("agreement", body, scope=scope, services=services, here="/agreement")
