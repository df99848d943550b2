"""What the worker moves: a ``Job`` (a RAG span held for scoring), the ``Outcome`` of scoring it (``outcome_of``
a suite's scores), the ``Score`` callable that produces one, and ``wait_seconds`` that makes any time budget
safe to wait on."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import Event

from ragtrace import _wire

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.util.types import AttributeValue

    from ragtrace._cost import Cost
    from ragtrace._record import RagRecord
    from ragtrace.metrics._base import Score as MetricScore


@dataclass(eq=False, slots=True)
class Job:
    """One RAG span held for scoring, with its record and the metrics the sampler chose."""

    span: ReadableSpan
    record: RagRecord
    metrics: tuple[str, ...]
    deadline: float
    """``time.monotonic()`` past which the span goes out unscored."""
    late: bool = False
    """Set when the original went out at its deadline while scoring went on."""
    queued: bool = True
    """True while the job counts against ``queue_size`` (submitted, not yet started, expired or abandoned)."""
    finished: bool = False
    """Set when no more work will be done for the job (scored, failed, expired or cancelled)."""
    task: asyncio.Task[None] | None = None
    timer: asyncio.TimerHandle | None = None
    started_ns: int = 0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What scoring one job produced: the decision and the attributes/events for its span."""

    decision: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    events: Sequence[Event] = ()


Score = Callable[[Job], Awaitable[Outcome]]
"""Scores one job; may raise (the worker turns an exception into decision ``error``)."""


def wait_seconds(seconds: float) -> float:
    """A time budget made safe to wait on: NaN or negative -> 0, at most ``threading.TIMEOUT_MAX``.

    A longer wait (``inf``, ``1e12`` s) makes ``Future.result``/``Thread.join`` raise OverflowError, which
    would escape from ``shutdown`` or ``force_flush`` with the queued spans never exported.
    """
    if not seconds > 0:
        return 0.0
    return min(float(seconds), threading.TIMEOUT_MAX)


def outcome_of(scores: Sequence[MetricScore], cost: Cost, judge_name: str, *, content: bool = True) -> Outcome:
    """The decision, attributes and events for a scored span, as ``_wire.encode`` writes them (no text of the
    record without ``content``: the span's content was not captured)."""
    encoded = _wire.encode(scores, cost, judge_name, content=content)
    now = time.time_ns()
    events = tuple(Event(name, attributes, timestamp=now) for name, attributes in encoded.events)
    return Outcome(encoded.decision, encoded.attributes, events)
