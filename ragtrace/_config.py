"""Set-up: ``configure()`` for an app that lets ragtrace build its tracing, ``instrument()`` for an app
that already owns a TracerProvider. (``ragtrace.testing.capture()`` builds on ``configure()`` for tests.)
The handle they return lives in ``_handles.py``, the OTLP exporters they build in ``_exporters.py``.

``configure()`` builds ``TracerProvider -> ScoringSpanProcessor -> BatchSpanProcessor -> OTLP exporter``
with the standard ``OTEL_*`` variables honoured (the SDK and exporters read them; explicit arguments
win), a MeterProvider with an OTLP metric exporter for the score histogram and counters (and, with
``RAGTRACE_EVALUATION_LOGS=true``, a global LoggerProvider for the evaluation log records), points the
ragtrace decorators at the provider and applies the capture settings. With ``set_global=False`` it
never touches the OpenTelemetry globals (tests inject an exporter and keep it that way).

Every argument and variable is documented in ``docs/configuration.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import metrics as metrics_api
from opentelemetry.sdk.environment_variables import OTEL_ATTRIBUTE_COUNT_LIMIT, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from ragtrace import _capture, _exporters
from ragtrace._exceptions import ConfigurationError
from ragtrace._export_deadline import CountingSpanExporter, ExportDeadline
from ragtrace._export_failure import WatchedSession, fix_for, watchable
from ragtrace._exporters import meter_provider_for, metrics_enabled, otlp_span_exporter
from ragtrace._handles import RagtraceHandle, activate, has_open_handle, set_globals
from ragtrace._options import CaptureOptions, JoinOptions, ScoringOptions
from ragtrace._shorthands import SETUP, SetupKeywords, merge
from ragtrace.scoring.evaluation_logs import EvaluationOutput, set_global_logger_provider
from ragtrace.scoring.processor import ScoringSpanProcessor

if TYPE_CHECKING:
    from typing import Unpack

    from opentelemetry.sdk.metrics.export import MetricReader

_log = logging.getLogger(__name__)

# Attributes a RAG span carries besides its chunks: content, role, counts, and the scores the
# processor adds to the exported copy (four per metric, fourteen metrics, cost and decision).
_ATTRIBUTES_BESIDE_CHUNKS: Final = 128


def configure(
    *,
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    exporter: SpanExporter | None = None,
    batch: bool = True,
    resource_attributes: Mapping[str, Any] | None = None,
    scoring: ScoringOptions | None = None,
    capture: CaptureOptions | None = None,
    join: JoinOptions | None = None,
    export_metrics: bool | None = None,
    meter_provider: metrics_api.MeterProvider | None = None,
    metric_readers: Sequence[MetricReader] | None = None,
    set_global: bool = True,
    **shorthands: Unpack[SetupKeywords],
) -> RagtraceHandle:
    """Set up tracing and background scoring for a RAG app in one call; returns a handle to ``shutdown()``.

    Builds a TracerProvider whose spans go through the ``ScoringSpanProcessor`` to a
    ``BatchSpanProcessor`` (``batch=False``: ``SimpleSpanProcessor``) and ``exporter`` (default: OTLP
    over ``protocol`` to ``endpoint``, both falling back to the ``OTEL_EXPORTER_OTLP_*`` variables).
    ``service_name`` and ``resource_attributes`` win over ``OTEL_SERVICE_NAME`` and
    ``OTEL_RESOURCE_ATTRIBUTES``. ``scoring``, ``capture`` and ``join`` are the option objects
    (``ragtrace.ScoringOptions``, ``CaptureOptions``, ``JoinOptions``); ``shorthands`` are their fields as
    flat keywords (``judge=``, ``sample_rate=``, ``queue_size=``, ``redact=``, ``rag_roots=``, ...; see
    ``ragtrace._shorthands`` and docs/configuration.md). ``judge`` is a ``ragtrace.judges.Judge`` or one of
    the ``RAGTRACE_JUDGE`` values ``"auto"``, ``"openai"``, ``"offline"``, ``"tiered"``. Score metrics go to
    ``meter_provider`` when given, else to a new MeterProvider with ``metric_readers`` or an OTLP
    metric exporter (``export_metrics=False`` or ``OTEL_METRICS_EXPORTER=none``: no metrics).
    ``set_global`` makes the providers the OpenTelemetry globals too; OpenTelemetry takes a global
    provider once per process, so when one is already set (an earlier ``configure()``, the app) this
    warns (``RuntimeWarning``, naming the fix) and only ragtrace's decorators use the new provider.

    Raises ``ConfigurationError`` at once, naming the fix, for any wrong setting; a failed call leaves
    no thread or provider behind.
    """
    # Everything that only checks settings first: nothing runs yet that a mistake would leave behind.
    options = merge("configure()", shorthands, SETUP, scoring=scoring, capture=capture, join=join)
    settings = options.capture.resolve()
    span_limits = _span_limits(settings)
    resource = _resource(service_name, resource_attributes)
    # Resolved here, so a wrong scoring setting raises before anything starts; the processor gets the
    # values back with every field given, so the judge is built once.
    scored = options.scoring.resolve()
    built: CountingSpanExporter | None = None
    watched: WatchedSession | None = None
    if exporter is None:
        watched = watchable()  # how the last export ended, so the WARNING about dropped spans can name the fix
        exporter = built = CountingSpanExporter(otlp_span_exporter(endpoint, protocol, headers, watched))
    elif endpoint is not None or protocol is not None:
        raise ConfigurationError("pass either exporter= or endpoint=/protocol=, not both")
    owns_meter_provider = False
    metric_exporter: Any = None
    downstream: SpanProcessor | None = None
    try:
        # From here on parts start threads (the metric reader's, the batch exporter's): if anything
        # fails, what was built is shut down before the error reaches the caller.
        if meter_provider is None and metrics_enabled(export_metrics, metric_readers):
            meter_provider, metric_exporter = meter_provider_for(resource, metric_readers, endpoint, protocol, headers)
            owns_meter_provider = True
        downstream = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        processor = ScoringSpanProcessor(
            downstream,
            scoring=scored.options(),
            join=options.join,
            meter_provider=meter_provider or metrics_api.NoOpMeterProvider(),
            service_name=_service_of(resource),
        )
    except BaseException:
        if downstream is not None:
            downstream.shutdown()
        if owns_meter_provider and meter_provider is not None:
            meter_provider.shutdown()  # type: ignore[attr-defined]
        raise
    if built is not None:
        # Only the exporters ragtrace built are cut at the shutdown deadline: the app's own are its own.
        cut = [built.inner, *([metric_exporter] if metric_exporter is not None else [])]
        target = _exporters.export_target(built.inner, endpoint)
        processor.export_deadline = ExportDeadline(built, cut, target, fix=lambda: fix_for(watched))
    provider = TracerProvider(resource=resource, span_limits=span_limits)
    provider.add_span_processor(processor)
    logs = None
    if set_global:
        set_globals(provider, meter_provider if owns_meter_provider else None)
        if built is not None and EvaluationOutput.from_env().log_records:  # to the endpoint the spans go to
            logs = set_global_logger_provider(
                _exporters.evaluation_logger_provider(resource, endpoint, protocol, headers)
            )
    return activate(provider, processor, meter_provider, settings, owns=True, owns_meter=owns_meter_provider, logs=logs)


def instrument(
    tracer_provider: TracerProvider,
    downstream: SpanProcessor | SpanExporter,
    *,
    scoring: ScoringOptions | None = None,
    capture: CaptureOptions | None = None,
    join: JoinOptions | None = None,
    meter_provider: metrics_api.MeterProvider | None = None,
    **shorthands: Unpack[SetupKeywords],
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

    ``scoring``, ``capture``, ``join`` and the flat keywords are taken as by ``configure()``.
    """
    if not isinstance(tracer_provider, TracerProvider):
        raise ConfigurationError(
            f"instrument() needs an opentelemetry.sdk.trace.TracerProvider, not {type(tracer_provider).__name__}"
        )
    if has_open_handle(tracer_provider):
        raise ConfigurationError(
            "instrument(): this TracerProvider already has ragtrace's scoring processor (an earlier "
            "instrument() or configure() whose handle is not shut down), and a second one would get no "
            "records to score: call instrument() once per provider, with a downstream that fans out to "
            "every exporter (SynchronousMultiSpanProcessor with a BatchSpanProcessor each), or shut the "
            "first handle down"
        )
    options = merge("instrument()", shorthands, SETUP, scoring=scoring, capture=capture, join=join)
    settings = options.capture.resolve()
    processor = ScoringSpanProcessor(
        downstream,
        scoring=options.scoring,
        join=options.join,
        meter_provider=meter_provider,
        service_name=_service_of(tracer_provider.resource),
    )
    tracer_provider.add_span_processor(processor)
    return activate(tracer_provider, processor, meter_provider, settings, owns=False, owns_meter=False)


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
