"""The scorer's OpenTelemetry metric instruments.

Scores go out as metrics too, so Prometheus/Grafana/Datadog users can chart drift and alert on it
without the ragtrace collector: histogram ``gen_ai.evaluation.score`` (attributes
``gen_ai.evaluation.name`` and ``service.name``), and counters of decisions, judge calls, judge
tokens and judge errors. With no MeterProvider configured the API's no-op meter makes all of this free.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from opentelemetry import metrics as metrics_api

from ragtrace import semconv

if TYPE_CHECKING:
    from ragtrace.metrics._base import Cost, Score

_SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Telemetry:
    """Holds the instruments of one scorer; thread-safe (the SDK instruments are).

    ``meter_provider`` defaults to the global one (set by ``configure()`` or by the app).
    ``service_name`` is added to every data point so several services can share one backend series.
    """

    def __init__(
        self,
        meter_provider: metrics_api.MeterProvider | None = None,
        *,
        service_name: str | None = None,
    ) -> None:
        meter = (meter_provider or metrics_api.get_meter_provider()).get_meter(semconv.INSTRUMENTATION_SCOPE)
        self._base: dict[str, str] = {semconv.SERVICE_NAME: service_name} if service_name else {}
        self._scores = meter.create_histogram(
            semconv.METRIC_EVALUATION_SCORE,
            unit="1",
            description="RAG evaluation scores, by metric",
            explicit_bucket_boundaries_advisory=list(_SCORE_BUCKETS),
        )
        self._decisions = meter.create_counter(
            semconv.METRIC_EVAL_DECISIONS,
            unit="{span}",
            description="RAG spans by scoring decision",
        )
        self._calls = meter.create_counter(
            semconv.METRIC_JUDGE_CALLS,
            unit="{call}",
            description="Judge calls made by the background scorer",
        )
        self._tokens = meter.create_counter(
            semconv.METRIC_JUDGE_TOKENS,
            unit="{token}",
            description="Judge tokens spent by the background scorer",
        )
        self._errors = meter.create_counter(
            semconv.METRIC_JUDGE_ERRORS,
            unit="{score}",
            description="Metric scores the judge failed to give, by error type",
        )
        # Precomputed attribute sets: the decision counter runs on the request path.
        self._decision_attrs = {d: {**self._base, semconv.EVAL_DECISION: d} for d in semconv.DECISIONS}
        self._input_attrs = {**self._base, semconv.GEN_AI_TOKEN_TYPE: "input"}
        self._output_attrs = {**self._base, semconv.GEN_AI_TOKEN_TYPE: "output"}

    def decision(self, decision: str) -> None:
        """Count one RAG span's decision."""
        attrs = self._decision_attrs.get(decision) or {**self._base, semconv.EVAL_DECISION: decision}
        self._decisions.add(1, attrs)

    def scores(self, scores: Iterable[Score]) -> None:
        """Record every measured score (absent scores are not data points).

        The histogram's range is [0, 1]: a negative score (``answer_relevancy_embedding`` is a mean of
        cosines, and an answer unrelated to the question scores below 0) is recorded as 0, "not
        relevant", because the SDK drops negative histogram values (with a warning each time) and the
        record would vanish from the metric. The span keeps the exact value.
        """
        for score in scores:
            if score.value is not None:
                value = max(float(score.value), 0.0)
                self._scores.record(value, {**self._base, semconv.GEN_AI_EVALUATION_NAME: score.name})

    def judge_errors(self, scores: Iterable[Score], *, judge: str | None = None) -> None:
        """Count the scores that failed with a judge error, by error type."""
        extra = {semconv.EVAL_JUDGE: judge} if judge else {}
        for score in scores:
            if score.status == "error":
                self._errors.add(1, {**self._base, **extra, semconv.ERROR_TYPE: score.error_type or "judge_error"})

    def cost(self, cost: Cost, *, judge: str | None = None) -> None:
        """Count the judge calls and tokens of one scored record."""
        extra = {semconv.EVAL_JUDGE: judge} if judge else {}
        if cost.calls:
            self._calls.add(cost.calls, {**self._base, **extra})
        if cost.prompt_tokens:
            self._tokens.add(cost.prompt_tokens, {**self._input_attrs, **extra})
        if cost.completion_tokens:
            self._tokens.add(cost.completion_tokens, {**self._output_attrs, **extra})
