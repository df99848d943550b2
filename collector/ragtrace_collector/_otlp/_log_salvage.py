"""Salvage for logs: the wire structure is sound but some log record inside does not parse (e.g. bad UTF-8).

The body's fields are walked by hand (``_salvage.walk``, as for spans) down to each record, so that every record
that parses is kept and each one that does not is rejected alone; a broken structure refuses the body as a whole.
"""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from ragtrace_collector._otlp._log_batch import LogBatch, LogPart
from ragtrace_collector._otlp._salvage import Layout, parsed, walk

__all__ = ["salvage_log_parts"]

_LOGS = Layout.of(ExportLogsServiceRequest, "resource_logs", ResourceLogs, "scope_logs", ScopeLogs, "log_records")
"""Field numbers from opentelemetry/proto/{collector/logs,logs}/v1/*.proto."""


def salvage_log_parts(body: bytes, batch: LogBatch) -> list[LogPart]:
    """The records of ``body`` that parse, by resource and scope; each one that does not is rejected in ``batch``.

    Raises ``OtlpDecodeError`` when the wire structure itself is broken (nothing is kept then).
    """
    walked = walk(body, _LOGS)
    return parsed(walked, LogRecord, batch, what="log record", without_resource="records kept without a service")
