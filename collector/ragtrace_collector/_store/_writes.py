"""The store's writes: one batch's rows as upserts keyed on the primary key, and pruning by age.

Every write is an upsert, so a retried export never duplicates a row; the hot path is one ``executemany`` per
table, binding tuples in the schema's column order. The functions run inside the caller's transaction on the
connection it gives them (``Store`` holds its locks and commits).

A carrier's late scores may arrive before or after the RAG record they belong to, without its route: either
way the scores take the route (and, when they have none, the service) from the record once both are stored.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Sequence

from ragtrace_collector._otlp import Batch, Row
from ragtrace_collector._store._alert_schema import ALERT_ACKS, ALERT_SILENCES, ALERTS
from ragtrace_collector._store._queries import span_ids_where
from ragtrace_collector._store._schema import (
    JOIN_PENDING,
    RAG_COLUMNS,
    RAG_RECORDS,
    SCORE_COLUMNS,
    SCORES,
    SPAN_COLUMNS,
    SPANS,
)

__all__ = ["prune", "upsert"]

# rag_records columns that server-side scoring fills: a retried export of the unscored span must not erase them.
_KEEP_WHEN_NULL = ("decision", "judge", "calls", "prompt_tokens", "completion_tokens", "seconds", "reason")


def _upsert_sql(table: str, columns: Sequence[str], pk: Sequence[str], keep_when_null: Sequence[str] = ()) -> str:
    names = ", ".join(columns)
    # Positional parameters: binding tuples is markedly cheaper than binding dicts by name.
    marks = ", ".join("?" for _ in columns)
    updates = ", ".join(
        f"{c} = COALESCE(excluded.{c}, {table}.{c})" if c in keep_when_null else f"{c} = excluded.{c}"
        for c in columns
        if c not in pk
    )
    return f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT ({', '.join(pk)}) DO UPDATE SET {updates}"


_span_values = operator.itemgetter(*SPAN_COLUMNS)
_rag_values = operator.itemgetter(*RAG_COLUMNS)
_score_values = operator.itemgetter(*SCORE_COLUMNS)
_SPANS_SQL = _upsert_sql(SPANS, list(SPAN_COLUMNS), ["span_id"])
_RAG_SQL = _upsert_sql(RAG_RECORDS, list(RAG_COLUMNS), ["span_id"], _KEEP_WHEN_NULL)
_SCORES_SQL = _upsert_sql(SCORES, list(SCORE_COLUMNS), ["span_id", "metric"])
# A carrier's late scores arrive without the RAG route; take it (and the service) from the target's record.
_FILL_ROUTE_SQL = (
    f"UPDATE {SCORES} SET "
    f"route = (SELECT r.route FROM {RAG_RECORDS} r WHERE r.span_id = {SCORES}.span_id), "
    f"service = COALESCE(service, (SELECT r.service FROM {RAG_RECORDS} r WHERE r.span_id = {SCORES}.span_id)) "
    f"WHERE span_id = ? AND route IS NULL"
)


# A trace's pending row grows with each of its spans; a retried export counts twice (the bounds are approximate).
_PENDING_SQL = (
    f"INSERT INTO {JOIN_PENDING} (trace_id, first_ns, last_ns, spans, bytes) VALUES (?, ?, ?, ?, ?) "
    f"ON CONFLICT (trace_id) DO UPDATE SET first_ns = min(first_ns, excluded.first_ns), "
    f"last_ns = max(last_ns, excluded.last_ns), spans = spans + excluded.spans, bytes = bytes + excluded.bytes"
)
_SETTLED_SQL = f"DELETE FROM {JOIN_PENDING} WHERE trace_id = ?"


def _pending(rows: Sequence[Row]) -> list[tuple[str, int, int, int, int]]:
    """One row per trace: a batch usually holds several spans of one trace."""
    traces: dict[str, list[int]] = {}
    for row in rows:
        found = traces.get(row["trace_id"])
        if found is None:
            traces[row["trace_id"]] = [row["received_ns"], row["received_ns"], 1, row["bytes"]]
        else:
            found[0] = min(found[0], row["received_ns"])
            found[1] = max(found[1], row["received_ns"])
            found[2] += 1
            found[3] += row["bytes"]
    return [(trace_id, *values) for trace_id, values in traces.items()]  # type: ignore[misc]


def upsert(conn: sqlite3.Connection, batch: Batch) -> None:
    """Upsert the batch's rows on ``conn``, inside the caller's transaction."""
    if batch.spans:
        conn.executemany(_SPANS_SQL, map(_span_values, batch.spans))
    if batch.rag_records:
        conn.executemany(_RAG_SQL, map(_rag_values, batch.rag_records))
    if batch.scores:
        conn.executemany(_SCORES_SQL, map(_score_values, batch.scores))
        orphans = {(row["span_id"],) for row in batch.scores if row["route"] is None}
        if orphans:
            conn.executemany(_FILL_ROUTE_SQL, sorted(orphans))
    if batch.rag_records:
        # A record that arrives after its carrier: give the carrier's scores their route.
        _fill_routes_for(conn, batch.rag_records)
    if batch.settled:
        conn.executemany(_SETTLED_SQL, [(trace_id,) for trace_id in batch.settled])
    if batch.pending:
        conn.executemany(_PENDING_SQL, _pending(batch.pending))


def _fill_routes_for(conn: sqlite3.Connection, records: Sequence[Row]) -> None:
    pending = span_ids_where(conn, SCORES, "route IS NULL", [row["span_id"] for row in records])
    if pending:
        conn.executemany(_FILL_ROUTE_SQL, [(span_id,) for span_id in sorted(pending)])


def prune(conn: sqlite3.Connection, older_than_ns: int) -> dict[str, int]:
    """Delete every row older than ``older_than_ns`` (span end, record/score/alert time, a silence's end, an
    acknowledgement's time); return counts. Each group's current state (``alert_groups``) is kept."""
    deleted: dict[str, int] = {}
    for table, column in (
        (SPANS, "end_ns"),
        (RAG_RECORDS, "time_ns"),
        (SCORES, "time_ns"),
        (ALERTS, "time_ns"),
        (ALERT_SILENCES, "ends_ns"),
        (ALERT_ACKS, "time_ns"),
    ):
        cursor = conn.execute(f"DELETE FROM {table} WHERE {column} < ?", (older_than_ns,))
        deleted[table] = cursor.rowcount
    return deleted
