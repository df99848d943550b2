"""Decode OTLP trace and logs exports (protobuf or JSON) into plain rows for the store. Pure: no I/O.

``decode_protobuf`` and ``decode_json`` return a ``Batch``: the rows of the ``spans``, ``rag_records`` and
``scores`` tables (see docs/collector.md for the schema) plus how many spans were rejected and why.

Bad input never loses what was good. A body whose wire structure is broken raises ``OtlpDecodeError`` (the
sender gets a 400 and must not retry). A body whose structure is sound but where one span cannot be parsed
(invalid UTF-8 in a string field, a wrong id length, a JSON value of the wrong type, a value nested hundreds of
levels deep) keeps every other span and counts the bad one in ``Batch.rejected``: the receivers turn that into
an OTLP partial-success reply.

``decode_logs_protobuf`` and ``decode_logs_json`` return a ``LogBatch``: one ``scores`` row per evaluation log
record (event ``gen_ai.evaluation.result``), stored like the span event it stands for, and how many records were
ignored (not evaluations) or rejected, with the same rules for bad input.

The parts: ``_decode.py`` (entry points), ``_salvage.py`` (a partly bad protobuf body), ``_json_ids.py``
(OTLP/JSON ids), ``_json_depth.py`` (OTLP/JSON nested too deeply for the json parser), ``_rows.py`` (spans to
rows), ``_keys.py`` (which attribute is a document or a score), ``_score_row.py`` (a score's row, for spans and
log records alike), ``_values.py`` (OTLP values as Python values), ``_batch.py`` (the result), ``_cost.py``
(what a body will cost to decode, told before decoding it); for logs,
``_logs.py`` (entry points), ``_log_salvage.py``, ``_log_rows.py`` (records to rows), ``_log_batch.py``.
"""

from __future__ import annotations

from ragtrace_collector._otlp._batch import (
    SOURCE_APP,
    SOURCE_CARRIER,
    SOURCE_COLLECTOR,
    SOURCE_LOG,
    Batch,
    OtlpDecodeError,
    Row,
)
from ragtrace_collector._otlp._cost import decoded_cost
from ragtrace_collector._otlp._decode import (
    decode_json,
    decode_protobuf,
    json_request,
    rows_from_request,
    salvage_request,
)
from ragtrace_collector._otlp._log_batch import LogBatch
from ragtrace_collector._otlp._logs import decode_logs_json, decode_logs_protobuf
from ragtrace_collector._otlp._rows import chunks_of, route_of
from ragtrace_collector._otlp._values import any_value, attributes

__all__ = [
    "SOURCE_APP",
    "SOURCE_CARRIER",
    "SOURCE_COLLECTOR",
    "SOURCE_LOG",
    "Batch",
    "LogBatch",
    "OtlpDecodeError",
    "Row",
    "any_value",
    "attributes",
    "chunks_of",
    "decode_json",
    "decode_logs_json",
    "decode_logs_protobuf",
    "decode_protobuf",
    "decoded_cost",
    "json_request",
    "route_of",
    "rows_from_request",
    "salvage_request",
]
