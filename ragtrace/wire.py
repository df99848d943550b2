"""Evaluations on the wire: the one codec between ``Score`` objects and span attributes and events (public).

This module is public: the collector reads ragtrace's spans with it, and so can any reader of them (a
backend exporter, a notebook). Its ``__all__`` is the contract; the names it writes are in
``ragtrace.semconv``. ``decode(attributes, events)`` gives, per metric, the ``FIELDS`` it found
(``value``, ``label``, ``reason``, ...); ``decode_scores`` gives ``Score`` objects back; ``encode`` is
what the SDK writes.

Encoding (the in-app processor, the collector's server-side scoring) and decoding (the collector's OTLP
reader) both go through here, so a score means the same thing whoever wrote it:

* per metric, the flat attributes ``ragtrace.eval.<metric>`` (the value), ``.label``, ``.method`` (when
  the metric says how it computed), ``.judge`` (when the judge says which of its tiers decided) and
  ``.reason`` (only when there is no value: why it is absent);
* per metric, one ``gen_ai.evaluation.result`` event with the name, value, label, an explanation (the
  reason stands in for an absent value's explanation) and ``error.type`` on failure; the caller puts it
  on the span and/or sends it as a log record (``ragtrace.scoring.evaluation_logs``);
* per metric ``i`` (in ``scores``' order), OpenInference's ``evaluations.{i}.evaluation.*``: name, score,
  label, explanation and annotator kind (``LLM`` or ``CODE``), so OpenInference-aware backends list them;
* per span, who judged and what it cost (``ragtrace.eval.judge*``), the decision and the seconds spent,
  and ``ragtrace.eval.error.type`` when every metric failed;
* a carrier span (late or server-side scores) adds its OpenInference kind and the target's ids.

Events are returned as ``(name, attributes)`` pairs: the SDK wraps them in ``Event``s, the collector in
protobuf messages. Everything here is pure: no clock, no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ragtrace import semconv
from ragtrace._secrets import scrub
from ragtrace._wire_claims import decode_claims, encode_claims
from ragtrace.metrics._base import DETAIL_CLAIMS, DETAIL_FREE_TEXT, DETAIL_JUDGE, DETAIL_METHOD, REASON_JUDGE_ERROR

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from ragtrace._cost import Cost
    from ragtrace.metrics._base import Score

__all__ = [
    "CLAIMS",
    "FIELDS",
    "MAX_SCORE_MAGNITUDE",
    "Encoded",
    "EventData",
    "annotator_kind",
    "carrier_attributes",
    "decode",
    "decode_scores",
    "encode",
    "eval_key",
    "finished",
]

EventData = tuple[str, dict[str, "AttributeValue"]]
"""One span event as ``(name, attributes)``."""

VALUE: Final = "value"
LABEL: Final = "label"
REASON: Final = "reason"
EXPLANATION: Final = "explanation"
ERROR_TYPE: Final = "error_type"
CLAIMS: Final = "claims"
FIELDS: Final = (VALUE, LABEL, EXPLANATION, REASON, ERROR_TYPE)
"""The fields a decoded score has (the collector's ``scores`` columns); a claim metric's also has
``CLAIMS``, its claims' verdicts as canonical JSON (``_wire_claims.decode_claims``), or None."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """A scored span's decision, the attributes to add and the events to append."""

    decision: str
    attributes: dict[str, AttributeValue]
    events: tuple[EventData, ...]


def encode(scores: Sequence[Score], cost: Cost, judge_name: str, *, content: bool = True) -> Encoded:
    """The decision, attributes and events for a span scored with ``scores`` at ``cost`` by ``judge_name``.

    A claim metric's event also carries its claims' verdicts (``semconv.EVAL_CLAIMS``, bounded;
    ``ragtrace._wire_claims``). Without ``content`` (the span's content was not captured) no text of the
    record goes out: the claims go without their text, and an explanation in the judge's own words
    (``DETAIL_FREE_TEXT``: G-Eval, the answer rating) is left out.

    The decision is ``error`` only when every metric failed with a judge error (scoring failed as a
    whole); a metric that was merely skipped or unmeasured keeps ``evaluated`` with its reason.
    """
    attributes: dict[str, AttributeValue] = {
        semconv.EVAL_JUDGE: judge_name,
        semconv.EVAL_JUDGE_CALLS: cost.calls,
        semconv.EVAL_JUDGE_PROMPT_TOKENS: cost.prompt_tokens,
        semconv.EVAL_JUDGE_COMPLETION_TOKENS: cost.completion_tokens,
    }
    events: list[EventData] = []
    for index, score in enumerate(scores):
        attributes.update(_openinference_evaluation(index, score, judge_name, content))
        event: dict[str, AttributeValue] = {semconv.GEN_AI_EVALUATION_NAME: score.name}
        if score.value is not None:
            attributes[semconv.eval_score(score.name)] = float(score.value)
            event[semconv.GEN_AI_EVALUATION_SCORE_VALUE] = float(score.value)
        if score.label:
            attributes[semconv.eval_label(score.name)] = score.label
            event[semconv.GEN_AI_EVALUATION_SCORE_LABEL] = score.label
        if score.value is None and score.reason:
            attributes[semconv.eval_reason(score.name)] = score.reason
        method = score.details.get(DETAIL_METHOD) if score.details else None
        if isinstance(method, str):
            attributes[semconv.eval_method(score.name)] = method
        tier = score.details.get(DETAIL_JUDGE) if score.details else None
        if isinstance(tier, str):
            attributes[semconv.eval_judge(score.name)] = tier
        explanation = _explanation(score, content)
        if explanation:
            event[semconv.GEN_AI_EVALUATION_EXPLANATION] = explanation
        if score.error_type:
            event[semconv.ERROR_TYPE] = score.error_type
        claims = score.details.get(DETAIL_CLAIMS) if score.details else None
        if claims:
            event[semconv.EVAL_CLAIMS], omitted = encode_claims(claims, text=content)
            if omitted:
                event[semconv.EVAL_CLAIMS_OMITTED] = omitted
        events.append((semconv.GEN_AI_EVALUATION_RESULT, event))
    failed = [s for s in scores if s.status == "error"]
    if scores and len(failed) == len(scores):
        attributes[semconv.EVAL_ERROR_TYPE] = failed[0].error_type or REASON_JUDGE_ERROR
        return Encoded(semconv.DECISION_ERROR, attributes, tuple(events))
    return Encoded(semconv.DECISION_EVALUATED, attributes, tuple(events))


def annotator_kind(judge: str) -> str:
    """OpenInference's annotator kind of a score: ``LLM`` when an LLM judge took part (the OpenAI-compatible
    judge, alone or as a tier: its name contains ``openai:``), else ``CODE`` (computed in process)."""
    return semconv.ANNOTATOR_KIND_LLM if _LLM_JUDGE in judge else semconv.ANNOTATOR_KIND_CODE


_LLM_JUDGE: Final = "openai:"  # the OpenAI-compatible judge's name prefix (judges/openai.py)


def _explanation(score: Score, content: bool) -> str | None:
    """The explanation that goes out: the reason stands in for an absent value's. Without captured content,
    nothing that may quote the record: not the judge's own words, and for an absent score only its reason
    (a failure's message can quote the judge's reply, which echoes the record). Whatever goes is
    ``scrub``-bed: an explanation is text ragtrace did not write all of (a judge's words, a user metric's)."""
    if not content:
        if score.value is None:
            return score.reason
        if score.details and score.details.get(DETAIL_FREE_TEXT):
            return None
    chosen = score.explanation or (score.reason if score.value is None else None)
    return scrub(chosen) if chosen else chosen


def _openinference_evaluation(index: int, score: Score, judge_name: str, content: bool) -> dict[str, AttributeValue]:
    # The same result as the event, in OpenInference's flattened form, for backends that read those.
    tier = score.details.get(DETAIL_JUDGE) if score.details else None
    found: dict[str, AttributeValue] = {
        semconv.evaluation(index, semconv.EVALUATION_NAME): score.name,
        semconv.evaluation(index, semconv.EVALUATION_ANNOTATOR_KIND): annotator_kind(
            tier if isinstance(tier, str) else judge_name
        ),
    }
    if score.value is not None:
        found[semconv.evaluation(index, semconv.EVALUATION_SCORE)] = float(score.value)
    if score.label:
        found[semconv.evaluation(index, semconv.EVALUATION_LABEL)] = score.label
    explanation = _explanation(score, content)
    if explanation:
        found[semconv.evaluation(index, semconv.EVALUATION_EXPLANATION)] = explanation
    return found


def finished(attributes: Mapping[str, AttributeValue], decision: str, seconds: float) -> dict[str, AttributeValue]:
    """``attributes`` with the decision and the seconds scoring took: what a scored span or carrier carries."""
    return {**attributes, semconv.EVAL_DECISION: decision, semconv.EVAL_SECONDS: seconds}


def carrier_attributes(target_span_id: str, target_trace_id: str) -> dict[str, AttributeValue]:
    """What marks a carrier span: OpenInference kind EVALUATOR and the target's hex ids (for backends without links)."""
    return {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_EVALUATOR,
        semconv.EVAL_TARGET_SPAN_ID: target_span_id,
        semconv.EVAL_TARGET_TRACE_ID: target_trace_id,
    }


# -- decoding ----------------------------------------------------------------------------------------

_EVAL_DOT: Final = semconv.EVAL_PREFIX + "."
_RESERVED_EVAL_KEYS: Final = frozenset(
    key[len(_EVAL_DOT) :]
    for key in (
        semconv.EVAL_DECISION,
        semconv.EVAL_ERROR_TYPE,
        semconv.EVAL_JUDGE,
        semconv.EVAL_JUDGE_CALLS,
        semconv.EVAL_JUDGE_PROMPT_TOKENS,
        semconv.EVAL_JUDGE_COMPLETION_TOKENS,
        semconv.EVAL_SECONDS,
        semconv.EVAL_TARGET_SPAN_ID,
        semconv.EVAL_TARGET_TRACE_ID,
        semconv.EVAL_CLAIMS,  # an event attribute, never a metric named "claims"
        semconv.EVAL_NOT_SCORED_REASON,  # why a record was not scored, never a metric named "not_scored"
    )
)
_LABEL_SUFFIX: Final = semconv.eval_label("x")[len(semconv.eval_score("x")) :]
_REASON_SUFFIX: Final = semconv.eval_reason("x")[len(semconv.eval_score("x")) :]


def eval_key(key: str) -> tuple[str, str] | None:
    """``(metric, field)`` for a per-metric score attribute (field ``value``, ``label`` or ``reason``), else None.

    Span-level ``ragtrace.eval.*`` attributes (decision, judge, cost, target) and keys with more dots
    (``.method``) are not scores.
    """
    if not key.startswith(_EVAL_DOT):
        return None
    rest = key[len(_EVAL_DOT) :]
    if not rest or rest in _RESERVED_EVAL_KEYS:
        return None
    for suffix, field_name in ((_LABEL_SUFFIX, LABEL), (_REASON_SUFFIX, REASON), ("", VALUE)):
        metric = rest[: len(rest) - len(suffix)]
        if rest.endswith(suffix) and metric and "." not in metric:
            return metric, field_name
    return None


def _json_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


MAX_SCORE_MAGNITUDE = 1e15
"""A score value beyond +-1e15 is no score on any scale (ragtrace's are in [0, 1], a foreign judge's a count or a
grade): it is read as absent, as NaN and infinity are. Such values are not harmless to keep: a database's AVG
or SUM over two values near 1e308 overflows its double and fails the whole write (PostgreSQL's "value out of
range: overflow"), so one hostile span would cost its batch; a million values of 1e15 sum to 1e21."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and abs(number) <= MAX_SCORE_MAGNITUDE else None


def decode_scores(
    evals: Iterable[tuple[str, str, Any]],
    events: Iterable[Mapping[str, Any]],
    *,
    text: Callable[[Any], str | None] = _json_text,
) -> dict[str, dict[str, Any]]:
    """Scores by metric, from ``gen_ai.evaluation.result`` events first, then flat ``ragtrace.eval.*`` attributes.

    ``evals`` are ``(metric, field, value)`` from ``eval_key``; ``events`` are ``{"name", "attributes"}``.
    ``text`` renders a non-string value as text (the collector passes its faster JSON writer).
    """
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if event["name"] != semconv.GEN_AI_EVALUATION_RESULT:
            continue
        eattrs = event["attributes"]
        name = eattrs.get(semconv.GEN_AI_EVALUATION_NAME)
        if not isinstance(name, str) or not name or "." in name:
            continue
        found[name] = {
            VALUE: _number(eattrs.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)),
            LABEL: text(eattrs.get(semconv.GEN_AI_EVALUATION_SCORE_LABEL)),
            EXPLANATION: text(eattrs.get(semconv.GEN_AI_EVALUATION_EXPLANATION)),
            ERROR_TYPE: text(eattrs.get(semconv.ERROR_TYPE)),
        }
        claims = decode_claims(eattrs.get(semconv.EVAL_CLAIMS))
        if claims:
            found[name][CLAIMS] = json.dumps(claims, ensure_ascii=False, separators=(",", ":"))
    for metric, field_name, value in evals:
        if field_name == VALUE:
            number = _number(value)
            if number is None and metric not in found:
                continue  # not a number: some other ragtrace.eval.* attribute, not a score
            fields = found.setdefault(metric, {})
            if fields.get(VALUE) is None:
                fields[VALUE] = number
        else:
            fields = found.setdefault(metric, {})
            if fields.get(field_name) is None:
                fields[field_name] = text(value)
    return found


def decode(attributes: Mapping[str, Any], events: Iterable[EventData]) -> dict[str, dict[str, Any]]:
    """Scores by metric from a span's attributes and ``(name, attributes)`` events: the inverse of ``encode``."""
    evals = [(*kind, value) for key, value in attributes.items() if (kind := eval_key(key)) is not None]
    return decode_scores(evals, ({"name": name, "attributes": attrs} for name, attrs in events))
