"""Records' metadata as rows (``record_metadata``), so that the pages' ``meta=key:value`` filter is an index
lookup rather than a read of every record's span attributes.

What a record's metadata is: each key of its span's ``metadata`` attribute (OpenInference's, and what
``ragtrace.record(metadata=...)`` writes: a JSON object) whose value is a string, number or boolean, and the
span's ``user.id`` and ``session.id``. ``fill`` writes those rows from the spans the store holds, in the SQL of the
store's engine, so the receivers (each batch's records) and the migration that adds the table (every record
stored before it) derive them the same way; a value compares as text, as the filter did when it read the
attributes (``CAST`` on SQLite, ``->>`` on PostgreSQL). A record whose span is not stored has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ragtrace import semconv
from ragtrace_collector._store.dialect import SQLITE, AnyConnection, Dialect, dialect_of
from ragtrace_collector._store.schema import RAG_RECORDS, RECORD_METADATA, SPANS

__all__ = ["ATTRIBUTES", "DRIVEN", "clause", "driving", "fill"]

ATTRIBUTES: Final = (semconv.USER_ID, semconv.SESSION_ID)
"""Span attributes that are metadata too (``meta=user.id:alice``)."""

DRIVEN: Final = f"{RECORD_METADATA} m"
"""The metadata rows as a query that walks them names them (``driving``)."""

_IDS_PER_STATEMENT: Final = 500  # well under SQLite's limit on bound parameters


def _statements(dialect: Dialect, where: str) -> list[str]:
    """The INSERTs that add the metadata rows of the records ``where`` keeps (over ``rag_records r``, joined to
    their span ``p``), skipping rows already there."""
    records = f"{RAG_RECORDS} r JOIN {SPANS} p ON p.span_id = r.span_id"
    # Only spans whose text names the attribute are parsed (a LIKE is a scan of bytes; a JSON parse of a span's
    # attributes costs several times more, and most spans carry no metadata).
    names = {semconv.METADATA: f"p.attributes LIKE '%\"{semconv.METADATA}\"%'"}
    names.update({name: f"p.attributes LIKE '%\"{name}\"%'" for name in ATTRIBUTES})
    if dialect is SQLITE:
        insert = f"INSERT OR IGNORE INTO {RECORD_METADATA} (span_id, key, value, time_ns)"
        # Nested CASEs: SQLite's json_extract raises on text that is not JSON, so nothing reads it unchecked.
        metadata = (
            "CASE WHEN json_valid(p.attributes) THEN CASE WHEN json_valid(json_extract(p.attributes, '$.metadata')) "
            "THEN json_extract(p.attributes, '$.metadata') END END"
        )
        statements = [
            f"{insert} SELECT r.span_id, j.key, CAST(j.value AS TEXT), "
            f"r.time_ns FROM {records}, json_each({metadata}) j WHERE {where} AND {names[semconv.METADATA]} "
            "AND j.key IS NOT NULL "
            "AND j.type NOT IN ('object', 'array', 'null')"
        ]
        for name in ATTRIBUTES:
            path = f"'$.\"{name}\"'"
            value = f"CASE WHEN json_valid(p.attributes) THEN json_extract(p.attributes, {path}) END"
            kind = f"CASE WHEN json_valid(p.attributes) THEN json_type(p.attributes, {path}) END"
            statements.append(
                f"{insert} SELECT r.span_id, '{name}', CAST({value} AS TEXT), "
                f"r.time_ns FROM {records} WHERE {where} AND {names[name]} "
                f"AND {kind} IN ('text', 'integer', 'real', 'true', 'false')"
            )
        return statements
    # PostgreSQL: ragtrace_jsonb (a migration's function) is NULL for text that is not JSON.
    insert = f"INSERT INTO {RECORD_METADATA} (span_id, key, value, time_ns)"
    attributes = "ragtrace_jsonb(p.attributes)"
    metadata = f"ragtrace_jsonb({attributes} ->> 'metadata')"
    statements = [
        f"{insert} SELECT r.span_id, j.key, j.value #>> '{{}}', r.time_ns FROM {records} "
        f"CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof({metadata}) = 'object' THEN {metadata} END) j "
        f"WHERE {where} AND {names[semconv.METADATA]} AND jsonb_typeof(j.value) IN ('string', 'number', 'boolean') "
        "ON CONFLICT DO NOTHING"
    ]
    for name in ATTRIBUTES:
        statements.append(
            f"{insert} SELECT r.span_id, '{name}', {attributes} ->> '{name}', r.time_ns FROM {records} "
            f"WHERE {where} AND {names[name]} "
            f"AND jsonb_typeof({attributes} -> '{name}') IN ('string', 'number', 'boolean') "
            "ON CONFLICT DO NOTHING"
        )
    return statements


def fill(conn: AnyConnection, span_ids: Sequence[str] | None = None) -> None:
    """Add the metadata rows of the records ``span_ids`` (every stored record when None), inside the caller's
    transaction; rows already there stay."""
    dialect = dialect_of(conn)
    if span_ids is None:
        for sql in _statements(dialect, "1 = 1"):
            conn.execute(sql)
        return
    for start in range(0, len(span_ids), _IDS_PER_STATEMENT):
        part = sorted(span_ids[start : start + _IDS_PER_STATEMENT])
        where = f"r.span_id IN ({', '.join('?' for _ in part)})"
        for sql in _statements(dialect, where):
            conn.execute(sql, part)


def clause(key: str, value: str) -> tuple[str, list[Any]]:
    """The condition (over ``rag_records r``) keeping a record whose metadata has ``key`` = ``value``, and its
    arguments: the records are found through the index of (key, value), whatever their number."""
    return (
        f"r.span_id IN (SELECT m.span_id FROM {RECORD_METADATA} m WHERE m.key = ? AND m.value = ?)",
        [key, value],
    )


def driving(key: str, value: str) -> tuple[str, list[Any]]:
    """The same condition for a query that reads the records through their metadata rows (``DRIVEN`` joined to
    ``rag_records r``): walking the index of (key, value, time_ns, span_id) backwards gives the newest records
    first, so a page reads a page's worth of rows however many records have the value (the ``IN`` of ``clause``
    reads them all, to sort them: 1,000 of a million records cost 90 ms)."""
    return "m.key = ? AND m.value = ?", [key, value]
