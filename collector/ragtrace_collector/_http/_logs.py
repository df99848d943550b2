"""What both receivers do with a logs export (``POST /v1/logs``, gRPC ``LogsService/Export``): store the
evaluations it carries, and the reply.

Each ``gen_ai.evaluation.result`` record becomes a ``scores`` row (``_otlp.decode_logs_*``), committed through
the pipeline's single writer thread before the reply; other records are counted and dropped. Logs are decoded
in a thread of this process, not in the decode processes the spans use: an app sends one record per metric per
scored call, a small fraction of its span bytes, so they would gain nothing from another process.
"""

from __future__ import annotations

import asyncio
import logging
import time

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

from ragtrace_collector._otlp import LogBatch, decode_logs_json, decode_logs_protobuf
from ragtrace_collector._pipeline import Pipeline

__all__ = ["LOGS_PATH", "accept_logs", "logs_reply"]

_log = logging.getLogger("ragtrace_collector")

LOGS_PATH = "/v1/logs"
"""The OTLP/HTTP logs path."""


async def accept_logs(pipeline: Pipeline, body: bytes, *, json_body: bool = False) -> LogBatch:
    """Decode a logs export (protobuf, or OTLP/JSON with ``json_body``) and commit its evaluations; return only
    after the commit. Raises ``OtlpDecodeError`` (not a logs export) or ``StoreError`` (nothing committed)."""
    decode = decode_logs_json if json_body else decode_logs_protobuf
    batch = await asyncio.to_thread(decode, body, time.time_ns())
    if batch.scores:
        await pipeline.commit(batch.store_batch())
    if pipeline.stats is not None:
        pipeline.stats.logs_exported(batch.stored, batch.ignored, batch.rejected)
    if batch.ignored:
        _log.debug("%d log record(s) that are not evaluations ignored", batch.ignored)
    if batch.error_message:
        _log.warning("logs partial success: %s", batch.error_message)
    return batch


def logs_reply(batch: LogBatch) -> ExportLogsServiceResponse:
    """The OTLP reply: empty (full success), or ``partial_success`` with the records rejected and why; with none
    rejected, a non-empty message is a warning (the spec's way), e.g. a score stored without its value."""
    reply = ExportLogsServiceResponse()
    message = batch.error_message
    if batch.rejected or message:
        reply.partial_success.rejected_log_records = batch.rejected
        reply.partial_success.error_message = message
    return reply
