"""Regression tests for defects a review found in the scoring processor and its worker.

Each test names the defect it guards; each failed before its fix.
"""

from __future__ import annotations

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context

from ragtrace import semconv
from ragtrace.testing import FakeJudge
from tests.ragtrace.test_processor import decision, make_rig


def test_judge_steps_run_outside_the_apps_trace_context_and_baggage() -> None:
    # The wake-up the request thread sends to the loop used to carry the request's context into
    # every scoring task: the judge saw the app's span as current and the request's baggage.
    seen: list[tuple[bool, object, object]] = []

    def claims(text: str, question: str | None = None) -> list[str]:
        seen.append(
            (
                trace.get_current_span().get_span_context().is_valid,
                baggage.get_baggage("user"),
                otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY),
            )
        )
        return ["Brasilia is the capital"]

    judge = FakeJudge(
        name="fake:scripted",
        extract_claims=claims,
        verify=lambda claims, chunks: [["supported" for _ in chunks] for _ in claims],
    )
    r = make_rig(metrics=["faithfulness"], judge=judge)
    token = otel_context.attach(baggage.set_baggage("user", "alice"))
    try:
        with r.provider.get_tracer("app").start_as_current_span("http-request"):
            span_id = r.rag()
    finally:
        otel_context.detach(token)
    assert r.processor.force_flush(10_000)
    assert seen == [(False, None, True)]
    assert decision(r.downstream.by_id()[span_id]) == semconv.DECISION_EVALUATED
    r.provider.shutdown()
