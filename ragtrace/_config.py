"""Set-up: ``configure()`` for an app that lets ragtrace build its tracing, ``instrument()`` for an app
that already owns a TracerProvider. (``ragtrace.testing.capture()`` builds on ``configure()`` for tests.)

``configure()`` builds ``TracerProvider -> ScoringSpanProcessor -> BatchSpanProcessor -> OTLP exporter``
with the standard ``OTEL_*`` variables honoured (the SDK and exporters read them; explicit arguments
win), a MeterProvider with an OTLP metric exporter for the score histogram and counters, points the
ragtrace decorators at the provider and applies the capture settings. With ``set_global=False`` it
never touches the OpenTelemetry globals (tests inject an exporter and keep it that way).

Every argument and variable is documented in ``docs/configuration.md``.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk.environment_variables import OTEL_ATTRIBUTE_COUNT_LIMIT, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from ragtrace import _capture
from ragtrace._processor import ScoringSpanProcessor
from ragtrace._sampling import Price, Rule, Sampler, SpanPredicate
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._default import as_judge

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader

    from ragtrace.judges._base import Judge
    from ragtrace.metrics._base import Metric

_log = logging.getLogger(__name__)

PROTOCOLS: Final = ("http/protobuf", "grpc")
"""OTLP protocols ``configure(protocol=...)`` accepts."""

_TRACES_PATH: Final = "/v1/traces"
_METRICS_PATH: Final = "/v1/metrics"

# Attributes a RAG span carries besides its chunks: content, role, counts, and the scores the
# processor adds to the exported copy (four per metric, fourteen metrics, cost and decision).
_ATTRIBUTES_BESIDE_CHUNKS: Final = 128


class RagtraceHandle:
    """What ``configure()``/``instrument()`` set up; ``shutdown()`` undoes it after draining.

    ``tracer_provider``: the provider the decorators use. ``processor``: the scoring processor.
    ``meter_provider``: where score metrics go (``None`` when metrics are off).

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
    ) -> None:
        self.tracer_provider = tracer_provider
        self.processor = processor
        self.meter_provider = meter_provider
        self._owns_tracer_provider = owns_tracer_provider
        self._owns_meter_provider = owns_meter_provider
        self._settings = settings
        self._previous_settings = previous_settings
        self._previous_provider = previous_provider
        self._closed = False

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Score what is queued while the budget lasts, export the rest unscored, flush the exporters."""
        ok = self.processor.force_flush(timeout_millis)
        if self._owns_meter_provider and self.meter_provider is not None:
            flush = getattr(self.meter_provider, "force_flush", None)
            if flush is not None:
                ok = bool(flush(timeout_millis)) and ok
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
        finally:
            _deactivate(self)

    def __enter__(self) -> RagtraceHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def configure(
    *,
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    exporter: SpanExporter | None = None,
    batch: bool = True,
    resource_attributes: Mapping[str, Any] | None = None,
    judge: Judge | str | None = None,
    metrics: Sequence[str | Metric] | None = None,
    sampler: Sampler | None = None,
    sample_rate: float | None = None,
    metric_rates: Mapping[str, float] | None = None,
    always: Iterable[Rule | SpanPredicate] | None = None,
    never: Iterable[Rule | SpanPredicate] | None = None,
    throttle: int | None = None,
    budget_tokens: int | None = None,
    budget_usd: float | None = None,
    prices: Mapping[str, Price | tuple[float, float]] | None = None,
    queue_size: int | None = None,
    max_concurrency: int | None = None,
    hold_timeout: float | None = None,
    shutdown_timeout: float | None = None,
    capture_content: bool | None = None,
    redact: Callable[[str], str] | None = None,
    max_attribute_length: int | None = None,
    max_record_chunk_length: int | None = None,
    max_record_chunks: int | None = None,
    export_metrics: bool | None = None,
    meter_provider: metrics_api.MeterProvider | None = None,
    metric_readers: Sequence[MetricReader] | None = None,
    set_global: bool = True,
) -> RagtraceHandle:
    """Set up tracing and background scoring for a RAG app in one call; returns a handle to ``shutdown()``.

    Builds a TracerProvider whose spans go through the ``ScoringSpanProcessor`` to a
    ``BatchSpanProcessor`` (``batch=False``: ``SimpleSpanProcessor``) and ``exporter`` (default: OTLP
    over ``protocol`` to ``endpoint``, both falling back to the ``OTEL_EXPORTER_OTLP_*`` variables).
    ``service_name`` and ``resource_attributes`` win over ``OTEL_SERVICE_NAME`` and
    ``OTEL_RESOURCE_ATTRIBUTES``. Sampling, scoring and capture arguments are those of ``Sampler``,
    ``ScoringSpanProcessor`` and ``CaptureSettings`` (see docs/configuration.md); ``judge`` is a
    ``ragtrace.judges.Judge`` or one of the ``RAGTRACE_JUDGE`` values ``"auto"``, ``"openai"``,
    ``"offline"`` (see ``_judge``). Score metrics go to
    ``meter_provider`` when given, else to a new MeterProvider with ``metric_readers`` or an OTLP
    metric exporter (``export_metrics=False`` or ``OTEL_METRICS_EXPORTER=none``: no metrics).
    ``set_global`` makes the providers the OpenTelemetry globals too; OpenTelemetry takes a global
    provider once per process, so when one is already set (an earlier ``configure()``, the app) this
    warns (``RuntimeWarning``, naming the fix) and only ragtrace's decorators use the new provider.

    Raises ``ConfigurationError`` at once, naming the fix, for any wrong setting; a failed call leaves
    no thread or provider behind.
    """
    # Everything that only checks settings first: nothing runs yet that a mistake would leave behind.
    judge = as_judge(judge)
    capture_overrides = _capture_overrides(
        capture_content, redact, max_attribute_length, max_record_chunk_length, max_record_chunks
    )
    settings = _capture.CaptureSettings.from_env(**capture_overrides)
    span_limits = _span_limits(settings)
    resource = _resource(service_name, resource_attributes)
    sampler = _sampler(sampler, sample_rate, metric_rates, always, never, throttle, budget_tokens, budget_usd, prices)
    if exporter is None:
        exporter = _otlp_span_exporter(endpoint, protocol, headers)
    elif endpoint is not None or protocol is not None:
        raise ConfigurationError("pass either exporter= or endpoint=/protocol=, not both")
    owns_meter_provider = False
    downstream: SpanProcessor | None = None
    try:
        # From here on parts start threads (the metric reader's, the batch exporter's): if anything
        # fails, what was built is shut down before the error reaches the caller.
        if meter_provider is None and _metrics_enabled(export_metrics, metric_readers):
            meter_provider = _meter_provider(resource, metric_readers, endpoint, protocol, headers)
            owns_meter_provider = True
        downstream = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        processor = ScoringSpanProcessor(
            downstream,
            judge=judge,
            metrics=metrics,
            sampler=sampler,
            queue_size=queue_size,
            max_concurrency=max_concurrency,
            hold_timeout=hold_timeout,
            shutdown_timeout=shutdown_timeout,
            meter_provider=meter_provider or metrics_api.NoOpMeterProvider(),
            service_name=_service_of(resource),
        )
    except BaseException:
        if downstream is not None:
            downstream.shutdown()
        if owns_meter_provider and meter_provider is not None:
            meter_provider.shutdown()  # type: ignore[attr-defined]
        raise
    provider = TracerProvider(resource=resource, span_limits=span_limits)
    provider.add_span_processor(processor)
    if set_global:
        _set_globals(provider, meter_provider if owns_meter_provider else None)
    return _activate(provider, processor, meter_provider, settings, owns=True, owns_meter=owns_meter_provider)


def instrument(
    tracer_provider: TracerProvider,
    downstream: SpanProcessor | SpanExporter,
    *,
    judge: Judge | str | None = None,
    metrics: Sequence[str | Metric] | None = None,
    sampler: Sampler | None = None,
    sample_rate: float | None = None,
    queue_size: int | None = None,
    max_concurrency: int | None = None,
    hold_timeout: float | None = None,
    shutdown_timeout: float | None = None,
    capture_content: bool | None = None,
    redact: Callable[[str], str] | None = None,
    max_attribute_length: int | None = None,
    max_record_chunk_length: int | None = None,
    max_record_chunks: int | None = None,
    meter_provider: metrics_api.MeterProvider | None = None,
) -> RagtraceHandle:
    """Add ragtrace to an app's own TracerProvider without replacing anything.

    ``downstream`` is the exporter (or export processor) whose spans should carry scores: pass it here
    *instead of* adding ``BatchSpanProcessor(exporter)`` to the provider yourself, otherwise RAG spans
    are exported twice (once unscored). Other processors of the provider are untouched. Score metrics
    go to ``meter_provider`` (default: the global one). ``shutdown()`` drains and removes ragtrace's
    processor work; the provider stays the app's to shut down.

    One ragtrace per provider: a second ``instrument()`` of a provider whose handle is still open
    raises ``ConfigurationError`` (each record reaches one scoring processor, so the second would
    score nothing). To send scored spans to two backends, pass one downstream that fans out, e.g.
    ``SynchronousMultiSpanProcessor`` with a ``BatchSpanProcessor`` per exporter.

    ``judge`` is taken as by ``configure()``: a ``Judge``, or ``"auto"``, ``"openai"`` or ``"offline"``.
    """
    if not isinstance(tracer_provider, TracerProvider):
        raise ConfigurationError(
            f"instrument() needs an opentelemetry.sdk.trace.TracerProvider, not {type(tracer_provider).__name__}"
        )
    if _has_open_handle(tracer_provider):
        raise ConfigurationError(
            "instrument(): this TracerProvider already has ragtrace's scoring processor (an earlier "
            "instrument() or configure() whose handle is not shut down), and a second one would get no "
            "records to score: call instrument() once per provider, with a downstream that fans out to "
            "every exporter (SynchronousMultiSpanProcessor with a BatchSpanProcessor each), or shut the "
            "first handle down"
        )
    settings = _capture.CaptureSettings.from_env(
        **_capture_overrides(capture_content, redact, max_attribute_length, max_record_chunk_length, max_record_chunks)
    )
    processor = ScoringSpanProcessor(
        downstream,
        judge=judge,
        metrics=metrics,
        sampler=sampler,
        sample_rate=sample_rate,
        queue_size=queue_size,
        max_concurrency=max_concurrency,
        hold_timeout=hold_timeout,
        shutdown_timeout=shutdown_timeout,
        meter_provider=meter_provider,
        service_name=_service_of(tracer_provider.resource),
    )
    tracer_provider.add_span_processor(processor)
    return _activate(tracer_provider, processor, meter_provider, settings, owns=False, owns_meter=False)


# -- helpers -------------------------------------------------------------------------------------


# The open handles, oldest first: the last one's provider and settings are in force.
_open_handles: list[RagtraceHandle] = []
_handles_lock = threading.Lock()


def _activate(
    provider: TracerProvider,
    processor: ScoringSpanProcessor,
    meter_provider: metrics_api.MeterProvider | None,
    settings: _capture.CaptureSettings,
    *,
    owns: bool,
    owns_meter: bool,
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
        )
        _capture.set_settings(settings)
        _capture.set_tracer_provider(provider)
        _open_handles.append(handle)
    return handle


def _deactivate(handle: RagtraceHandle) -> None:
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


def _has_open_handle(provider: TracerProvider) -> bool:
    with _handles_lock:
        return any(h.tracer_provider is provider for h in _open_handles)


def _after_fork_in_child() -> None:
    # A lock another thread held at fork time would stay held forever in the child.
    global _handles_lock
    _handles_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _set_globals(provider: TracerProvider, meter_provider: metrics_api.MeterProvider | None) -> None:
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


def _capture_overrides(
    capture_content: bool | None,
    redact: Callable[[str], str] | None,
    max_attribute_length: int | None,
    max_record_chunk_length: int | None,
    max_record_chunks: int | None,
) -> dict[str, Any]:
    given = {
        "capture_content": capture_content,
        "redact": redact,
        "max_attribute_length": max_attribute_length,
        "max_record_chunk_length": max_record_chunk_length,
        "max_record_chunks": max_record_chunks,
    }
    return {name: value for name, value in given.items() if value is not None}


def _span_limits(settings: _capture.CaptureSettings) -> SpanLimits:
    # The SDK keeps 128 attributes a span by default, and a RAG span spends up to four on each chunk:
    # past ~28 chunks it would drop some silently. Room for every chunk kept, plus the scores, unless
    # the app chose a limit with the standard OTel variables.
    if os.environ.get(OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT) or os.environ.get(OTEL_ATTRIBUTE_COUNT_LIMIT):
        return SpanLimits()
    return SpanLimits(max_span_attributes=4 * settings.max_record_chunks + _ATTRIBUTES_BESIDE_CHUNKS)


def _resource(service_name: str | None, attributes: Mapping[str, Any] | None) -> Resource:
    # Resource.create merges the SDK defaults, OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, then
    # the explicit attributes on top: arguments win over variables.
    explicit: dict[str, Any] = dict(attributes or {})
    if service_name is not None:
        if not isinstance(service_name, str) or not service_name.strip():
            raise ConfigurationError(f"service_name={service_name!r} is invalid: pass a non-empty name")
        explicit[SERVICE_NAME] = service_name
    return Resource.create(explicit)


def _service_of(resource: Resource) -> str | None:
    value = resource.attributes.get(SERVICE_NAME)
    return str(value) if value is not None else None


def _protocol(protocol: str | None, signal: str) -> str:
    chosen = (
        protocol
        or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if chosen not in PROTOCOLS:
        raise ConfigurationError(
            f"OTLP protocol {chosen!r} is not supported: use 'http/protobuf' or 'grpc' "
            "(configure(protocol=...) or OTEL_EXPORTER_OTLP_PROTOCOL)"
        )
    return chosen


def _http_url(endpoint: str, path: str) -> str:
    # Like OTEL_EXPORTER_OTLP_ENDPOINT: a base URL gets the signal path; a full signal URL is kept.
    base = endpoint.rstrip("/")
    if base.endswith(path):
        return base
    if base.endswith((_TRACES_PATH, _METRICS_PATH)):
        base = base.rsplit("/v1/", 1)[0]
    return base + path


def _check_endpoint(endpoint: str) -> None:
    if not endpoint.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"endpoint={endpoint!r} is not a URL: write e.g. http://127.0.0.1:4318 (http/protobuf) "
            "or http://127.0.0.1:4317 (grpc)"
        )


def _otlp_span_exporter(endpoint: str | None, protocol: str | None, headers: Mapping[str, str] | None) -> SpanExporter:
    chosen = _protocol(protocol, "TRACES")
    if endpoint is not None:
        _check_endpoint(endpoint)
    if chosen == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        insecure = endpoint.startswith("http://") if endpoint is not None else None
        return GrpcSpanExporter(endpoint=endpoint, insecure=insecure, headers=dict(headers) if headers else None)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

    url = _http_url(endpoint, _TRACES_PATH) if endpoint is not None else None
    return HttpSpanExporter(endpoint=url, headers=dict(headers) if headers else None)


def _metrics_enabled(export_metrics: bool | None, readers: Sequence[MetricReader] | None) -> bool:
    if readers:
        return True
    if export_metrics is not None:
        return export_metrics
    return os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none"


def _meter_provider(
    resource: Resource,
    readers: Sequence[MetricReader] | None,
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
) -> MeterProvider:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    if not readers:
        chosen = _protocol(protocol, "METRICS")
        hdrs = dict(headers) if headers else None
        if chosen == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcMetricExporter,
            )

            insecure = endpoint.startswith("http://") if endpoint is not None else None
            metric_exporter: Any = GrpcMetricExporter(endpoint=endpoint, insecure=insecure, headers=hdrs)
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter as HttpMetricExporter,
            )

            url = _http_url(endpoint, _METRICS_PATH) if endpoint is not None else None
            metric_exporter = HttpMetricExporter(endpoint=url, headers=hdrs)
        readers = [PeriodicExportingMetricReader(metric_exporter)]
    return MeterProvider(resource=resource, metric_readers=list(readers))


def _sampler(
    sampler: Sampler | None,
    sample_rate: float | None,
    metric_rates: Mapping[str, float] | None,
    always: Iterable[Rule | SpanPredicate] | None,
    never: Iterable[Rule | SpanPredicate] | None,
    throttle: int | None,
    budget_tokens: int | None,
    budget_usd: float | None,
    prices: Mapping[str, Price | tuple[float, float]] | None,
) -> Sampler:
    given = [sample_rate, metric_rates, always, never, throttle, budget_tokens, budget_usd, prices]
    if sampler is not None:
        if any(v is not None for v in given):
            raise ConfigurationError(
                "pass either sampler= or the sampling arguments (sample_rate, metric_rates, always, never, "
                "throttle, budget_tokens, budget_usd, prices), not both: give them to Sampler(...)"
            )
        return sampler
    return Sampler(
        sample_rate,
        metric_rates=metric_rates,
        always=always,
        never=never,
        throttle_per_minute=throttle,
        budget_tokens_per_day=budget_tokens,
        budget_usd_per_day=budget_usd,
        prices=prices,
    )
