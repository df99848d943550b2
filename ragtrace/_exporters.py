"""The OTLP exporters ``configure()`` builds: spans, metrics and evaluation log records over http/protobuf or grpc.

Arguments win over the ``OTEL_EXPORTER_OTLP_*`` variables (the exporters read those themselves when an
argument is not given); a wrong protocol or endpoint raises ``ConfigurationError`` naming the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExporter

from ragtrace import environment_variables as env
from ragtrace._exceptions import ConfigurationError
from ragtrace._secrets import strip_url

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader

    from ragtrace._export_failure import WatchedSession

PROTOCOLS: Final = ("http/protobuf", "grpc")
"""OTLP protocols ``configure(protocol=...)`` accepts."""

_TRACES_PATH: Final = "/v1/traces"
_METRICS_PATH: Final = "/v1/metrics"
_LOGS_PATH: Final = "/v1/logs"


def _protocol(protocol: str | None, signal: str) -> str:
    if protocol:
        if protocol.strip() not in PROTOCOLS:
            raise ConfigurationError(f"protocol={protocol!r} is not supported: pass 'http/protobuf' or 'grpc'")
        return protocol.strip()
    for variable in (f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = (os.environ.get(variable) or "").strip()
        if value in PROTOCOLS:
            return value
        if value:
            return env.invalid(variable, value, "use 'http/protobuf' or 'grpc'", "http/protobuf")
    return "http/protobuf"


def _http_url(endpoint: str, path: str) -> str:
    # Like OTEL_EXPORTER_OTLP_ENDPOINT: a base URL gets the signal path; a full signal URL is kept.
    base = endpoint.rstrip("/")
    if base.endswith(path):
        return base
    if base.endswith((_TRACES_PATH, _METRICS_PATH, _LOGS_PATH)):
        base = base.rsplit("/v1/", 1)[0]
    return base + path


def _check_endpoint(endpoint: str) -> None:
    if not endpoint.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"endpoint={strip_url(endpoint)!r} is not a URL: write e.g. http://127.0.0.1:4318 (http/protobuf) "
            "or http://127.0.0.1:4317 (grpc)"
        )


def otlp_span_exporter(
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
    session: WatchedSession | None = None,
) -> SpanExporter:
    """The OTLP span exporter for ``protocol``; over http/protobuf it sends through ``session`` when given (a
    ``WatchedSession``, so a failure can be explained); the gRPC exporter takes no session."""
    chosen = _protocol(protocol, "TRACES")
    if endpoint is not None:
        _check_endpoint(endpoint)
    if chosen == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        insecure = endpoint.startswith("http://") if endpoint is not None else None
        return GrpcSpanExporter(endpoint=endpoint, insecure=insecure, headers=dict(headers) if headers else None)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

    url = _http_url(endpoint, _TRACES_PATH) if endpoint is not None else None
    return HttpSpanExporter(endpoint=url, headers=dict(headers) if headers else None, session=session)


def metrics_enabled(export_metrics: bool | None, readers: Sequence[MetricReader] | None) -> bool:
    if readers:
        return True
    if export_metrics is not None:
        return export_metrics
    return os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() != "none"


def meter_provider_for(
    resource: Resource,
    readers: Sequence[MetricReader] | None,
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
) -> tuple[MeterProvider, Any]:
    """The MeterProvider ``configure`` builds, and the OTLP metric exporter it built for it (``None``
    when the caller gave the readers)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    metric_exporter: Any = None
    if not readers:
        chosen = _protocol(protocol, "METRICS")
        hdrs = dict(headers) if headers else None
        if chosen == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcMetricExporter,
            )

            insecure = endpoint.startswith("http://") if endpoint is not None else None
            metric_exporter = GrpcMetricExporter(endpoint=endpoint, insecure=insecure, headers=hdrs)
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter as HttpMetricExporter,
            )

            url = _http_url(endpoint, _METRICS_PATH) if endpoint is not None else None
            metric_exporter = HttpMetricExporter(endpoint=url, headers=hdrs)
        readers = [PeriodicExportingMetricReader(metric_exporter)]
    return MeterProvider(resource=resource, metric_readers=list(readers)), metric_exporter


def evaluation_logger_provider(
    resource: Resource, endpoint: str | None, protocol: str | None, headers: Mapping[str, str] | None
) -> LoggerProvider:
    """The LoggerProvider ``configure`` builds for evaluation log records (``RAGTRACE_EVALUATION_LOGS``): a
    batch of OTLP log records to the span exporter's endpoint, protocol and headers (``/v1/logs`` over http)."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter

    chosen = _protocol(protocol, "LOGS")
    hdrs = dict(headers) if headers else None
    exporter: LogRecordExporter
    if chosen == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

        insecure = endpoint.startswith("http://") if endpoint is not None else None
        exporter = GrpcLogExporter(endpoint=endpoint, insecure=insecure, headers=hdrs)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter

        exporter = HttpLogExporter(
            endpoint=_http_url(endpoint, _LOGS_PATH) if endpoint is not None else None, headers=hdrs
        )
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    return provider


def export_target(exporter: SpanExporter, endpoint: str | None) -> str:
    """Where ``exporter`` sends spans, for messages: the endpoint given, else the one the exporter
    resolved from ``OTEL_EXPORTER_OTLP_*``; without the URL's credentials (the message is logged)."""
    return strip_url(endpoint or getattr(exporter, "_endpoint", None) or "the OTLP endpoint")
