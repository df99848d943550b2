"""Ingest: one batch's rows as upserts keyed on the primary key, and the reads the receivers make beside them.

Every write is an upsert, so a retried export never duplicates a row; the hot path is one ``executemany`` per
table, binding tuples in the schema's column order. The functions run inside the caller's transaction on the
connection it gives them (``Store`` holds its locks and commits).

A carrier's late scores, and scores from evaluation log records, may arrive before or after the RAG record they
belong to, without its route: either way the scores take the route (and, when they have none, the service) from
the record once both are stored. A score from a log record and one from a span for the same ``(span_id, metric)``
are one row, the span's, whichever came first (``_scores_sql``, ``_log_scores_sql``). Each record's metadata rows
are added from its span as it arrives (``metadata.fill``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragtrace_collector._otlp import SOURCE_LOG, Batch, Row
from ragtrace_collector._store import metadata, rollups
from ragtrace_collector._store.dialect import POSTGRESQL, SQLITE, AnyConnection, Dialect, dialect_of
from ragtrace_collector._store.schema import (
    JOIN_PENDING,
    RAG_COLUMNS,
    RAG_RECORDS,
    SCORE_COLUMNS,
    SCORES,
    SPAN_COLUMNS,
    SPANS,
)

__all__ = ["rag_record", "span_ids_where", "upsert"]

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
_SCORE_KEY = ("span_id", "metric")


# Scores from evaluation log records (``Batch.log_scores``) and from spans share the key (span_id, metric): an app
# that sends an evaluation both as a span event and as a log record gets one row. The span's row wins, whichever
# arrives first; the log record's fills only what the span left NULL (a span without events carries no
# explanation or error type), and only when both hold the same value, so they are the same evaluation. A row
# written again with the same value (a retried export) never loses a column the new write lacks, so the merged
# row stays whole whatever the order of retries.
def _same_value(dialect: Dialect) -> str:
    return f"{SCORES}.value {dialect.same} excluded.value"


def _scores_upsert(update: Callable[[str], str]) -> str:
    """An upsert of a ``scores`` row keyed on (span_id, metric), each other column set to ``update(column)``."""
    names = ", ".join(SCORE_COLUMNS)
    marks = ", ".join("?" for _ in SCORE_COLUMNS)
    key = ", ".join(_SCORE_KEY)
    updates = ", ".join(f"{c} = {update(c)}" for c in SCORE_COLUMNS if c not in _SCORE_KEY)
    return f"INSERT INTO {SCORES} ({names}) VALUES ({marks}) ON CONFLICT ({key}) DO UPDATE SET {updates}"


def _scores_sql(dialect: Dialect) -> str:
    """Scores from spans (and the collector's own): the new row, but a column it leaves NULL keeps the stored
    row's when both hold the same value (the same evaluation, e.g. one a log record brought first)."""
    same = _same_value(dialect)
    return _scores_upsert(lambda c: f"COALESCE(excluded.{c}, CASE WHEN {same} THEN {SCORES}.{c} END)")


def _log_scores_sql(dialect: Dialect) -> str:
    """Scores from log records: a row that came from a log record too is replaced (a retry, or a later record of
    the same evaluation; its route, which the store filled, kept); a row a span brought keeps every column and
    takes the log record's only where it is NULL and the values agree (the reverse of ``_scores_sql``)."""

    same = _same_value(dialect)

    def update(c: str) -> str:
        replaced = f"COALESCE(excluded.{c}, {SCORES}.{c})" if c == "route" else f"excluded.{c}"
        return (
            f"CASE WHEN {SCORES}.source = '{SOURCE_LOG}' THEN {replaced} "
            f"WHEN {same} THEN COALESCE({SCORES}.{c}, excluded.{c}) ELSE {SCORES}.{c} END"
        )

    return _scores_upsert(update)


_SCORES_SQL = {d.name: _scores_sql(d) for d in (SQLITE, POSTGRESQL)}
_LOG_SCORES_SQL = {d.name: _log_scores_sql(d) for d in (SQLITE, POSTGRESQL)}
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
    f"ON CONFLICT (trace_id) DO UPDATE SET "
    f"first_ns = CASE WHEN excluded.first_ns < {JOIN_PENDING}.first_ns "
    f"THEN excluded.first_ns ELSE {JOIN_PENDING}.first_ns END, "
    f"last_ns = CASE WHEN excluded.last_ns > {JOIN_PENDING}.last_ns "
    f"THEN excluded.last_ns ELSE {JOIN_PENDING}.last_ns END, "
    f"spans = {JOIN_PENDING}.spans + excluded.spans, bytes = {JOIN_PENDING}.bytes + excluded.bytes"
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


def _from_staging(sql: str, columns: dict[str, type], staging: str, key: int) -> str:
    """The upsert ``sql`` reading its rows from the staging table rather than from one row of parameters, in key
    order (rows locked in one order by every writer)."""
    values = f"VALUES ({', '.join('?' for _ in columns)})"
    order = ", ".join(list(columns)[:key])
    return sql.replace(values, f"SELECT {', '.join(columns)} FROM {staging} ORDER BY {order}", 1)


def _upsert_rows(
    conn: AnyConnection,
    dialect: Dialect,
    sql: str,
    table: str,
    columns: dict[str, type],
    key: int,
    rows: Iterable[tuple[Any, ...]],
) -> None:
    """Run the upsert ``sql`` for each row, in order. SQLite: ``executemany``. PostgreSQL: the first row of each
    key copied (``COPY``) into a staging table and upserted from it in one statement (a statement may not touch
    a row twice), then any later rows of a key one by one, in order: upserts of distinct keys commute, so the
    outcome is the rows' own order's. ``COPY`` and one statement cost a seventh of a statement per row from
    arrays (``unnest``) in bench/store_write.py's batches, and far less than a round trip a row."""
    if dialect is SQLITE:
        conn.executemany(sql, rows)
        return
    first: dict[Any, tuple[Any, ...]] = {}
    again: list[tuple[Any, ...]] = []
    for row in rows:
        found = row[:key]
        if found in first:
            again.append(row)
        else:
            first[found] = row
    if first:
        # In key order: concurrent batches then lock shared rows in one order, and cannot deadlock on them.
        ordered = [first[found] for found in sorted(first, key=lambda k: tuple("" if v is None else v for v in k))]
        with conn.staged(table, columns, ordered) as staging:
            conn.execute(_from_staging(sql, columns, staging, key))
    if again:
        conn.executemany(sql, again)


def upsert(conn: AnyConnection, batch: Batch) -> None:
    """Upsert the batch's rows on ``conn``, inside the caller's transaction."""
    dialect = dialect_of(conn)
    # SQLite: the rollups follow these writes by their difference (PostgreSQL's triggers follow them there).
    touched = _rollup_spans(batch) if dialect is SQLITE else []
    before = rollups.Snapshot.read(conn, touched) if touched else None
    if batch.spans:
        _upsert_rows(conn, dialect, _SPANS_SQL, SPANS, SPAN_COLUMNS, 1, map(_span_values, batch.spans))
    if batch.rag_records:
        _upsert_rows(conn, dialect, _RAG_SQL, RAG_RECORDS, RAG_COLUMNS, 1, map(_rag_values, batch.rag_records))
    if batch.scores:
        scores = map(_score_values, batch.scores)
        _upsert_rows(conn, dialect, _SCORES_SQL[dialect.name], SCORES, SCORE_COLUMNS, 2, scores)
    if batch.log_scores:
        log_scores = map(_score_values, batch.log_scores)
        _upsert_rows(conn, dialect, _LOG_SCORES_SQL[dialect.name], SCORES, SCORE_COLUMNS, 2, log_scores)
    # Late (carrier) and log-record scores arrive without the RAG route: take it from the record, if stored.
    orphans = {(row["span_id"],) for rows in (batch.scores, batch.log_scores) for row in rows if row["route"] is None}
    if orphans:
        conn.executemany(_FILL_ROUTE_SQL, sorted(orphans))
    if batch.rag_records:
        # A record that arrives after its carrier: give the carrier's scores their route.
        _fill_routes_for(conn, batch.rag_records)
        metadata.fill(conn, [row["span_id"] for row in batch.rag_records])
    if before is not None:
        rollups.apply_difference(conn, before, rollups.Snapshot.read(conn, touched))
    if batch.settled:
        conn.executemany(_SETTLED_SQL, [(trace_id,) for trace_id in batch.settled])
    if batch.pending:
        conn.executemany(_PENDING_SQL, _pending(batch.pending))


def _rollup_spans(batch: Batch) -> list[str]:
    """The spans whose scores or record the batch may change (a record's carrier scores get its service)."""
    return sorted({row["span_id"] for rows in (batch.scores, batch.log_scores, batch.rag_records) for row in rows})


def _fill_routes_for(conn: AnyConnection, records: Sequence[Row]) -> None:
    pending = span_ids_where(conn, SCORES, "route IS NULL", [row["span_id"] for row in records])
    if pending:
        conn.executemany(_FILL_ROUTE_SQL, [(span_id,) for span_id in sorted(pending)])


def span_ids_where(conn: AnyConnection, table: str, condition: str, span_ids: Sequence[str]) -> set[str]:
    """The span ids among ``span_ids`` of ``table``'s rows that meet ``condition`` (this module's own SQL)."""
    found: set[str] = set()
    # A few hundred ids a query: well under SQLite's limit on bound parameters.
    for start in range(0, len(span_ids), 500):
        part = list(span_ids[start : start + 500])
        marks = ", ".join("?" for _ in part)
        cursor = conn.execute(f"SELECT DISTINCT span_id FROM {table} WHERE {condition} AND span_id IN ({marks})", part)
        found.update(row[0] for row in cursor)
    return found


_RAG_RECORD_SQL = f"SELECT {', '.join(RAG_COLUMNS)} FROM {RAG_RECORDS} WHERE span_id = ?"


def rag_record(conn: AnyConnection, span_id: str) -> dict[str, Any] | None:
    """The stored RAG record of a span, or None."""
    row = conn.execute(_RAG_RECORD_SQL, (span_id,)).fetchone()
    return None if row is None else dict(zip(RAG_COLUMNS, row, strict=True))
