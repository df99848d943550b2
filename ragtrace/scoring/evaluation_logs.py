"""Where evaluations go besides the flat attributes: span events, OpenTelemetry log records, or both.

The GenAI conventions define ``gen_ai.evaluation.result`` as a log-based event, parented to the evaluated
span, and OpenTelemetry is deprecating the span-event API in favour of such log records. Backends differ in
what they read today, so each way is switched on its own (``EvaluationOutput``, from ``RAGTRACE_*``):

* span events (default on): one ``gen_ai.evaluation.result`` event per metric on the scored span, what the
  ragtrace collector and most trace backends read;
* log records (default off): the same events emitted through the OpenTelemetry Logs API, with the trace
  and span id of the evaluated span, to the ``LoggerProvider`` set here or else the global one (the app's
  own, or the OTLP one ``configure()`` builds and makes global). The ragtrace collector receives them
  (``/v1/logs``, LogsService) and stores each as the score its span event would have given.

Both carry exactly the attributes ``ragtrace.wire.encode`` writes; nothing here reads a clock or does I/O
beyond handing records to the logger.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import _logs as logs_api
from opentelemetry import trace as trace_api
from opentelemetry._logs import SeverityNumber

from ragtrace import semconv
from ragtrace._fork import at_fork_in_child
from ragtrace.environment_variables import RAGTRACE_EVALUATION_LOGS, RAGTRACE_EVALUATION_SPAN_EVENTS, read_bool

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.trace import Event, ReadableSpan

__all__ = [
    "EvaluationLogs",
    "EvaluationOutput",
    "get_logger_provider",
    "set_global_logger_provider",
    "set_logger_provider",
]


@dataclass(frozen=True, slots=True)
class EvaluationOutput:
    """Which ways each evaluation leaves: ``span_events`` on the scored span, ``log_records`` as OTel logs."""

    span_events: bool = True
    log_records: bool = False

    @classmethod
    def from_env(cls) -> EvaluationOutput:
        """From ``RAGTRACE_EVALUATION_SPAN_EVENTS`` and ``RAGTRACE_EVALUATION_LOGS``; a value that does not
        parse warns once and keeps the default."""
        defaults = cls()
        return cls(
            span_events=read_bool(RAGTRACE_EVALUATION_SPAN_EVENTS, defaults.span_events),
            log_records=read_bool(RAGTRACE_EVALUATION_LOGS, defaults.log_records),
        )


class _ProviderState:
    __slots__ = ("provider",)

    def __init__(self) -> None:
        self.provider: logs_api.LoggerProvider | None = None


_state = _ProviderState()
_lock = threading.Lock()


def set_logger_provider(provider: logs_api.LoggerProvider | None) -> None:
    """Send evaluation log records to ``provider`` (``None``: the OpenTelemetry global one), without touching
    the global (tests and ``configure()``-style set-ups inject theirs). Takes effect for scorers built after."""
    with _lock:
        _state.provider = provider


def get_logger_provider() -> logs_api.LoggerProvider:
    """The provider set with ``set_logger_provider``, else the global one (the API's proxy until the app
    sets one, so records emitted before that are dropped, as any other OTel log would be)."""
    return _state.provider or logs_api.get_logger_provider()


def set_global_logger_provider(provider: LoggerProvider) -> LoggerProvider | None:
    """Make ``provider`` (built by ``configure()``) the OpenTelemetry global LoggerProvider and return it; when
    the app set a global one already, shut ``provider`` down and return None: the records go to the app's."""
    logs_api.set_logger_provider(provider)  # OpenTelemetry takes a global once per process
    if logs_api.get_logger_provider() is provider:
        return provider
    provider.shutdown()
    return None


class EvaluationLogs:
    """Emits each ``gen_ai.evaluation.result`` event of a scored span as a log record in that span's context."""

    def __init__(self, provider: logs_api.LoggerProvider | None = None) -> None:
        self._logger = (provider or get_logger_provider()).get_logger(semconv.INSTRUMENTATION_SCOPE)

    def emit(self, span: ReadableSpan, events: Iterable[Event]) -> int:
        """One log record per evaluation event (others are skipped), with ``span``'s trace and span id,
        event name ``gen_ai.evaluation.result``, severity INFO, the event's attributes and timestamp.
        Returns how many were emitted."""
        span_context = span.context
        if span_context is None or not span_context.is_valid:
            return 0
        # The record's trace and span id come from the context it is emitted in: the evaluated span's.
        context = trace_api.set_span_in_context(trace_api.NonRecordingSpan(span_context))
        emitted = 0
        for event in events:
            if event.name != semconv.GEN_AI_EVALUATION_RESULT:
                continue
            self._logger.emit(
                timestamp=event.timestamp,
                observed_timestamp=event.timestamp,
                context=context,
                severity_number=SeverityNumber.INFO,
                attributes=dict(event.attributes or {}),
                event_name=semconv.GEN_AI_EVALUATION_RESULT,
            )
            emitted += 1
        return emitted


@at_fork_in_child
def _renew_lock_in_child() -> None:
    # A lock another thread held when the app forked would stay held forever in the child.
    global _lock
    _lock = threading.Lock()
