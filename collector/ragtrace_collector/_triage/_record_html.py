"""One record: the query, the answer with each claim highlighted by its verdict and linked to the chunk
that decided it, the chunks (ids, retrieval scores), every score with its explanation and the judge tier
that produced it, what judging cost, the record's trace as a waterfall with what the app's model calls cost
(``_trace_html``), and the trace id as a link to the user's tracing backend."""

from __future__ import annotations

from typing import Any

from ragtrace import semconv
from ragtrace_collector._store.reviews import ANSWER
from ragtrace_collector._store.triage import RecordDetail
from ragtrace_collector._triage._layout import verdict_class
from ragtrace_collector._triage._scope import Scope
from ragtrace_collector._triage._templates import Markup, render_page
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


def _answer_parts(answer: str, claims: list[dict[str, Any]], n_chunks: int) -> list[dict[str, Any]]:
    """The answer cut at its claims: plain text (``claim`` None), and each claim found in it with its verdict, the
    chunk it links to and its title (the claim's own words stay what a screen reader reads; the verdict follows as
    hidden text)."""
    parts: list[dict[str, Any]] = []
    at = 0
    for start, end, index in locate_claims(answer, claims):
        claim = claims[index]
        parts.append({"text": answer[at:start], "claim": None})
        chunk = claim.get("chunk")
        parts.append(
            {
                "text": answer[start:end],
                "claim": index,
                "verdict_class": verdict_class(str(claim.get("verdict"))),
                "target": f"chunk-{chunk}" if isinstance(chunk, int) and 0 <= chunk < n_chunks else f"claim-{index}",
                "title": _claim_title(claim, n_chunks),
            }
        )
        at = end
    parts.append({"text": answer[at:], "claim": None})
    return parts


def _claim_rows(claims: list[dict[str, Any]], n_chunks: int, reviews: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for index, claim in enumerate(claims):
        chunk = claim.get("chunk")
        verdict = str(claim.get("verdict"))
        rows.append(
            {
                "index": index,
                "text": claim.get("claim") or "(text not captured)",
                "verdict": verdict,
                "verdict_class": verdict_class(verdict),
                "chunk": chunk if isinstance(chunk, int) and chunk < n_chunks else None,
                "support": claim.get("support"),
                "review": next((r for r in reviews if r["claim"] == index), None),
            }
        )
    return rows


def record_page(
    detail: RecordDetail, *, back: str = "", trace_url: str | None = None, scope: Scope | None = None
) -> str:
    """The record view (``templates/record.html``); ``back`` is the list's query to return to, ``trace_url`` a
    template with ``{trace_id}`` (and optionally ``{span_id}``) linking to the user's tracing backend, ``scope`` the
    time range and service the navigation's links carry on."""
    r = detail.record
    claims: list[dict[str, Any]] = next(
        (s["claims"] for m in _CLAIM_METRICS for s in detail.scores if s["metric"] == m and s["claims"]), []
    )
    link = None
    if trace_url and r.get("trace_id"):
        link = trace_url.replace("{trace_id}", str(r["trace_id"])).replace("{span_id}", str(r["span_id"]))
    unscored = None
    if r["decision"] != semconv.DECISION_EVALUATED:
        unscored = _UNSCORED.get(str(r["decision"]), "it has no decision yet: the collector scores it when it picks it")
        if r["decision"] == semconv.DECISION_NOT_SCORED and r.get("reason"):
            unscored = _NOT_SCORED_REASONS.get(str(r["reason"]), f"{unscored} ({r['reason']})")
    return render_page(
        "record.html",
        title=f"record {r['span_id']}",
        scope=scope,
        scripts=("review.js",),
        r=r,
        back=back,
        trace_link=link,
        unscored=unscored,
        answer=_answer_parts(str(r["answer"]), claims, len(detail.chunks)) if r["answer"] else [],
        claims=_claim_rows(claims, len(detail.chunks), detail.reviews),
        scores=detail.scores,
        answer_review=next((v for v in detail.reviews if v["claim"] == ANSWER), None),
        trace=Markup(trace_section(detail.trace, r, cut=detail.trace_cut)),  # the trace template's HTML
        chunks=detail.chunks,
    )
