"""Salvage for logs: the wire structure is sound but some log record inside does not parse (e.g. bad UTF-8).

The body's fields are walked by hand (``_salvage``'s reader) down to each record, so that every record that parses
is kept and each one that does not is rejected alone; a broken structure refuses the body as a whole.
"""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from ragtrace_collector._otlp._log_batch import LogBatch, LogPart
from ragtrace_collector._otlp._salvage import WIRE_LEN, fields, parse_or_none

__all__ = ["salvage_log_parts"]

# Field numbers from opentelemetry/proto/{collector/logs,logs}/v1/*.proto, read from the descriptors.
_RESOURCE_LOGS = ExportLogsServiceRequest.DESCRIPTOR.fields_by_name["resource_logs"].number
_RESOURCE = ResourceLogs.DESCRIPTOR.fields_by_name["resource"].number
_SCOPE_LOGS = ResourceLogs.DESCRIPTOR.fields_by_name["scope_logs"].number
_SCOPE = ScopeLogs.DESCRIPTOR.fields_by_name["scope"].number
_LOG_RECORDS = ScopeLogs.DESCRIPTOR.fields_by_name["log_records"].number

_Scope = tuple[bytes, list[bytes]]


def salvage_log_parts(body: bytes, batch: LogBatch) -> list[LogPart]:
    """The records of ``body`` that parse, by resource and scope; each one that does not is rejected in ``batch``.

    Raises ``OtlpDecodeError`` when the wire structure itself is broken (nothing is kept then).
    """
    walked: list[tuple[bytes, list[_Scope]]] = []
    # Walk the whole structure first, so that a broken body is refused as a whole (nothing half-stored).
    for number, wire, payload in fields(body):
        if number != _RESOURCE_LOGS or wire != WIRE_LEN:
            continue  # unknown field: ignored, as protobuf does
        assert isinstance(payload, bytes)
        walked.append(_resource_logs(payload))
    parts: list[LogPart] = []
    for resource_bytes, scopes in walked:
        resource = parse_or_none(Resource, resource_bytes)
        if resource is None:
            batch.reject(0, "resource not decodable (records kept without a service)")
            resource = Resource()
        for scope_bytes, payloads in scopes:
            scope = parse_or_none(InstrumentationScope, scope_bytes) or InstrumentationScope()
            good: list[LogRecord] = []
            for payload in payloads:
                record = parse_or_none(LogRecord, payload)
                if record is None:
                    batch.reject(1, "log record not decodable (malformed field or invalid UTF-8)")
                else:
                    good.append(record)
            parts.append((resource, scope, good))
    return parts


def _resource_logs(payload: bytes) -> tuple[bytes, list[_Scope]]:
    resource = b""
    scopes: list[_Scope] = []
    for number, wire, value in fields(payload):
        if wire != WIRE_LEN:
            continue
        assert isinstance(value, bytes)
        if number == _RESOURCE:
            resource = value
        elif number == _SCOPE_LOGS:
            scopes.append(_scope_logs(value))
    return resource, scopes


def _scope_logs(payload: bytes) -> _Scope:
    scope = b""
    records: list[bytes] = []
    for number, wire, value in fields(payload):
        if wire != WIRE_LEN:
            continue
        assert isinstance(value, bytes)
        if number == _SCOPE:
            scope = value
        elif number == _LOG_RECORDS:
            records.append(value)
    return scope, records
