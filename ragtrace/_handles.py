"""Handles: what ``configure()``/``instrument()`` set up, and the stack of open handles whose newest is in force.

``activate`` points the decorators at a new handle's provider and capture settings; ``deactivate`` (from
``RagtraceHandle.shutdown``) takes it off the stack and puts back only what is still its own.
``set_globals`` makes a handle's providers the OpenTelemetry globals, warning when OpenTelemetry refuses.
"""

from __future__ import annotations

import threading
import warnings

from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from ragtrace import _capture
from ragtrace._fork import at_fork_in_child
from ragtrace.scoring.processor import ScoringSpanProcessor


class RagtraceHandle:
    """What ``configure()``/``instrument()`` set up; ``shutdown()`` undoes it after draining.

    ``tracer_provider``: the provider the decorators use. ``processor``: the scoring processor.
    ``meter_provider``: where score metrics go (``None`` when metrics are off). ``logger_provider``: the
    LoggerProvider ``configure`` built for evaluation log records (``None``: none built), flushed and shut
    down with the handle.

    Handles stack: the newest one's provider and capture settings are in force. Shutting down the
    newest puts back what was in force before it; shutting down an older one changes nothing that is
    in force (a newer ``capture_content=False`` or ``redact`` stays), and the newer handle will fall
    back to what the older one fell back to.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider,
        processor: ScoringSpanProcessor,
        meter_provider: metrics_api.MeterProvider | None,
        owns_tracer_provider: bool,
        owns_meter_provider: bool,
        settings: _capture.CaptureSettings,
        previous_settings: _capture.CaptureSettings,
        previous_provider: trace_api.TracerProvider | None,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.processor = processor
        self.meter_provider = meter_provider
        self._owns_tracer_provider = owns_tracer_provider
        self._owns_meter_provider = owns_meter_provider
        self._settings = settings
        self._previous_settings = previous_settings
        self._previous_provider = previous_provider
        self.logger_provider = logger_provider
        self._closed = False

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Score what is queued while the budget lasts, export the rest unscored, flush the exporters."""
        ok = self.processor.force_flush(timeout_millis)
        if self._owns_meter_provider and self.meter_provider is not None:
            flush = getattr(self.meter_provider, "force_flush", None)
            if flush is not None:
                ok = bool(flush(timeout_millis)) and ok
        if self.logger_provider is not None:
            ok = self.logger_provider.force_flush(timeout_millis) and ok
        return ok

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Drain the scorer (default budget: ``shutdown_timeout``), shut down what ``configure`` built and,
        if this is the newest open handle, point the decorators back where they were. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.processor.shutdown(timeout_millis)
            if self._owns_tracer_provider:
                self.tracer_provider.shutdown()
            if self._owns_meter_provider and self.meter_provider is not None:
                shutdown = getattr(self.meter_provider, "shutdown", None)
                if shutdown is not None:
                    shutdown()
            if self.logger_provider is not None:
                self.logger_provider.shutdown()
        finally:
            deactivate(self)

    def __enter__(self) -> RagtraceHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


# The open handles, oldest first: the last one's provider and settings are in force.
_open_handles: list[RagtraceHandle] = []
_handles_lock = threading.Lock()


def activate(
    provider: TracerProvider,
    processor: ScoringSpanProcessor,
    meter_provider: metrics_api.MeterProvider | None,
    settings: _capture.CaptureSettings,
    *,
    owns: bool,
    owns_meter: bool,
    logs: LoggerProvider | None = None,
) -> RagtraceHandle:
    with _handles_lock:
        handle = RagtraceHandle(
            tracer_provider=provider,
            processor=processor,
            meter_provider=meter_provider,
            owns_tracer_provider=owns,
            owns_meter_provider=owns_meter,
            settings=settings,
            previous_settings=_capture.get_settings(),
            previous_provider=_capture.get_tracer_provider(),
            logger_provider=logs,
        )
        _capture.set_settings(settings)
        _capture.set_tracer_provider(provider)
        _open_handles.append(handle)
    return handle


def deactivate(handle: RagtraceHandle) -> None:
    """Take ``handle`` off the stack; put back what it replaced only where its own is still in force."""
    with _handles_lock:
        index = next((i for i, h in enumerate(_open_handles) if h is handle), None)
        if index is None:
            return
        del _open_handles[index]
        if index < len(_open_handles):
            # A newer handle is in force: leave it alone (restoring here would undo, say, its
            # capture_content=False), and let it fall back to what this one fell back to.
            newer = _open_handles[index]
            newer._previous_settings = handle._previous_settings
            newer._previous_provider = handle._previous_provider
            return
        # Restore only what is still this handle's own: someone may have set another since.
        if _capture.get_tracer_provider() is handle.tracer_provider:
            _capture.set_tracer_provider(handle._previous_provider)
        if _capture.get_settings() is handle._settings:
            _capture.set_settings(handle._previous_settings)


def has_open_handle(provider: TracerProvider) -> bool:
    with _handles_lock:
        return any(h.tracer_provider is provider for h in _open_handles)


@at_fork_in_child
def _renew_lock_in_child() -> None:
    # A lock another thread held at fork time would stay held forever in the child.
    global _handles_lock
    _handles_lock = threading.Lock()


def set_globals(provider: TracerProvider, meter_provider: metrics_api.MeterProvider | None) -> None:
    # OpenTelemetry sets each global once per process and ignores later calls with a log line; say
    # what that means here and how to fix it, or the app's own spans silently go to the old provider.
    trace_api.set_tracer_provider(provider)
    if meter_provider is not None:
        metrics_api.set_meter_provider(meter_provider)
    refused = [
        name
        for name, ok in (
            ("TracerProvider", trace_api.get_tracer_provider() is provider),
            ("MeterProvider", meter_provider is None or metrics_api.get_meter_provider() is meter_provider),
        )
        if not ok
    ]
    if refused:
        warnings.warn(
            f"ragtrace.configure(): a global OpenTelemetry {' and '.join(refused)} was already set (by an "
            "earlier configure() or by the app) and OpenTelemetry allows one per process, so this one is not "
            "global. ragtrace's decorators use it, but spans of other instrumentation (trace.get_tracer(), "
            "FastAPI, requests, ...) still go to the old provider, and are lost if that was shut down. Fix: "
            "call configure() once per process and keep its handle; or pass set_global=False and give "
            "handle.tracer_provider to your instrumentation; or use ragtrace.instrument() on the app's provider.",
            RuntimeWarning,
            stacklevel=3,
        )
