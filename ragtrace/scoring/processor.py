"""``ScoringSpanProcessor``: puts scores on RAG spans before they are exported, off the request path.

It wraps the downstream processor (usually ``BatchSpanProcessor`` + an OTLP exporter) and decides,
in ``on_end``, what happens to each ended span:

* ragtrace's own RAG span (``@ragtrace.rag``) -> its record is taken from the decorators' store and the
  span is routed (``ragtrace.scoring.handoff``): into the worker's bounded queue when picked, else downstream at once as
  a copy carrying ``ragtrace.eval.decision`` (``not_sampled``, ``not_scored``, ``overflow``, ...);
* any other span -> the joiner of the RAG calls other instrumentations traced (``_foreign``; off with
  ``recognize=False``). Most spans go downstream at once, untouched. The root of such a RAG call (the
  topmost CHAIN/workflow with retrieval under it, or a span a ``rag_roots`` rule names) is routed like
  ragtrace's own RAG spans, with the record joined from its subtree; a root-kind span that an enclosing
  one may yet supersede is held until its parent ends (or the flush, shutdown or bound that releases it).

``on_end`` never blocks and never raises: anything unexpected is logged and the original span goes
downstream. Every span that reaches the processor leaves it exactly once (see ``ragtrace.scoring.worker``).
"""

from __future__ import annotations

import atexit
import time
import weakref
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import StatusCode

from ragtrace import semconv
from ragtrace._capture import RECORDS, RecordStore
from ragtrace._exceptions import ConfigurationError
from ragtrace._export_deadline import ExportDeadline
from ragtrace._foreign import Joiner, JoinStats, Release
from ragtrace._fork import at_fork_in_child_of
from ragtrace._options import JoinOptions, ScoringOptions
from ragtrace._shorthands import PROCESSOR, ProcessorKeywords, merge
from ragtrace.scoring.exit import before_thread_pools_close, drain_ref, shutdown_ref
from ragtrace.scoring.handoff import ERROR_NO_RECORD as ERROR_NO_RECORD
from ragtrace.scoring.handoff import Handoff
from ragtrace.scoring.judge_pause import JudgePause
from ragtrace.scoring.provider import ProviderAdoption
from ragtrace.scoring.scorer import JobScorer
from ragtrace.scoring.telemetry import Telemetry
from ragtrace.scoring.worker import wait_seconds

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Unpack

    from opentelemetry.metrics import MeterProvider

    from ragtrace._sampling import Sampler
    from ragtrace.judges._base import Judge


class ScoringSpanProcessor(SpanProcessor):
    """Scores sampled RAG spans in the background and forwards every span to ``downstream`` exactly once.

    ``downstream``: the processor that exports (or an exporter, wrapped in a ``BatchSpanProcessor``).
    ``scoring``: a ``ragtrace.ScoringOptions`` (the judge, the metrics, the ``Sampler``, the worker's bounds).
    The processor owns the judge: judge calls run on the worker's own loop, and ``shutdown`` closes it there.
    ``join``: a ``ragtrace.JoinOptions``: how RAG calls traced by other instrumentations (OpenInference,
    OpenLLMetry, GenAI conventions) are joined and scored too (``ragtrace._foreign``, docs/integrations.md).
    ``shorthands``: the same settings as flat keywords (``judge=``, ``queue_size=``, ``sample_rate=``,
    ``rag_roots=``, ``join_max_traces=``, ...; ``ragtrace._shorthands``). Arguments win over ``RAGTRACE_*``
    variables, variables over defaults (docs/configuration.md).
    ``meter_provider`` / ``service_name``: where the score histogram and counters go.
    ``records``: the store the decorators hand each RAG span's record through (default: the process-wide
    ``ragtrace._capture.RECORDS``, which the decorators fill). Only tests pass one: they put records into
    a store of their own by hand, so no other processor or decorated call can take them.
    ``join_clock``: the seconds the joiner's ``max_seconds`` bound is measured by (default ``time.monotonic``).
    Only tests pass one: they move it rather than wait for time to pass.
    Wrong values raise ``ConfigurationError`` naming the fix.
    """

    def __init__(
        self,
        downstream: SpanProcessor | SpanExporter,
        *,
        scoring: ScoringOptions | None = None,
        join: JoinOptions | None = None,
        meter_provider: MeterProvider | None = None,
        service_name: str | None = None,
        records: RecordStore | None = None,
        join_clock: Callable[[], float] = time.monotonic,
        **shorthands: Unpack[ProcessorKeywords],
    ) -> None:
        if not isinstance(downstream, (SpanProcessor, SpanExporter)):
            raise ConfigurationError(
                f"downstream={downstream!r} is not a SpanProcessor or SpanExporter: pass e.g. "
                "BatchSpanProcessor(OTLPSpanExporter())"
            )
        options = merge("ScoringSpanProcessor()", shorthands, PROCESSOR, scoring=scoring, join=join)
        joining = options.join.resolve()
        scored = options.scoring.resolve()  # the judge is built last of what can fail
        self.sampler: Sampler = scored.sampler
        self.queue_size = scored.queue_size
        self.max_concurrency = scored.max_concurrency
        self.hold_timeout = scored.hold_timeout
        self.shutdown_timeout = scored.shutdown_timeout
        self._metric_names: tuple[str, ...] = scored.suite.names
        self.judge: Judge = scored.judge
        self.telemetry = Telemetry(meter_provider, service_name=service_name)
        pause = JudgePause(self.judge.name)
        scorer = JobScorer(scored.suite, self.judge, self.sampler, self.telemetry, pause)
        # Wrapped only after everything that can raise (settings, the judge, the meter): a
        # BatchSpanProcessor starts a thread that nobody would stop.
        self.downstream: SpanProcessor = (
            BatchSpanProcessor(downstream) if isinstance(downstream, SpanExporter) else downstream
        )
        self._records = records if records is not None else RECORDS
        self._joiner = Joiner(joining, join_clock) if joining.recognize else None
        self._adoption = ProviderAdoption()
        self._records.acquire()
        self._shutdown = False
        self._exit_deadline: float | None = None  # set by the exit drain: shutdown() gets what it left
        # Set by configure() for the exporters it built: cuts their retries when a shutdown's budget ends.
        self.export_deadline: ExportDeadline | None = None
        self._handoff = Handoff(
            downstream=self.downstream,
            sampler=self.sampler,
            telemetry=self.telemetry,
            joiner=self._joiner,
            metric_names=self._metric_names,
            pause=pause,
            score=scorer.score,
            # The judge's connections live on the worker's loop, so only this processor can close
            # them cleanly: it owns the judge it is given and closes it at shutdown, on that loop.
            on_close=self.judge.aclose,
            queue_size=self.queue_size,
            max_concurrency=self.max_concurrency,
            hold_timeout=self.hold_timeout,
        )
        self._worker = self._handoff.worker
        # The TracerProvider's own atexit hook calls shutdown() too (idempotent); this one covers a
        # processor that is not (yet) attached to a provider that shuts down at exit.
        ref = weakref.ref(self)
        self._atexit = lambda: shutdown_ref(ref)
        atexit.register(self._atexit)
        before_thread_pools_close(lambda: drain_ref(ref))
        at_fork_in_child_of(self, _renew_after_fork)

    # -- SpanProcessor ------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        # A model client's span starting beneath a @generate span names the provider it lacks.
        self._adoption.start(span, parent_context)
        self.downstream.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        # Forwarded so downstream processors that implement the SDK's on-ending hook keep working.
        hook = getattr(self.downstream, "_on_ending", None)
        if hook is not None:
            hook(span)

    def on_end(self, span: ReadableSpan) -> None:
        """Route one ended span (see the module docstring). Never blocks; never raises; O(1) but for the
        documents of a retrieval span, read once."""
        self._adoption.end(span)
        attributes = span.attributes
        own = attributes is not None and attributes.get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG
        verdicts: tuple[Release, ...] | None = None
        if self._joiner is not None:
            try:
                verdicts = self._joiner.own(span) if own else self._joiner.end(span, attributes)
            except Exception:
                self._handoff.warn("ragtrace: reading the span for a RAG call failed; it is exported as it is")
        if verdicts is not None:
            # The joiner took the span (it is among these, or held) and released these others.
            for verdict in verdicts:
                if verdict.root:
                    self._handoff.route(verdict.span, verdict.record, verdict.reason)
                else:
                    self._handoff.pass_on(verdict.span)
        if not own:
            if verdicts is None:
                self._handoff.pass_on(span)
            return
        context = span.context
        try:
            record = self._records.take(context.trace_id, context.span_id) if context is not None else None
        except Exception:
            record = None
        # A call that raised left no record: nothing to score, and no judge to blame.
        failed = record is None and span.status.status_code is StatusCode.ERROR
        self._handoff.route(span, record, semconv.NOT_SCORED_APP_ERROR if failed else None)

    def drain_at_exit(self) -> None:
        """The exit drain (``ragtrace.scoring.exit``): score what is held while thread pools still take work.

        It and the final shutdown share one ``shutdown_timeout``: a judge that never answers must not hold
        the exit for twice that. Does nothing once shutdown began."""
        if self._shutdown:
            return
        self._exit_deadline = time.monotonic() + self.shutdown_timeout
        self._flush(int(self.shutdown_timeout * 1000), exiting=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Score what is queued while the budget lasts, export the rest unscored, then flush downstream.

        Most of the budget goes to scoring; a fifth (at most 5 s) is kept for the downstream flush.
        """
        return self._flush(timeout_millis, exiting=False)

    def _flush(self, timeout_millis: int, *, exiting: bool) -> bool:
        # ``exiting``: the exit drain, after which the exporters configure() built may be cut at the
        # end of the export's share of the budget (a dead endpoint would otherwise hold the exit).
        budget = wait_seconds(timeout_millis / 1000.0)
        end = time.monotonic() + budget
        self._handoff.release_held()
        complete = self._worker.flush(budget - _reserve(budget))
        remaining_ms = max(int(max(end - time.monotonic(), 0.0) * 1000), 1)
        deadline = self.export_deadline
        if not exiting or deadline is None:
            return self.downstream.force_flush(remaining_ms) and complete
        with deadline.armed(time.monotonic() + _reserve(budget)):
            return self.downstream.force_flush(remaining_ms) and complete

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Drain like ``force_flush`` (default budget ``shutdown_timeout``), then shut downstream down. Idempotent.

        At interpreter exit the default budget is what the exit drain left of ``shutdown_timeout``.
        """
        if self._shutdown:
            return
        self._handoff.release_held()  # scored, not marked overflow: nothing above them can end in time now
        self._shutdown = self._handoff.closed = True
        atexit.unregister(self._atexit)
        if timeout_millis is not None:
            seconds = timeout_millis / 1000.0
        elif self._exit_deadline is not None:
            seconds = self._exit_deadline - time.monotonic()
        else:
            seconds = self.shutdown_timeout
        budget = wait_seconds(seconds)
        try:
            self._worker.shutdown(budget - _reserve(budget))
        finally:
            self._records.release()
            deadline = self.export_deadline
            if deadline is None:
                self.downstream.shutdown()
            else:
                # The exports get the reserve, as in force_flush: an exporter stuck retrying a dead
                # endpoint past it is cut; one that keeps exporting is left to finish.
                try:
                    with deadline.armed(time.monotonic() + _reserve(budget)):
                        self.downstream.shutdown()
                finally:
                    deadline.report()
                    deadline.close()

    # -- introspection ------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """RAG spans held for scoring and not yet exported."""
        return self._worker.held

    @property
    def join_stats(self) -> JoinStats | None:
        """What the joiner of other instrumentations' RAG calls holds and has dropped (None when off)."""
        return self._joiner.stats if self._joiner is not None else None

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The metrics this processor scores."""
        return self._metric_names


def _reserve(budget: float) -> float:
    return min(budget * 0.2, 5.0)


def _renew_after_fork(processor: ScoringSpanProcessor) -> None:
    processor._handoff.renew_after_fork()
    # The spans open in the parent at fork time never end in the child: nothing would forget them.
    processor._adoption = ProviderAdoption()
