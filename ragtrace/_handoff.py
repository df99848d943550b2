"""The hand-off of one RAG span: decided on (sampler, throttle, budget) and sent to scoring, or downstream with
its decision, exactly once. ``ScoringSpanProcessor`` inherits it; it holds the processor's parts it uses.

A RAG span is ragtrace's own (``@ragtrace.rag``, its record from the decorators) or the root of a RAG call
another instrumentation traced (its record joined by ``ragtrace._foreign``). Both go through ``_route``:

* once ``shutdown`` has begun -> downstream with decision ``overflow`` (not scored);
* it cannot be scored (``reason``: ``app_error``, the call raised; ``no_content``, the instrumentation
  kept the text off its spans) -> downstream with decision ``not_scored`` and the reason, whatever the
  sampler would say;
* not picked (rate, rules, throttle, budget) -> downstream as a copy carrying the decision;
* picked -> the worker's bounded queue with its record; no room (``overflow``) or no record (``error``,
  ``no_record``) -> downstream at once.

Nothing here raises into the app: a failure is logged once and the span still leaves, untouched.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ragtrace import semconv
from ragtrace._spans import safe_copy

if TYPE_CHECKING:
    import threading

    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
    from opentelemetry.util.types import AttributeValue

    from ragtrace._foreign import Joiner
    from ragtrace._record import RagRecord
    from ragtrace._sampling import Sampler
    from ragtrace._telemetry import Telemetry
    from ragtrace._worker import Worker

_log = logging.getLogger("ragtrace._processor")

ERROR_NO_RECORD: Final = "no_record"
"""``ragtrace.eval.error.type`` of a picked RAG span whose record never reached the processor (and
whose call did not fail: a failed call is ``not_scored``/``app_error``)."""


class Handoff:
    """Routes RAG spans to scoring or downstream (see the module docstring); a base of the processor."""

    downstream: SpanProcessor
    sampler: Sampler
    telemetry: Telemetry
    _worker: Worker
    _joiner: Joiner | None
    _admission: threading.Lock
    _metric_names: tuple[str, ...]
    _shutdown: bool
    _warned: bool
    _count_warned: bool

    def _route(self, span: ReadableSpan, record: RagRecord | None, reason: str | None = None) -> None:
        """Decide for one RAG span and hand it off exactly once: scoring, or downstream with its decision.
        ``reason``: it cannot be scored (``semconv.NOT_SCORED_*``). O(1); never raises."""
        forwarded = False
        try:
            if self._shutdown:
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
                    in_flight=self._worker.in_flight,
                )
                if selection.selected:
                    try:
                        if record is not None:
                            submitted = self._worker.submit(span, record, selection.metrics or self._metric_names)
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
                else:
                    self._forward(span, semconv.DECISION_OVERFLOW)
        except Exception:
            self._warn("ragtrace: on_end failed; the span is exported unscored")
            if not forwarded:
                self._pass(span)

    def _release_held(self) -> None:
        # Spans the joiner holds as RAG-root candidates leave now, as roots: flushed means exported.
        if self._joiner is not None:
            try:
                verdicts = self._joiner.drain()
            except Exception:
                self._warn("ragtrace: releasing held RAG roots failed")
                return
            for verdict in verdicts:
                self._route(verdict.span, verdict.record, verdict.reason)

    def _pass(self, span: ReadableSpan) -> None:
        """Forward ``span`` untouched; a downstream that raises is logged (once), never raised into the app."""
        try:
            self.downstream.on_end(span)
        except Exception:
            self._warn("ragtrace: the downstream span processor raised")

    def _warn(self, message: str) -> None:
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

    def _emit(self, span: ReadableSpan) -> None:
        self.downstream.on_end(span)
