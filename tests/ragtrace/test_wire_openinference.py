"""Scores as OpenInference evaluations (``evaluations.{i}.evaluation.*``), written by the one codec."""

from __future__ import annotations

from openinference.semconv.trace import EvaluationAttributes, OpenInferenceAnnotatorKindValues, SpanAttributes

import ragtrace
from ragtrace import semconv, wire
from ragtrace.metrics import Cost, Score
from ragtrace.metrics._base import DETAIL_JUDGE, REASON_NEEDS_REFERENCE
from ragtrace.testing import FakeJudge, capture

SCORES = [
    Score("faithfulness", 0.75, label="faithful", explanation="3 of 4 claims supported"),
    Score.absent("context_recall", "skipped", REASON_NEEDS_REFERENCE),
    Score("hallucination", 0.0, details={DETAIL_JUDGE: "offline:minilm-int8"}),
]


def _flat(index: int, field: str) -> str:
    # Spelled from OpenInference's own package, not from ragtrace.semconv.
    return f"{SpanAttributes.EVALUATIONS}.{index}.{field}"


def test_each_score_is_an_openinference_evaluation_in_order() -> None:
    attributes = wire.encode(SCORES, Cost(chat_calls=1), "openai:gpt-4o-mini").attributes
    llm = OpenInferenceAnnotatorKindValues.LLM.value
    assert attributes[_flat(0, EvaluationAttributes.EVALUATION_NAME)] == "faithfulness"
    assert attributes[_flat(0, EvaluationAttributes.EVALUATION_SCORE)] == 0.75
    assert attributes[_flat(0, EvaluationAttributes.EVALUATION_LABEL)] == "faithful"
    assert attributes[_flat(0, EvaluationAttributes.EVALUATION_EXPLANATION)] == "3 of 4 claims supported"
    assert attributes[_flat(0, EvaluationAttributes.EVALUATION_ANNOTATOR_KIND)] == llm
    # An absent score: no score, and the reason stands in for the explanation, as on the event.
    assert attributes[_flat(1, EvaluationAttributes.EVALUATION_NAME)] == "context_recall"
    assert _flat(1, EvaluationAttributes.EVALUATION_SCORE) not in attributes
    assert attributes[_flat(1, EvaluationAttributes.EVALUATION_EXPLANATION)] == REASON_NEEDS_REFERENCE
    # A tier that decided in process is CODE, whoever the judge as a whole is.
    code = OpenInferenceAnnotatorKindValues.CODE.value
    assert attributes[_flat(2, EvaluationAttributes.EVALUATION_ANNOTATOR_KIND)] == code
    assert attributes[_flat(2, EvaluationAttributes.EVALUATION_SCORE)] == 0.0


def test_the_decoder_reads_the_same_scores_with_the_evaluations_beside_them() -> None:
    encoded = wire.encode(SCORES, Cost(chat_calls=1), "offline:minilm-int8")
    decoded = wire.decode(encoded.attributes, encoded.events)
    assert set(decoded) == {"faithfulness", "context_recall", "hallucination"}
    assert decoded["faithfulness"]["value"] == 0.75


def test_a_scored_span_carries_its_evaluations() -> None:
    judge = FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])
    with capture(judge, metrics=["faithfulness"]) as captured:

        @ragtrace.rag
        def ask(question: str) -> str:
            ragtrace.record(chunks=["Paris is the capital of France."])
            return "Paris is the capital of France."

        ask("What is the capital of France?")
        [span] = captured.rag_spans()
    attributes = span.attributes or {}
    assert attributes[semconv.evaluation(0, semconv.EVALUATION_NAME)] == "faithfulness"
    assert attributes[semconv.evaluation(0, semconv.EVALUATION_SCORE)] == attributes[semconv.eval_score("faithfulness")]
    assert attributes[semconv.evaluation(0, semconv.EVALUATION_ANNOTATOR_KIND)] == semconv.ANNOTATOR_KIND_CODE
