"""Score histogram and counters, with the service name, through a real SDK MeterProvider."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import semconv
from ragtrace.metrics._base import Cost, Score
from ragtrace.scoring.telemetry import Telemetry


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            assert sm.scope.name == semconv.INSTRUMENTATION_SCOPE
            for metric in sm.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def test_instruments_record_scores_decisions_calls_and_tokens() -> None:
    reader = InMemoryMetricReader()
    telemetry = Telemetry(MeterProvider(metric_readers=[reader]), service_name="bot")
    telemetry.scores([Score("faithfulness", 0.5), Score("faithfulness", 1.0), Score.absent("recall", "skipped", "r")])
    telemetry.decision(semconv.DECISION_EVALUATED)
    telemetry.decision(semconv.DECISION_NOT_SAMPLED)
    telemetry.decision(semconv.DECISION_NOT_SAMPLED)
    telemetry.cost(Cost(chat_calls=3, embedding_calls=1, prompt_tokens=400, completion_tokens=50), judge="j")
    found = points(reader)
    (hist,) = found[semconv.METRIC_EVALUATION_SCORE]  # the absent score is no data point
    assert dict(hist.attributes) == {semconv.GEN_AI_EVALUATION_NAME: "faithfulness", semconv.SERVICE_NAME: "bot"}
    assert (hist.count, hist.sum) == (2, 1.5)
    decisions = {p.attributes[semconv.EVAL_DECISION]: p.value for p in found[semconv.METRIC_EVAL_DECISIONS]}
    assert decisions == {semconv.DECISION_EVALUATED: 1, semconv.DECISION_NOT_SAMPLED: 2}
    assert [p.value for p in found[semconv.METRIC_JUDGE_CALLS]] == [4]
    tokens = {p.attributes[semconv.GEN_AI_TOKEN_TYPE]: p.value for p in found[semconv.METRIC_JUDGE_TOKENS]}
    assert tokens == {"input": 400, "output": 50}


def test_without_a_meter_provider_it_is_a_no_op() -> None:
    telemetry = Telemetry()  # the API's default (no-op) provider: nothing to assert but no error
    telemetry.scores([Score("faithfulness", 0.5)])
    telemetry.decision(semconv.DECISION_OVERFLOW)
    telemetry.cost(Cost(chat_calls=1))


def test_a_negative_score_is_kept_in_the_histogram_at_zero(recwarn: Any) -> None:
    # A mean of cosines below 0 (an answer unrelated to the question): the SDK drops negative values.
    reader = InMemoryMetricReader()
    telemetry = Telemetry(MeterProvider(metric_readers=[reader]))
    telemetry.scores([Score("answer_relevancy_embedding", -0.12), Score("answer_relevancy_embedding", 0.8)])
    (hist,) = points(reader)[semconv.METRIC_EVALUATION_SCORE]
    assert (hist.count, hist.sum, hist.min) == (2, 0.8, 0.0)
    assert hist.bucket_counts[0] == 1  # the le=0 bucket
    assert len(recwarn) == 0
