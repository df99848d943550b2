"""One record: the query, the answer with each claim highlighted by its verdict and linked to the chunk
that decided it, the chunks (ids, retrieval scores), every score with its explanation and the judge tier
that produced it, what judging cost, the record's trace as a waterfall with what the app's model calls cost
(``_trace_html``), and the trace id as a link to the user's tracing backend."""

from __future__ import annotations

from typing import Any

from ragtrace import semconv
from ragtrace_collector._store.triage import RecordDetail
from ragtrace_collector._triage._layout import e, fmt_time, page, verdict_class
from ragtrace_collector._triage._review_html import claim_buttons, review_section
from ragtrace_collector._triage._scope import Scope
from ragtrace_collector._triage._trace_html import trace_section

__all__ = ["locate_claims", "record_page"]

_CLAIM_METRICS = ("faithfulness", "hallucination")

_UNSCORED = {
    semconv.DECISION_NOT_SAMPLED: "the sampler did not pick it (RAGTRACE_SAMPLE_RATE, or a sampling rule)",
    semconv.DECISION_THROTTLED: "the per-minute throttle was reached (RAGTRACE_THROTTLE_PER_MINUTE)",
    semconv.DECISION_OVER_BUDGET: "the judge's daily budget was spent (RAGTRACE_BUDGET_*)",
    semconv.DECISION_OVERFLOW: "the scoring queue was full",
    semconv.DECISION_TIMEOUT: "the judge did not answer in time",
    semconv.DECISION_ERROR: "the judge failed (the scores table says how)",
    semconv.DECISION_NOT_SCORED: "there was nothing to score",
}
"""Why a record has no scores, by its decision, in words."""
_NOT_SCORED_REASONS = {
    semconv.NOT_SCORED_NO_CONTENT: "its text was not captured (content capture off, or redacted)",
    semconv.NOT_SCORED_APP_ERROR: "the app's call raised before it answered",
}
"""The metrics whose claims the answer is highlighted with (they share one reading of the claims)."""


def locate_claims(answer: str, claims: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """Where each claim stands in the answer: ``(start, end, claim index)``, sorted, not overlapping.

    A claim is looked up as written, then case-insensitively, then by the part after a question
    (the judges write an answer to a question as "<question>? <answer>"); one not found (rephrased by an
    LLM judge, or without text) is only listed, not highlighted."""
    found: list[tuple[int, int, int]] = []
    lowered = answer.lower()
    for index, claim in enumerate(claims):
        text = claim.get("claim")
        if not isinstance(text, str) or not text.strip():
            continue
        candidates = [text.strip(), text.strip().rstrip(".")]
        if "? " in text:
            candidates.append(text.rsplit("? ", 1)[1].strip().rstrip("."))
        for candidate in candidates:
            if not candidate:
                continue
            start = answer.find(candidate)
            if start < 0:
                start = lowered.find(candidate.lower())
            if start >= 0:
                found.append((start, start + len(candidate), index))
                break
    found.sort()
    kept: list[tuple[int, int, int]] = []
    for start, end, index in found:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, index))
    return kept


def _claim_title(claim: dict[str, Any], n_chunks: int) -> str:
    chunk = claim.get("chunk")
    where = f" by chunk {chunk + 1}" if isinstance(chunk, int) and 0 <= chunk < n_chunks else ""
    support = claim.get("support")
    probability = f" (support {support:.2f})" if isinstance(support, float | int) else ""
    return f"{claim.get('verdict')}{where}{probability}"


def _answer_html(answer: str, claims: list[dict[str, Any]], n_chunks: int) -> str:
    parts: list[str] = []
    at = 0
    for start, end, index in locate_claims(answer, claims):
        claim = claims[index]
        parts.append(e(answer[at:start]))
        chunk = claim.get("chunk")
        target = f"chunk-{chunk}" if isinstance(chunk, int) and 0 <= chunk < n_chunks else f"claim-{index}"
        # The claim's own words stay what a screen reader reads; the verdict follows as hidden text.
        parts.append(
            f'<a class="claim {verdict_class(str(claim.get("verdict")))}" id="answer-claim-{index}" '
            f'href="#{target}" title="{e(_claim_title(claim, n_chunks))}">{e(answer[start:end])}'
            f'<span class="sr-only"> ({e(_claim_title(claim, n_chunks))})</span></a>'
        )
        at = end
    parts.append(e(answer[at:]))
    return "".join(parts)


def _claims_table(claims: list[dict[str, Any]], n_chunks: int, reviews: list[dict[str, Any]]) -> str:
    rows = []
    for index, claim in enumerate(claims):
        chunk = claim.get("chunk")
        chunk_cell = (
            f'<a href="#chunk-{chunk}">chunk {chunk + 1}</a>' if isinstance(chunk, int) and chunk < n_chunks else "none"
        )
        support = claim.get("support")
        verdict = str(claim.get("verdict"))
        rows.append(
            f'<tr id="claim-{index}"><td>{index + 1}</td><td>{e(claim.get("claim") or "(text not captured)")}</td>'
            f'<td><span class="verdict claim {verdict_class(verdict)}">{e(verdict)}</span></td><td>{chunk_cell}</td>'
            f"<td>{'' if support is None else f'{support:.2f}'}</td><td>{claim_buttons(index, reviews)}</td></tr>"
        )
    return (
        "<table><thead><tr><th>#</th><th>claim</th><th>verdict</th><th>decided by</th><th>support</th>"
        "<th>a person says</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _scores_table(scores: list[dict[str, Any]]) -> str:
    if not scores:
        return '<p class="muted">No scores stored for this record.</p>'
    rows = []
    for s in scores:
        value = s.get("value")
        shown = f"{value:.3f}" if isinstance(value, float | int) else e(s.get("reason") or s.get("error_type") or "")
        rows.append(
            f"<tr><td>{e(s['metric'])}</td><td>{shown}</td><td>{e(s.get('label'))}</td>"
            f"<td>{e(s.get('explanation'))}</td><td>{e(s.get('judge'))}</td><td>{e(s.get('source'))}</td></tr>"
        )
    return (
        "<table><thead><tr><th>metric</th><th>value</th><th>label</th><th>explanation</th><th>judge</th>"
        f"<th>scored by</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def record_page(
    detail: RecordDetail, *, back: str = "", trace_url: str | None = None, scope: Scope | None = None
) -> str:
    """The record view; ``back`` is the list's query to return to, ``trace_url`` a template with
    ``{trace_id}`` (and optionally ``{span_id}``) linking to the user's tracing backend, ``scope`` the time range
    and service the navigation's links carry on."""
    r = detail.record
    claims: list[dict[str, Any]] = next(
        (s["claims"] for m in _CLAIM_METRICS for s in detail.scores if s["metric"] == m and s["claims"]), []
    )
    trace = e(r["trace_id"])
    if trace_url and r.get("trace_id"):
        link = trace_url.replace("{trace_id}", str(r["trace_id"])).replace("{span_id}", str(r["span_id"]))
        trace = f'<a href="{e(link)}">{trace}</a>'
    chunks = "".join(
        f'<li id="chunk-{k}"><b>chunk {k + 1}</b> <span class="muted">id {e(c.get("id") or "-")}, retrieval score '
        f"{e(c.get('score') if c.get('score') is not None else '-')}</span><br>{e(c.get('content'))}</li>"
        for k, c in enumerate(detail.chunks)
    )
    seconds = r.get("seconds")
    cost = (
        f"judge {e(r.get('judge') or '-')}: {e(r.get('calls') or 0)} call(s), "
        f"{e(r.get('prompt_tokens') or 0)} prompt and {e(r.get('completion_tokens') or 0)} completion tokens, "
        f"{'-' if seconds is None else f'{seconds:.2f}'} s"
    )
    legend = (
        '<p class="muted">Claims: <span class="claim v-supported">supported</span> '
        '<span class="claim v-contradicted">contradicted</span> <span class="claim v-unsupported">unsupported</span>; '
        "each links to the chunk that decided it.</p>"
        if claims
        else ""
    )
    answer = (
        f'<div class="answer" id="answer">{_answer_html(str(r["answer"]), claims, len(detail.chunks))}</div>'
        if r["answer"]
        else '<p class="muted" id="answer">No answer was captured (content capture off, redacted, or the call '
        "failed first).</p>"
    )
    unscored = ""
    if r["decision"] != semconv.DECISION_EVALUATED:
        why = _UNSCORED.get(str(r["decision"]), "it has no decision yet: the collector scores it when it picks it")
        if r["decision"] == semconv.DECISION_NOT_SCORED and r.get("reason"):
            why = _NOT_SCORED_REASONS.get(str(r["reason"]), f"{why} ({r['reason']})")
        unscored = f'<p class="notice">Not scored: {e(why)}.</p>'
    body = (
        f'<p><a href="/records{"?" + e(back) if back else ""}">← records</a></p>'
        f"<h1>Record {e(r['span_id'])}</h1>"
        f'<p class="muted">{e(fmt_time(r["time_ns"]))} · service {e(r["service"])} · {e(r["route"])} · '
        f"decision {e(r['decision'])} · trace {trace}</p>"
        f"<h2>Query</h2><p>{e(r['query'])}</p>"
        + unscored
        + f"<h2>Answer</h2>{legend}{answer}"
        + (f"<h2>Claims</h2>{_claims_table(claims, len(detail.chunks), detail.reviews)}" if claims else "")
        + f'<h2>Scores</h2>{_scores_table(detail.scores)}<p class="muted">{cost}</p>'
        + review_section(str(r["span_id"]), detail.reviews)
        + trace_section(detail.trace, r, cut=detail.trace_cut)
        + f'<h2>Chunks</h2><ol class="chunks">{chunks}</ol>'
    )
    return page(f"record {r['span_id']}", body, scope=scope, scripts=("review.js",))
