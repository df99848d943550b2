"""What scoring moves through the worker: a ``Picked`` span (its record and metrics) and the ``Outcome`` of
scoring it (``outcome_of`` a suite's scores: the wire's attributes and events)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import Event

from ragtrace import wire

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.util.types import AttributeValue

    from ragtrace._cost import Cost
    from ragtrace._record import RagRecord
    from ragtrace.metrics._base import Score as MetricScore


@dataclass(frozen=True, slots=True)
class Picked:
    """One RAG span picked for scoring: what the worker carries (it reads none of it)."""

    span: ReadableSpan
    record: RagRecord
    metrics: tuple[str, ...]
    """The metrics the sampler chose for it."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What scoring one job produced: the decision and the attributes/events for its span."""

    decision: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    events: Sequence[Event] = ()


def outcome_of(scores: Sequence[MetricScore], cost: Cost, judge_name: str, *, content: bool = True) -> Outcome:
    """The decision, attributes and events for a scored span, as ``wire.encode`` writes them (no text of the
    record without ``content``: the span's content was not captured)."""
    encoded = wire.encode(scores, cost, judge_name, content=content)
    now = time.time_ns()
    events = tuple(Event(name, attributes, timestamp=now) for name, attributes in encoded.events)
    return Outcome(encoded.decision, encoded.attributes, events)
