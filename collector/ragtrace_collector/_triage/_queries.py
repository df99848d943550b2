"""The triage pages' SQL: a page of records, the new ones, one record with its scores and claims (an
alert's are in ``_alert_queries``).

Every query is bounded and rides an index: the list walks ``rag_records`` newest first by ``time_ns``
(or ``service, time_ns``) and stops at ``limit``; score filters probe ``scores`` by its primary key
``(span_id, metric)``; paging is by keyset (``time_ns, span_id``), never ``OFFSET``. Connections are the
caller's (the routes open one read-only connection per request, on a worker thread).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace import _wire
from ragtrace_collector._triage._filters import RecordFilter

__all__ = [
    "RAG_FIELDS",
    "Page",
    "RecordDetail",
    "attach_scores",
    "last_row",
    "list_records",
    "newer_records",
    "record_detail",
    "services",
    "where_clause",
]

RAG_FIELDS = (
    "span_id", "trace_id", "service", "route", "time_ns", "query", "answer", "decision", "judge",
    "calls", "prompt_tokens", "completion_tokens", "seconds",
)  # fmt: skip
_SCORE_FIELDS = ("metric", "value", "label", "explanation", "reason", "error_type", "source")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of records, newest first, each with its scores by metric; ``next`` filters the next page."""

    records: list[dict[str, Any]]
    next: RecordFilter | None


@dataclass(frozen=True, slots=True)
class RecordDetail:
    """A record, its chunks, its scores (with claims where stored) and the tier that produced each score."""

    record: dict[str, Any]
    chunks: list[dict[str, Any]]
    scores: list[dict[str, Any]]


def where_clause(f: RecordFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    args: list[Any] = []
    if f.since_ns is not None:
        clauses.append("r.time_ns >= ?")
        args.append(f.since_ns)
    if f.until_ns is not None:
        clauses.append("r.time_ns <= ?")
        args.append(f.until_ns)
    if f.service:
        clauses.append("r.service = ?")
        args.append(f.service)
    if f.route:
        clauses.append("r.route = ?")
        args.append(f.route)
    if f.decision:
        clauses.append("r.decision = ?")
        args.append(f.decision)
    if f.before is not None:
        # The bound on time_ns alone is what the index ranges over; an OR around it would scan.
        clauses.append("r.time_ns <= ? AND (r.time_ns < ? OR r.span_id < ?)")
        args += [f.before[0], f.before[0], f.before[1]]
    for bound in f.scores:
        # The op comes from the parser's fixed set, never from the URL as text.
        clauses.append(
            f"EXISTS (SELECT 1 FROM scores s WHERE s.span_id = r.span_id AND s.metric = ? AND s.value {bound.op} ?)"
        )
        args += [bound.metric, bound.value]
    if f.text:
        pattern = "%" + f.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        clauses.append("(r.query LIKE ? ESCAPE '\\' OR r.answer LIKE ? ESCAPE '\\')")
        args += [pattern, pattern]
    for key, value in f.meta:
        # Raw UTF-8 like the stored JSON; CAST: a metadata value may be a number ("rank:3").
        path = "$." + json.dumps(key, ensure_ascii=False)
        clauses.append(
            "EXISTS (SELECT 1 FROM spans p WHERE p.span_id = r.span_id AND "
            "(CAST(json_extract(p.attributes, ?) AS TEXT) = ? "
            "OR (json_valid(json_extract(p.attributes, '$.metadata')) "
            "AND CAST(json_extract(json_extract(p.attributes, '$.metadata'), ?) AS TEXT) = ?)))"
        )
        args += [path, value, path, value]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def list_records(conn: sqlite3.Connection, f: RecordFilter) -> Page:
    """The records ``f`` selects, newest first, at most ``f.limit``, with their scores."""
    where, args = where_clause(f)
    cursor = conn.execute(
        f"SELECT {', '.join('r.' + c for c in RAG_FIELDS)} FROM rag_records r{where} "
        "ORDER BY r.time_ns DESC, r.span_id DESC LIMIT ?",
        [*args, f.limit + 1],
    )
    rows = [dict(zip(RAG_FIELDS, row, strict=True)) for row in cursor]
    more = len(rows) > f.limit
    rows = rows[: f.limit]
    attach_scores(conn, rows)
    last = rows[-1] if rows else None
    return Page(rows, f.page_after(last["time_ns"], last["span_id"]) if more and last else None)


def newer_records(conn: sqlite3.Connection, f: RecordFilter, after_row: int) -> tuple[list[dict[str, Any]], int, bool]:
    """Records ``f`` selects that the store received after row ``after_row`` (``last_row`` of the page the
    reader has), in the order they arrived, at most ``f.limit``; with the cursor to ask from next and
    whether more are waiting. Arrival order, not the records' own times: a record that arrives late
    with an older time is new to the reader too, and a burst larger than a page is taken page by page."""
    where, args = where_clause(f)
    newer = "r.rowid > ?"
    where = f"{where} AND {newer}" if where else f" WHERE {newer}"
    cursor = conn.execute(
        f"SELECT r.rowid, {', '.join('r.' + c for c in RAG_FIELDS)} FROM rag_records r{where} ORDER BY r.rowid LIMIT ?",
        [*args, after_row, f.limit + 1],
    )
    fetched = [(row[0], dict(zip(RAG_FIELDS, row[1:], strict=True))) for row in cursor]
    more = len(fetched) > f.limit
    fetched = fetched[: f.limit]
    rows = [row for _, row in fetched]
    attach_scores(conn, rows)
    # Past the filter's misses too: the next poll need not read them again. A cursor past the store's
    # newest row (the store was replaced, or pruned empty, and rowids start again) comes back to it.
    next_row = fetched[-1][0] if more else last_row(conn)
    return rows, next_row, more


def attach_scores(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    by_span: dict[str, dict[str, Any]] = {row["span_id"]: row for row in rows}
    for row in rows:
        row["scores"] = {}
    if not by_span:
        return
    marks = ", ".join("?" for _ in by_span)
    for span_id, metric, value, label in conn.execute(
        f"SELECT span_id, metric, value, label FROM scores WHERE span_id IN ({marks})", list(by_span)
    ):
        by_span[span_id]["scores"][metric] = {"value": value, "label": label}


def _score_columns(conn: sqlite3.Connection) -> tuple[str, ...]:
    present = {row[1] for row in conn.execute("PRAGMA table_info(scores)")}
    return (*_SCORE_FIELDS, _wire.CLAIMS) if _wire.CLAIMS in present else _SCORE_FIELDS


def record_detail(conn: sqlite3.Connection, span_id: str) -> RecordDetail | None:
    """One record with everything the record view shows; None when the store has no such record."""
    row = conn.execute(
        f"SELECT {', '.join(RAG_FIELDS)}, chunks FROM rag_records WHERE span_id = ?", (span_id,)
    ).fetchone()
    if row is None:
        return None
    record = dict(zip((*RAG_FIELDS, "chunks"), row, strict=True))
    chunks = _json_list(record.pop("chunks"))
    columns = _score_columns(conn)
    scores = [
        dict(zip(columns, r, strict=True))
        for r in conn.execute(f"SELECT {', '.join(columns)} FROM scores WHERE span_id = ? ORDER BY metric", (span_id,))
    ]
    attributes = conn.execute("SELECT attributes FROM spans WHERE span_id = ?", (span_id,)).fetchone()
    attrs = _json_object(attributes[0] if attributes else None)
    for score in scores:
        score["claims"] = _json_list(score.get(_wire.CLAIMS))
        score["judge"] = attrs.get(f"ragtrace.eval.{score['metric']}.judge") or record.get("judge")
    return RecordDetail(record, [c if isinstance(c, dict) else {"content": str(c)} for c in chunks], scores)


def _json_list(raw: object) -> list[Any]:
    if not isinstance(raw, str) or not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    return data if isinstance(data, list) else []


def _json_object(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str) or not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def services(conn: sqlite3.Connection) -> Sequence[str]:
    """The services the store has records of (for the filter form): one index seek per service on
    ``(service, time_ns)`` (a ``DISTINCT`` would read the whole index, 30 ms at a million records)."""
    return [
        r[0]
        for r in conn.execute(
            "WITH RECURSIVE s(name) AS (SELECT MIN(service) FROM rag_records UNION ALL "
            "SELECT (SELECT MIN(service) FROM rag_records WHERE service > s.name) FROM s WHERE s.name IS NOT NULL) "
            "SELECT name FROM s WHERE name IS NOT NULL"
        )
    ]


def last_row(conn: sqlite3.Connection) -> int:
    """The newest ``rag_records`` row (0: none); rows after it are new to a page read now (``after_row=``)."""
    return int(conn.execute("SELECT IFNULL(MAX(rowid), 0) FROM rag_records").fetchone()[0])
