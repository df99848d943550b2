"""The record's trace beside its scores: every stored span of the trace as a waterfall (name, kind, when it ran
and for how long, its status; its attributes on opening it), and the app's own LLM calls with their model, tokens
and cost, next to what the judge spent on the record.

Drawn by ``templates/trace.html`` in HTML and CSS alone (``<details>`` opens a span; bars are positioned boxes): no
script, so it works under the pages' Content-Security-Policy and without the network. Costs are priced by ``_prices``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace import semconv
from ragtrace_collector._triage._prices import Price, cost, money, price_of, price_table
from ragtrace_collector._triage._templates import render

__all__ = ["LlmCall", "llm_calls", "trace_section"]

_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
"""OTLP ``Span.SpanKind`` by its number."""
_STATUS_ERROR = 2
_ATTRIBUTES_SHOWN = 40
_VALUE_CHARS = 300


@dataclass(frozen=True, slots=True)
class LlmCall:
    """One span of the app that called a model: its model, tokens and what they cost (None: no price known)."""

    span_id: str
    name: str
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    usd: float | None


def _tokens(attributes: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return int(value)
    return None


def llm_calls(spans: Sequence[Mapping[str, Any]], prices: Mapping[str, Price]) -> list[LlmCall]:
    """The spans that say how many tokens a model call took (the GenAI conventions' ``gen_ai.usage.*`` or
    OpenInference's ``llm.token_count.*``), first started first."""
    calls = []
    for span in spans:
        attributes = span["attributes"]
        prompt = _tokens(attributes, semconv.GEN_AI_USAGE_INPUT_TOKENS, semconv.LLM_TOKEN_COUNT_PROMPT)
        completion = _tokens(attributes, semconv.GEN_AI_USAGE_OUTPUT_TOKENS, semconv.LLM_TOKEN_COUNT_COMPLETION)
        if prompt is None and completion is None:
            continue
        model = next(
            (
                str(attributes[key])
                for key in (semconv.GEN_AI_RESPONSE_MODEL, semconv.GEN_AI_REQUEST_MODEL, semconv.LLM_MODEL_NAME)
                if attributes.get(key)
            ),
            None,
        )
        price = price_of(model, prices)
        usd = price.cost(prompt or 0, completion or 0) if price is not None else None
        calls.append(LlmCall(str(span["span_id"]), str(span["name"]), model, prompt or 0, completion or 0, usd))
    return calls


def _ordered(spans: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int]]:
    """The spans as a tree, parents before their children, siblings by start: ``(span, depth)``. A span whose
    parent is not stored (not arrived, or cut) starts a tree of its own, and so does the first of spans that are
    each other's ancestors (hostile input): every span is shown once."""
    ids = {span["span_id"] for span in spans}
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for span in spans:
        parent = span["parent_span_id"] if span["parent_span_id"] in ids else None
        children.setdefault(parent, []).append(span)
    ordered: list[tuple[Mapping[str, Any], int]] = []
    seen: set[str] = set()
    for top in [*children.get(None, []), *spans]:  # the roots, then whatever no root reaches (a cycle)
        stack = [(top, 0)]
        while stack:
            span, depth = stack.pop()
            if span["span_id"] in seen:
                continue
            seen.add(span["span_id"])
            ordered.append((span, depth))
            stack.extend((child, depth + 1) for child in reversed(children.get(span["span_id"], [])))
    return ordered


def _duration(ns: int) -> str:
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.0f} µs"


def _short(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _VALUE_CHARS else text[:_VALUE_CHARS] + "…"


def _waterfall(spans: Sequence[Mapping[str, Any]], focus: str) -> list[dict[str, Any]]:
    """Each span's row: parents before children, its bar's place and width in percent of the trace."""
    starts = [int(s["start_ns"] or 0) for s in spans]
    ends = [int(s["end_ns"] or s["start_ns"] or 0) for s in spans]
    first, last = min(starts), max(ends)
    width = max(last - first, 1)
    rows = []
    for span, depth in _ordered(spans):
        start = int(span["start_ns"] or first)
        end = max(int(span["end_ns"] or start), start)
        left = 100 * (start - first) / width
        share = max(100 * (end - start) / width, 0.4)  # a zero-length span still shows as a tick
        attributes = sorted(span["attributes"].items())
        rows.append(
            {
                "span_id": span["span_id"],
                "name": span["name"],
                "service": span["service"],
                "focus": span["span_id"] == focus,
                "indent": f"{depth * 1.1:.1f}",
                "kind": span["attributes"].get(semconv.OPENINFERENCE_SPAN_KIND) or _KINDS.get(span["kind"], ""),
                # The grid's cells stay the same on every row: the error's word in the kind cell, its message inside.
                "error": span["status_code"] == _STATUS_ERROR,
                "status_message": span["status_message"] or "",
                "left": f"{left:.2f}",
                "width": f"{min(share, 100 - left):.2f}",
                "duration": _duration(end - start),
                "offset": _duration(start - first),
                "attributes": [(key, _short(value)) for key, value in attributes[:_ATTRIBUTES_SHOWN]],
                "more": max(len(attributes) - _ATTRIBUTES_SHOWN, 0),
            }
        )
    return rows


def _calls(calls: Sequence[LlmCall], judge: Mapping[str, Any], prices: Mapping[str, Price]) -> dict[str, Any]:
    """The cost table's figures: the app's calls, their total, and the judge's."""
    priced = [c.usd for c in calls if c.usd is not None]
    judge_name = str(judge.get("judge") or "")
    judge_prompt, judge_completion = int(judge.get("prompt_tokens") or 0), int(judge.get("completion_tokens") or 0)
    return {
        "rows": [
            {
                "span_id": c.span_id,
                "name": c.name,
                "model": c.model,
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "usd": money(c.usd),
            }
            for c in calls
        ],
        "prompt": sum(c.prompt_tokens for c in calls),
        "completion": sum(c.completion_tokens for c in calls),
        "usd": money(sum(priced) if priced else None),
        "all_priced": len(priced) == len(calls),
        "judge": judge_name,
        "judge_calls": int(judge.get("calls") or 0),
        "judge_prompt": judge_prompt,
        "judge_completion": judge_completion,
        "judge_usd": money(cost(judge_name, judge_prompt, judge_completion, prices)),
    }


def trace_section(
    spans: Sequence[Mapping[str, Any]],
    record: Mapping[str, Any],
    *,
    cut: bool,
    prices: Mapping[str, Price] | None = None,
) -> str:
    """The trace and cost sections of the record page (``templates/trace.html``), or a line saying the trace's spans
    are not stored."""
    if not spans:
        return render("trace.html", t=None)
    table = price_table() if prices is None else prices
    total = max(int(s["end_ns"] or 0) for s in spans) - min(int(s["start_ns"] or 0) for s in spans)
    calls = llm_calls(spans, table)
    return render(
        "trace.html",
        t={
            "count": len(spans),
            "total": _duration(max(total, 0)),
            "cut": cut,
            "rows": _waterfall(spans, str(record["span_id"])),
            "calls": _calls(calls, record, table) if calls or record.get("prompt_tokens") else None,
        },
    )
