"""The values every metric returns and the Protocol every metric satisfies.

A metric turns a ``RagRecord`` into a ``Score`` by asking a ``Judge`` for steps (extract claims,
verify them, rate chunks, ...). A score that could not be measured has ``value=None`` and a
``reason``: never NaN, never a made-up 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ragtrace._cost import ZERO_COST as ZERO_COST  # re-exported: metrics and apps import them from here
from ragtrace._cost import Cost as Cost
from ragtrace.judges._base import UNPARSEABLE_REPLY

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

Direction = Literal["higher", "lower"]
"""Which way is better for a metric's value."""

Status = Literal["ok", "skipped", "unmeasured", "error"]
"""``ok``: measured. ``skipped``: an input or judge capability it needs is missing.
``unmeasured``: nothing to measure (no claims, no chunks). ``error``: the judge failed."""

# Reasons a score is absent. Low-cardinality strings, safe as attribute values.
REASON_NEEDS_REFERENCE = "needs_reference"
REASON_NO_CLAIMS = "no_claims"
REASON_NO_CHUNKS = "no_chunks"
REASON_NO_ANSWER = "no_answer"
REASON_NO_QUERY = "no_query"
REASON_JUDGE_LACKS_CAPABILITY = "judge_lacks_capability"
REASON_JUDGE_ERROR = "judge_error"
REASON_UNPARSEABLE = UNPARSEABLE_REPLY
REASON_NOT_FINITE = "not_finite"

# Keys of ``Score.details`` that exporters read.
DETAIL_JUDGE = "judge"
"""``Score.details[DETAIL_JUDGE]``: the judge (tier) whose steps decided the score, when a judge says so
(the tiered judge does; exported as ``semconv.eval_judge(name)``)."""

DETAIL_METHOD = "method"
"""``Score.details[DETAIL_METHOD]``: how the metric was computed when there is more than one way
(exported as ``semconv.eval_method(name)``)."""

DETAIL_CLAIMS = "claim_verdicts"
"""``Score.details[DETAIL_CLAIMS]``: a claim metric's ``ClaimVerdict``s, one per claim in the answer's order
(faithfulness, hallucination; exported on the evaluation event as ``semconv.EVAL_CLAIMS``)."""

DETAIL_FREE_TEXT = "free_text"
"""``Score.details[DETAIL_FREE_TEXT]``: True when the explanation is the judge's own words (G-Eval, the
answer rating), which may quote the record; left off the wire when the span's content was not captured."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Score:
    """One metric's result for one record.

    ``value`` is in [0, 1] (cosine-based metrics may be negative) or ``None`` when not measured, in
    which case ``status`` and ``reason`` say why and ``error_type`` names a failure class.
    ``details`` holds extras worth exporting (per-chunk ratings, counts, the method used).
    """

    name: str
    value: float | None
    direction: Direction = "higher"
    label: str | None = None
    explanation: str | None = None
    status: Status = "ok"
    reason: str | None = None
    error_type: str | None = None
    cost: Cost = ZERO_COST
    details: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @property
    def ok(self) -> bool:
        """True when the metric produced a value."""
        return self.status == "ok" and self.value is not None

    @classmethod
    def absent(
        cls,
        name: str,
        status: Status,
        reason: str,
        *,
        direction: Direction = "higher",
        explanation: str | None = None,
        error_type: str | None = None,
        cost: Cost = ZERO_COST,
    ) -> Score:
        """A score that could not be measured, with the reason (never NaN, never a made-up 0)."""
        return cls(
            name=name,
            value=None,
            direction=direction,
            status=status,
            reason=reason,
            explanation=explanation,
            error_type=error_type,
            cost=cost,
        )


@runtime_checkable
class Metric(Protocol):
    """A metric: a name, a direction, what it needs, and an async ``score``.

    ``needs`` lists record inputs beyond query/answer that the metric requires (``"reference"``,
    ``"chunks"``); ``capabilities`` lists the judge steps it calls (see ``ragtrace.judges``). A metric
    never raises for a judge failure or missing input: it returns an absent ``Score`` with a reason.
    """

    name: str
    direction: Direction
    needs: frozenset[str]
    capabilities: frozenset[str]

    async def score(self, record: RagRecord, judge: Judge) -> Score:
        """Score one record with the judge's steps."""
        ...
