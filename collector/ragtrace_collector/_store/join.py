"""The joiner's reads on the store's connection (the caller holds the store's lock). Writes go through
``Store.write`` (``Batch.settled``), so a join's records and the end of its wait commit together; which traces
are due, and taken to be joined, is ``claims.py``'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace_collector._store.dialect import AnyConnection
from ragtrace_collector._store.schema import JOIN_PENDING, RAG_COLUMNS, RAG_RECORDS, SPANS

__all__ = ["existing_records", "oldest_over", "spans_of", "totals", "undecided_since"]


def totals(conn: AnyConnection) -> tuple[int, int]:
    """Traces waiting, and the approximate bytes of their RAG spans."""
    count, size = conn.execute(f"SELECT count(*), COALESCE(SUM(bytes), 0) FROM {JOIN_PENDING}").fetchone()
    return int(count), int(size)


def oldest_over(conn: AnyConnection, max_traces: int, max_bytes: int) -> list[str]:
    """The oldest waiting traces to drop so that at most ``max_traces`` and ``max_bytes`` remain."""
    count, size = totals(conn)
    dropped: list[str] = []
    if count <= max_traces and size <= max_bytes:
        return dropped
    for trace_id, spans_bytes in conn.execute(f"SELECT trace_id, bytes FROM {JOIN_PENDING} ORDER BY first_ns"):
        if count <= max_traces and size <= max_bytes:
            break
        dropped.append(str(trace_id))
        count -= 1
        size -= int(spans_bytes)
    return dropped


def spans_of(conn: AnyConnection, trace_id: str, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` stored spans of ``trace_id`` (``spans(trace_id)`` is indexed)."""
    cursor = conn.execute(
        f"SELECT span_id, parent_span_id, name, service, start_ns, end_ns, status_code, attributes, received_ns "
        f"FROM {SPANS} WHERE trace_id = ? LIMIT ?",
        (trace_id, limit),
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def existing_records(conn: AnyConnection, span_ids: Sequence[str]) -> set[str]:
    """The span ids among ``span_ids`` that already have a RAG record (joined before, or ragtrace's own)."""
    if not span_ids:
        return set()
    marks = ", ".join("?" for _ in span_ids)
    cursor = conn.execute(f"SELECT span_id FROM {RAG_RECORDS} WHERE span_id IN ({marks})", list(span_ids))
    return {str(row[0]) for row in cursor}


def undecided_since(conn: AnyConnection, received_ns: int, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` RAG records still undecided whose span arrived at or after ``received_ns``: what a
    collector that stopped (or crashed) between storing and scoring them left unscored."""
    cursor = conn.execute(
        f"SELECT {', '.join('r.' + c for c in RAG_COLUMNS)} FROM {RAG_RECORDS} r "
        f"JOIN {SPANS} s ON s.span_id = r.span_id "
        "WHERE r.decision IS NULL AND s.received_ns >= ? LIMIT ?",
        (received_ns, limit),
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]
