"""``Handoff``: every way a span leaves the processor for downstream, exactly once: routed RAG spans (decided on
by the sampler, throttle and budget, and sent to scoring or downstream with their decision), spans passed on
untouched, and the worker's picked spans (scored in time, out of time, late scores on a carrier span).
``ScoringSpanProcessor`` holds one; it owns the worker, whose exits it is (``ragtrace.scoring.worker.Exits``).

A RAG span is ragtrace's own (``@ragtrace.rag``, its record from the decorators) or the root of a RAG call
another instrumentation traced (its record joined by ``ragtrace._foreign``). Both go through ``_route``:

* once ``shutdown`` has begun -> downstream with decision ``overflow`` (not scored);
* it cannot be scored (``reason``: ``app_error``, the call raised; ``no_content``, the instrumentation
  kept the text off its spans) -> downstream with decision ``not_scored`` and the reason, whatever the
  sampler would say;
* not picked (rate, rules, throttle, budget) -> downstream as a copy carrying the decision;
* picked -> the worker's bounded queue with its record; no room (``overflow``), no record (``error``,
  ``no_record``) or a judge resting after failing record after record (``error``, the failure's type;
  ``ragtrace.scoring.judge_pause``) -> downstream at once.

A picked span leaves through the worker: scored in time -> the scored copy (its scores, decision and the
seconds scoring took, written here once); out of time -> the original with decision ``timeout``; scored after
it left -> its scores on a carrier span linked to it. A scorer that raised -> decision ``error``.

Nothing here raises into the app: a failure is logged once and the span still leaves, untouched.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final

from ragtrace import semconv, wire
from ragtrace.scoring.jobs import Outcome, Picked
from ragtrace.scoring.spans import carrier_span, safe_copy
from ragtrace.scoring.worker import Worker

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
    from opentelemetry.util.types import AttributeValue

    from ragtrace._foreign import Joiner
    from ragtrace._record import RagRecord
    from ragtrace._sampling import Sampler
    from ragtrace.scoring.judge_pause import JudgePause
    from ragtrace.scoring.telemetry import Telemetry

_log = logging.getLogger("ragtrace.scoring")

_TIMEOUT: Final[Mapping[str, AttributeValue]] = {semconv.EVAL_DECISION: semconv.DECISION_TIMEOUT}

ERROR_NO_RECORD: Final = "no_record"
"""``ragtrace.eval.error.type`` of a picked RAG span whose record never reached the processor (and
whose call did not fail: a failed call is ``not_scored``/``app_error``)."""


class Handoff:
    """Routes RAG spans to scoring or downstream, and is where the worker's picked spans leave (see the module
        docstring). ``score``: the coroutine that scores one picked span; ``on_close``: closes the judge on the
        worker's loop at shutdown; ``pause``: whether the judge takes picked spans now (shared with the scorer,
    which tells it how each record went); the bounds are the worker's."""

    def __init__(
        self,
        *,
        downstream: SpanProcessor,
        sampler: Sampler,
        telemetry: Telemetry,
        joiner: Joiner | None,
        metric_names: tuple[str, ...],
        pause: JudgePause,
        score: Callable[[Picked], Awaitable[Outcome]],
        on_close: Callable[[], Awaitable[None]],
        queue_size: int,
        max_concurrency: int,
        hold_timeout: float,
    ) -> None:
        self.downstream = downstream
        self.sampler = sampler
        self.telemetry = telemetry
        self._joiner = joiner
        self._metric_names = metric_names
        self._pause = pause
        self._admission = threading.Lock()
        self.closed = False
        """Set when the processor's shutdown began: RAG spans then leave unscored (``overflow``)."""
        self._warned = False
        self._count_warned = False
        self.worker: Worker[Picked, Outcome] = Worker(
            work=score,
            exits=self,
            queue_size=queue_size,
            max_concurrency=max_concurrency,
            hold_timeout=hold_timeout,
            on_close=on_close,
        )

    def renew_after_fork(self) -> None:
        # Another thread may have held the admission lock at fork time; in the child nobody would release
        # it, and every RAG span ending under a budget would block there.
        self._admission = threading.Lock()

    def route(self, span: ReadableSpan, record: RagRecord | None, reason: str | None = None) -> None:
        """Decide for one RAG span and hand it off exactly once: scoring, or downstream with its decision.
        ``reason``: it cannot be scored (``semconv.NOT_SCORED_*``). O(1); never raises."""
        forwarded = False
        try:
            if self.closed:
                # Not scored, like a span the queue has no room for; every RAG span carries a decision.
                forwarded = True
                self._forward(span, semconv.DECISION_OVERFLOW)
                return
            if reason is not None:
                # Decided before sampling so every such call is counted apart, whatever the rate.
                forwarded = True
                self._forward(span, semconv.DECISION_NOT_SCORED, {semconv.EVAL_NOT_SCORED_REASON: reason})
                return
            # Records queued or being scored count against the budget before they are charged. With a
            # budget, deciding and handing over happen under one lock: two threads ending spans at once
            # would otherwise both be picked against the same count.
            context = span.context
            sampler = self.sampler
            budgeted = sampler.budget_tokens_per_day is not None or sampler.budget_usd_per_day is not None
            submitted = False
            with self._admission if budgeted else contextlib.nullcontext():
                selection = sampler.decide(
                    context.trace_id if context is not None else 0,
                    span,
                    record,
                    self._metric_names,
                    in_flight=self.worker.in_flight,
                )
                rested = selection.selected and self._pause.resting()
                if selection.selected:
                    try:
                        if record is not None and not rested:
                            submitted = self.worker.submit(
                                Picked(span, record, selection.metrics or self._metric_names)
                            )
                    finally:
                        if not submitted:
                            # Only a span handed to scoring spends a throttle slot.
                            sampler.refund(selection)
            # ``forwarded`` is set before each hand-off: a downstream that raises after accepting the
            # span must not get it twice (``_forward`` itself cannot fail before handing it over).
            forwarded = True
            if not selection.selected:
                self._forward(span, selection.decision)
            elif not submitted:
                if record is None:
                    self._forward(span, semconv.DECISION_ERROR, {semconv.EVAL_ERROR_TYPE: ERROR_NO_RECORD})
                elif rested:
                    self._forward(span, semconv.DECISION_ERROR, {semconv.EVAL_ERROR_TYPE: self._pause.cause})
                else:
                    self._forward(span, semconv.DECISION_OVERFLOW)
        except Exception:
            self.warn("ragtrace: on_end failed; the span is exported unscored")
            if not forwarded:
                self.pass_on(span)

    def release_held(self) -> None:
        # Spans the joiner holds as RAG-root candidates leave now, as roots: flushed means exported.
        if self._joiner is not None:
            try:
                verdicts = self._joiner.drain()
            except Exception:
                self.warn("ragtrace: releasing held RAG roots failed")
                return
            for verdict in verdicts:
                self.route(verdict.span, verdict.record, verdict.reason)

    def pass_on(self, span: ReadableSpan) -> None:
        """Forward ``span`` untouched; a downstream that raises is logged (once), never raised into the app."""
        try:
            self.downstream.on_end(span)
        except Exception:
            self.warn("ragtrace: the downstream span processor raised")

    def warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            _log.exception(message)

    def _forward(self, span: ReadableSpan, decision: str, extra: Mapping[str, AttributeValue] | None = None) -> None:
        attributes: dict[str, AttributeValue] = {semconv.EVAL_DECISION: decision}
        if extra:
            attributes.update(extra)
        copy, decision = safe_copy(span, attributes, decision=decision)
        try:
            self.downstream.on_end(copy)
        finally:
            self._count(decision)

    def _count(self, decision: str) -> None:
        # A broken metrics pipeline must neither lose the span nor reach the app.
        try:
            self.telemetry.decision(decision)
        except Exception:
            if not self._count_warned:
                self._count_warned = True
                _log.exception("ragtrace: counting a scoring decision failed")

    # -- the worker's exits (``ragtrace.scoring.worker.Exits``) -----------------------------------------

    def in_time(self, item: Picked, result: Outcome | Exception, seconds: float) -> None:
        """Scored before its deadline: the scored copy goes downstream (decision ``error`` if scoring raised)."""
        outcome = _outcome(result)
        span, decision = safe_copy(
            item.span, wire.finished(outcome.attributes, outcome.decision, seconds), outcome.events, outcome.decision
        )
        self._emit(span, decision)

    def unfinished(self, item: Picked) -> None:
        """Out of time (its deadline, a drain out of time, shutdown): downstream unscored, decision ``timeout``."""
        span, decision = safe_copy(item.span, _TIMEOUT)
        self._emit(span, decision)

    def late(self, item: Picked, result: Outcome | Exception, seconds: float, started_ns: int) -> None:
        """Scored after the span left: the scores go out on a carrier span linked to it."""
        outcome = _outcome(result)
        attributes = wire.finished(outcome.attributes, outcome.decision, seconds)
        try:
            carrier = carrier_span(
                item.span, attributes, outcome.events, start_time=started_ns, end_time=time.time_ns()
            )
        except Exception as exc:  # the original already left; only the late scores are lost
            _log.warning("ragtrace: could not build the carrier span: %s: %s", type(exc).__name__, exc)
            return
        try:
            self.downstream.on_end(carrier)
        except Exception:
            _log.exception("ragtrace: the downstream span processor raised")

    def _emit(self, span: ReadableSpan, decision: str) -> None:
        # Once a span has left the worker nothing may stand between it and downstream.
        try:
            self.downstream.on_end(span)
        except Exception:
            _log.exception("ragtrace: the downstream span processor raised")
        self._count(decision)


def _outcome(result: Outcome | Exception) -> Outcome:
    if isinstance(result, Outcome):
        return result
    # A failing scorer is a recorded outcome, never a lost span.
    _log.warning("ragtrace: scoring failed: %s: %s", type(result).__name__, result)
    return Outcome(semconv.DECISION_ERROR, {semconv.EVAL_ERROR_TYPE: type(result).__name__})
