"""Claims on the wire: a claim metric's per-claim verdicts on its evaluation event, bounded, without the
claims' text when the span's content was not captured, and read back safely by the collector's decoder."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ragtrace
from ragtrace import semconv, wire
from ragtrace._cost import Cost
from ragtrace._wire_claims import MAX_CLAIM_CHARS, MAX_CLAIMS, decode_claims, encode_claims
from ragtrace.metrics import DETAIL_CLAIMS, ClaimVerdict, Score
from ragtrace.testing import FakeJudge, capture

CHUNKS = ["Paris is the capital of France.", "The Seine flows through Paris."]
ANSWER = "Paris is the capital of France. It has ten million cats. Lyon is the capital."
CLAIMS = ["Paris is the capital of France.", "It has ten million cats.", "Lyon is the capital."]


def _judge() -> FakeJudge:
    return FakeJudge(
        extract_claims=lambda text, question=None: CLAIMS,
        verify={CLAIMS[0]: ["supported", "neither"], CLAIMS[1]: "neither", CLAIMS[2]: ["contradicted", "neither"]},
        support={CLAIMS[0]: [0.93, 0.2], CLAIMS[1]: [0.1, 0.05], CLAIMS[2]: [0.02, 0.1]},
    )


def _event_claims(span: Any, metric: str) -> list[dict[str, Any]]:
    (event,) = [
        e
        for e in span.events
        if e.name == semconv.GEN_AI_EVALUATION_RESULT and e.attributes[semconv.GEN_AI_EVALUATION_NAME] == metric
    ]
    claims: list[dict[str, Any]] = json.loads(event.attributes[semconv.EVAL_CLAIMS])
    return claims


def _scored(**options: Any) -> Any:
    with capture(_judge(), metrics=["faithfulness", "hallucination"], **options) as captured:

        @ragtrace.rag
        def ask(question: str) -> str:
            ragtrace.record(chunks=CHUNKS)
            return ANSWER

        ask("Tell me about Paris.")
        [span] = captured.rag_spans()
    return span


def test_each_claim_goes_out_with_its_verdict_deciding_chunk_and_probability() -> None:
    span = _scored()
    expected = [
        {"claim": CLAIMS[0], "verdict": "supported", "chunk": 0, "support": 0.93},
        {"claim": CLAIMS[1], "verdict": "unsupported", "chunk": None, "support": 0.1},
        {"claim": CLAIMS[2], "verdict": "contradicted", "chunk": 0, "support": 0.1},
    ]
    assert _event_claims(span, "faithfulness") == expected
    assert _event_claims(span, "hallucination") == expected
    # And the collector's decoder reads them back as the same entries.
    attributes = dict(span.attributes)
    events = [(e.name, dict(e.attributes)) for e in span.events]
    decoded = wire.decode(attributes, events)
    assert json.loads(decoded["faithfulness"][wire.CLAIMS]) == expected


def test_without_captured_content_the_claims_go_without_their_text() -> None:
    span = _scored(capture_content=False)
    assert span.attributes[semconv.RAGTRACE_CONTENT_CAPTURED] is False
    claims = _event_claims(span, "faithfulness")
    assert [c["verdict"] for c in claims] == ["supported", "unsupported", "contradicted"]
    assert all("claim" not in c for c in claims)
    assert "Paris" not in json.dumps([dict(e.attributes) for e in span.events])


def _score_with(verdicts: tuple[ClaimVerdict, ...]) -> Score:
    return Score(name="faithfulness", value=0.5, direction="higher", details={DETAIL_CLAIMS: verdicts})


def test_the_claims_on_an_event_are_bounded() -> None:
    many = tuple(ClaimVerdict(f"claim {i} " + "x" * 400, "supported", 0, 0.9) for i in range(MAX_CLAIMS + 5))
    encoded = wire.encode([_score_with(many)], Cost(), "fake")
    (_, event) = encoded.events[0]
    claims = json.loads(str(event[semconv.EVAL_CLAIMS]))
    assert len(claims) == MAX_CLAIMS and event[semconv.EVAL_CLAIMS_OMITTED] == 5
    assert all(len(c["claim"]) == MAX_CLAIM_CHARS and c["claim"].endswith("…") for c in claims)
    assert claims[0]["claim"].startswith("claim 0 ")
    few = wire.encode([_score_with(many[:2])], Cost(), "fake").events[0][1]
    assert semconv.EVAL_CLAIMS_OMITTED not in few


def test_a_score_without_claims_adds_nothing() -> None:
    (_, event) = wire.encode([_score_with(())], Cost(), "fake").events[0]
    assert semconv.EVAL_CLAIMS not in event
    assert wire.decode({}, [(semconv.GEN_AI_EVALUATION_RESULT, {semconv.GEN_AI_EVALUATION_NAME: "x"})]) == {
        "x": {"value": None, "label": None, "explanation": None, "error_type": None}
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("not json", None),
        ('{"claim": "a"}', None),
        (
            '[{"claim": "a", "verdict": "supported", "chunk": 1, "support": 0.5}, {"verdict": "maybe"}, 7]',
            [{"claim": "a", "verdict": "supported", "chunk": 1, "support": 0.5}],
        ),
        (
            [{"claim": 3, "verdict": "unsupported", "chunk": -1, "support": 1.5}],
            [{"claim": None, "verdict": "unsupported", "chunk": None, "support": None}],
        ),
        ([{"verdict": "contradicted", "chunk": True, "support": float("nan")}], [
            {"claim": None, "verdict": "contradicted", "chunk": None, "support": None}
        ]),
    ],
)  # fmt: skip
def test_decoding_keeps_only_well_formed_entries(value: Any, expected: Any) -> None:
    assert decode_claims(value) == expected


def test_encoding_without_text_round_trips() -> None:
    text, omitted = encode_claims((ClaimVerdict("secret words", "unsupported", None, None),), text=False)
    assert omitted == 0 and "secret" not in text
    assert decode_claims(text) == [{"claim": None, "verdict": "unsupported", "chunk": None, "support": None}]


def test_a_lone_surrogate_or_deep_nesting_cannot_fail_an_export() -> None:
    # Plain ASCII on the wire that decodes to a lone surrogate: stored text must still be valid UTF-8.
    event = {
        semconv.GEN_AI_EVALUATION_NAME: "faithfulness",
        semconv.EVAL_CLAIMS: '[{"verdict":"supported","claim":"a\\ud800b"}]',
    }
    decoded = wire.decode({}, [(semconv.GEN_AI_EVALUATION_RESULT, event)])
    decoded["faithfulness"][wire.CLAIMS].encode("utf-8")  # raises on a surrogate
    assert json.loads(decoded["faithfulness"][wire.CLAIMS])[0]["claim"].startswith("a")
    assert decode_claims("[" * 100_000) is None
    text, _ = encode_claims((ClaimVerdict("x\ud800y", "supported", 0, 0.9),), text=True)
    text.encode("utf-8")


def test_a_judges_own_words_stay_home_when_the_content_was_not_captured() -> None:
    from ragtrace.metrics._base import DETAIL_FREE_TEXT

    quoted = Score(
        name="rag_fact_checker", value=0.2, direction="higher", explanation="The answer says Paris is in Spain.",
        details={DETAIL_FREE_TEXT: True},
    )  # fmt: skip
    counted = Score(name="faithfulness", value=0.5, direction="higher", explanation="1 of 2 claims supported")
    closed = wire.encode([quoted, counted], Cost(), "openai:m", content=False)
    assert "Paris" not in json.dumps([dict(closed.attributes), [dict(a) for _, a in closed.events]], default=str)
    assert closed.events[1][1][semconv.GEN_AI_EVALUATION_EXPLANATION] == "1 of 2 claims supported"  # counts only
    opened = wire.encode([quoted], Cost(), "openai:m", content=True)
    assert opened.events[0][1][semconv.GEN_AI_EVALUATION_EXPLANATION] == "The answer says Paris is in Spain."


@pytest.mark.parametrize(
    ("attributes", "captured"),
    [
        ({semconv.RAGTRACE_CONTENT_CAPTURED: True}, True),
        ({semconv.RAGTRACE_CONTENT_CAPTURED: False, semconv.OUTPUT_VALUE: "x"}, False),
        ({semconv.OUTPUT_VALUE: "the answer"}, True),  # another instrumentation's span holding the answer
        ({}, False),  # nothing says so: closed
    ],
)
def test_content_counts_as_captured_only_when_the_span_says_or_shows_so(attributes: Any, captured: bool) -> None:
    from ragtrace.scoring.scorer import content_captured

    assert content_captured(attributes) is captured


def test_without_captured_content_a_failure_says_only_its_reason() -> None:
    failed = Score(
        name="faithfulness", value=None, direction="higher", status="error", reason="unparseable_reply",
        error_type="unparseable_reply", explanation="unparseable_reply: no JSON object in reply: 'Paris is in Spain'",
    )  # fmt: skip
    (_, event) = wire.encode([failed], Cost(), "openai:m", content=False).events[0]
    assert event[semconv.GEN_AI_EVALUATION_EXPLANATION] == "unparseable_reply"
    (_, shown) = wire.encode([failed], Cost(), "openai:m", content=True).events[0]
    assert "Spain" in str(shown[semconv.GEN_AI_EVALUATION_EXPLANATION])


def test_a_redacted_answer_is_not_captured_content_and_rounding_keeps_the_side_of_the_cut() -> None:
    from ragtrace.scoring.scorer import content_captured

    assert not content_captured({semconv.OUTPUT_VALUE: semconv.OPENINFERENCE_REDACTED})
    import math

    below = math.nextafter(0.5, 0.0)
    text, _ = encode_claims(
        (ClaimVerdict("c", "unsupported", None, below), ClaimVerdict("d", "supported", 0, 0.5)), text=False
    )
    assert [c["support"] for c in json.loads(text)] == [0.4999, 0.5]
