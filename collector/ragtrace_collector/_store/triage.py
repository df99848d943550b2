"""The triage pages' reads: a page of records, the new ones, one record with its scores and claims, an alert
with the records that made it fire, and the judge's cost and coverage.

Every query is bounded and rides an index: the list walks ``rag_records`` newest first by ``time_ns``
(or ``service, time_ns``) and stops at ``limit``; score filters probe ``scores`` by its primary key
``(span_id, metric)``; paging is by keyset (``time_ns, span_id``), never ``OFFSET``. Connections are the
caller's (the routes open one read-only connection per request, on a worker thread). The filter is the
triage pages' ``RecordFilter``, read by attribute only.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ragtrace import wire
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._store import metadata, rollups
from ragtrace_collector._store.arrival import Arrival, newest, order, position, within
from ragtrace_collector._store.dialect import SQLITE, AnyConnection, Dialect, column_names, dialect_of, table_names
from ragtrace_collector._store.migrations import MODEL_CALLS
from ragtrace_collector._store.reviews import reviews_of
from ragtrace_collector._store.schema import (
    ALERTS,
    RAG_RECORDS,
    RECORD_BLOCKS,
    RECORD_HOURS,
    REVIEWS,
    SCORES,
    SPANS,
    TEXT_SEARCH,
    quoted,
)

if TYPE_CHECKING:
    from ragtrace_collector._triage._filters import RecordFilter

__all__ = [
    "COSTS_DEFAULT_DAYS",
    "DAY_NS",
    "HOUR_NS",
    "RAG_FIELDS",
    "AlertDetail",
    "AlertScope",
    "Page",
    "RecordDetail",
    "alert_detail",
    "alert_scope",
    "attach_scores",
    "last_row",
    "latest_alert_id",
    "list_records",
    "newer_records",
    "read_costs",
    "record_detail",
    "services",
    "text_index",
    "trace_spans",
    "where_clause",
]

RAG_FIELDS = (
    "span_id", "trace_id", "service", "route", "time_ns", "query", "answer", "decision", "judge",
    "calls", "prompt_tokens", "completion_tokens", "seconds", "reason",
)  # fmt: skip
_RECORD_COLUMNS = ", ".join("r." + c for c in RAG_FIELDS)
"""``RAG_FIELDS`` of ``rag_records r``, for a SELECT list."""


def _records(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows of ``_RECORD_COLUMNS`` as records by field name."""
    return [dict(zip(RAG_FIELDS, row, strict=True)) for row in rows]


_SCORE_FIELDS = ("metric", "value", "label", "explanation", "reason", "error_type", "source")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of records, newest first, each with its scores by metric; ``next`` filters the next page."""

    records: list[dict[str, Any]]
    next: RecordFilter | None


@dataclass(frozen=True, slots=True)
class RecordDetail:
    """A record, its chunks, its scores (with claims where stored) and the tier that produced each score, and the
    stored spans of its trace (``trace_spans``; empty when none is stored, such as a record written alone)."""

    record: dict[str, Any]
    chunks: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    trace: list[dict[str, Any]] = field(default_factory=list)
    trace_cut: bool = False
    """More spans of the trace are stored than ``TRACE_SPANS`` (the page shows the first by start time)."""
    reviews: list[dict[str, Any]] = field(default_factory=list)
    """People's reviews of the record (``reviews.reviews_of``): ``claim`` -1 for the whole answer."""


TRACE_SPANS = 500
"""The most spans of one trace the record page reads (a runaway trace costs one page that much, no more)."""

_TRACE_COLUMNS = ("span_id", "parent_span_id", "name", "kind", "service", "start_ns", "end_ns", "status_code",
                  "status_message", "attributes")  # fmt: skip


def trace_spans(conn: AnyConnection, trace_id: str, limit: int = TRACE_SPANS) -> list[dict[str, Any]]:
    """The stored spans of ``trace_id``, first started first, at most ``limit`` (ask one more to know whether the
    trace has more); each with its ``attributes`` parsed (an object, empty when not JSON)."""
    spans = [
        dict(zip(_TRACE_COLUMNS, row, strict=True))
        for row in conn.execute(
            f"SELECT {', '.join(_TRACE_COLUMNS)} FROM {SPANS} WHERE trace_id = ? ORDER BY start_ns, span_id LIMIT ?",
            (trace_id, limit),
        )
    ]
    for span in spans:
        span["attributes"] = _json_object(span["attributes"])
    return spans


_TRIGRAM = 3
"""The shortest text a trigram index finds (shorter text is in no trigram; its search reads the records)."""


def _indexed_text(f: RecordFilter) -> bool:
    """Whether ``f``'s text can be looked up in the trigram index: 3 characters or more, and no NUL (FTS5 would
    read the phrase only up to it)."""
    return f.text is not None and len(f.text) >= _TRIGRAM and "\x00" not in f.text


def text_index(conn: AnyConnection, f: RecordFilter) -> bool:
    """Whether the SQLite store's text search index (``schema.TEXT_SEARCH``) is there to serve ``f``'s text: a
    store that was read without migrating (an earlier collector's file) has none. PostgreSQL's index needs no
    other SQL, so there this is False."""
    if dialect_of(conn) is not SQLITE or not _indexed_text(f):
        return False
    return TEXT_SEARCH.fts in table_names(conn)


def _text_clause(text: str, dialect: Dialect, *, fts: bool = False) -> tuple[str, list[Any]]:
    """The clause keeping a record whose query or answer holds ``text`` (any ASCII case), and its arguments.
    ``fts`` (SQLite): its candidates are the FTS5 table's."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    # SQLite's LIKE ignores ASCII case; PostgreSQL's ILIKE in the "C" collation does the same, whatever the
    # database's locale (in its own it would fold Unicode's case too, at twice the cost), and its trigram indexes
    # are of the columns in that collation (schema.TextSearch), so they serve it.
    if dialect is SQLITE:
        clause = "(r.query LIKE ? ESCAPE '\\' OR r.answer LIKE ? ESCAPE '\\')"
    else:
        collate = f"COLLATE {TEXT_SEARCH.COLLATION}"
        clause = f"(r.query {collate} ILIKE ? ESCAPE '\\' OR r.answer {collate} ILIKE ? ESCAPE '\\')"
    if not fts:
        return clause, [pattern, pattern]
    # The index's rowids are the candidates (a phrase of trigrams: the text as a substring, any case); LIKE on
    # them keeps what LIKE alone kept (the index folds all of Unicode's case, LIKE only ASCII's).
    fts_table = quoted(TEXT_SEARCH.fts)
    phrase = _phrase(text)
    return (
        f"r.rowid IN (SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH ?) AND {clause}",
        [phrase, pattern, pattern],
    )


def _phrase(text: str) -> str:
    """``text`` as an FTS5 phrase: with the trigram tokenizer, every row holding it as a substring, any case."""
    return '"' + text.replace('"', '""') + '"'


def where_clause(
    f: RecordFilter, dialect: Dialect = SQLITE, *, fts: bool = False, by_metadata: bool = False
) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause (with its leading space; empty when nothing is filtered) of the records ``f`` keeps,
    over ``rag_records r``, and its arguments. ``fts`` (SQLite, where ``text_index``): find ``f``'s text through
    the FTS5 table rather than by reading every record; the records kept are the same. The live poll and the
    costs page do without it: they read a bounded range (rows after the reader's, a week) that the index would
    not narrow, while it hands over every record with the text. ``by_metadata``: the query reads the records through
    their first metadata condition's rows (``metadata.DRIVEN``, aliased ``m``): that condition and the times are
    written on ``m``, which holds each record's time and span id, so the walk ranges over its index."""
    clauses: list[str] = []
    args: list[Any] = []
    at = "m" if by_metadata else "r"  # whose time_ns and span_id the time conditions read
    if f.since_ns is not None:
        clauses.append(f"{at}.time_ns >= ?")
        args.append(f.since_ns)
    if f.until_ns is not None:
        clauses.append(f"{at}.time_ns <= ?")
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
        clauses.append(f"{at}.time_ns <= ? AND ({at}.time_ns < ? OR {at}.span_id < ?)")
        args += [f.before[0], f.before[0], f.before[1]]
    for bound in f.scores:
        # The op comes from the parser's fixed set, never from the URL as text.
        clauses.append(
            f"EXISTS (SELECT 1 FROM {SCORES} s WHERE s.span_id = r.span_id AND s.metric = ? AND s.value {bound.op} ?)"
        )
        args += [bound.metric, bound.value]
    if f.text:
        text, text_args = _text_clause(f.text, dialect, fts=fts and _indexed_text(f))
        clauses.append(text)
        args += text_args
    for i, (key, value) in enumerate(f.meta):
        clause, meta_args = metadata.driving(key, value) if by_metadata and i == 0 else metadata.clause(key, value)
        clauses.append(clause)
        args += meta_args
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


_WALK_ROWS = 1_000
"""A text search, first step: how many of the newest records (of the other filters) are read for the text, newest
first (about 1 ms): a text in one record in 20 or more fills a page of 50 there."""
_PROBE_ROWS = 10_000
"""A text search, second step: how many of the newest records (of the other filters) are searched through the
index restricted to them (a few ms whatever the store holds, and nothing for a text in none of them) before the
index is asked for every record."""
_FEW_ROWS = 15_000
"""PostgreSQL, a text search: when the planner reckons the records of the text (and the other filters) at most
this many, the index over every record is asked at once (the third step alone). Its statistics (a sample of each
column's values) tell a common text from a rare one. Measured on 1,000,000 records: the first two steps cost 15 ms
(the newest records' probe 7, the newest read for the text 2, the index among them 6), the third about 5 ms and
1.5 us a candidate (a rare old text's 11,111: 21 ms, the trigrams 5, reading and checking them 12, sorting 4). At
this many candidates (about 27 ms) neither choice can lose more than about those 15 ms: asking at once loses them
when the text fills the page among the newest records, taking the steps loses them when it does not. A text in
more records than reckoned costs what the third step costs it."""


def list_records(conn: AnyConnection, f: RecordFilter) -> Page:
    """The records ``f`` selects, newest first, at most ``f.limit``, with their scores.

    A text search of 3 characters or more goes in up to three steps (``_search``), each exact, as no one of
    them is bounded alone: the newest records are read for the text (a common text fills the page there, where
    the index would hand over every record that has it, to be sorted); then the index is asked for the text among
    the newest ``_PROBE_ROWS`` only (a text found in a few of them, or in none); only when those do not fill the
    page is the index asked for every record (a rare text, found in old records: the index hands over those that
    have it, to be sorted)."""
    dialect = dialect_of(conn)
    rows: list[dict[str, Any]] | None = None
    if not f.sort.default:
        rows = _sorted(conn, f, dialect)
    indexed = rows is None and (text_index(conn, f) if dialect is SQLITE else _indexed_text(f))
    if indexed:
        rows = _search(conn, f, dialect)
    if rows is None and f.meta:
        rows = _select(conn, f, *where_clause(f, dialect, by_metadata=True), by_metadata=True)
    if rows is None:
        rows = _select(conn, f, *where_clause(f, dialect))
    more = len(rows) > f.limit
    rows = rows[: f.limit]
    attach_scores(conn, rows)
    last = rows[-1] if rows else None
    return Page(rows, f.page_after(last) if more and last else None)


def _sorted(conn: AnyConnection, f: RecordFilter, dialect: Dialect) -> list[dict[str, Any]]:
    """``f.limit + 1`` records of ``f`` in its order other than newest first (``_triage._sorting``), past its
    ``after`` cursor; each walks an index in the order asked and stops at the page:

    * oldest first: ``rag_records(time_ns)`` forwards;
    * by service: one service at a time, by ``rag_records(service, time_ns)`` (the next service is one index seek),
      newest first within it, the records without a service last;
    * by a metric's score: ``scores(metric, value, span_id)`` (migration step 7), joined to each record."""
    where, args = where_clause(replace(f, before=None), dialect)
    sort, key = f.sort, f.after
    want = f.limit + 1
    if sort.by == "time":
        clause = where
        if key is not None:
            clause = _and(clause, "r.time_ns >= ? AND (r.time_ns > ? OR r.span_id > ?)")
            args = [*args, key[0], key[0], key[1]]
        cursor = conn.execute(
            f"SELECT {_RECORD_COLUMNS} FROM {RAG_RECORDS} r{clause} ORDER BY r.time_ns ASC, r.span_id ASC LIMIT ?",
            [*args, want],
        )
        return _records(cursor)
    if sort.by == "score":
        assert sort.metric is not None
        op, direction = ("<", "DESC") if sort.descending else (">", "ASC")
        clause = _and(where, "s.metric = ? AND s.value IS NOT NULL")
        args = [*args, sort.metric]
        if key is not None:
            edge = "<=" if sort.descending else ">="
            clause = _and(clause, f"s.value {edge} ? AND (s.value {op} ? OR s.span_id {op} ?)")
            args += [key[0], key[0], key[1]]
        cursor = conn.execute(
            f"SELECT {_RECORD_COLUMNS}, s.value FROM {SCORES} s JOIN {RAG_RECORDS} r ON r.span_id = s.span_id{clause} "
            f"ORDER BY s.value {direction}, s.span_id {direction} LIMIT ?",
            [*args, want],
        )
        return [dict(zip((*RAG_FIELDS, "sort_value"), row, strict=True)) for row in cursor]
    # By service: the current service's rest (past the cursor), then each next service's newest, until a page.
    rows: list[dict[str, Any]] = []
    same = dialect.same
    current: str | None
    if key is not None:
        current = key[0]  # type: ignore[assignment]
        rows += _service_rows(
            conn, _and(where, f"r.service {same} ? AND r.time_ns <= ? AND (r.time_ns < ? OR r.span_id < ?)"),
            [*args, current, key[1], key[1], key[2]], want,
        )  # fmt: skip
        if current is None:
            return rows
    else:
        current = conn.execute(f"SELECT MIN(r.service) FROM {RAG_RECORDS} r{where}", args).fetchone()[0]
        if current is None:
            return _service_rows(conn, _and(where, "r.service IS NULL"), args, want)
        rows += _service_rows(conn, _and(where, "r.service = ?"), [*args, current], want)
    while len(rows) < want:
        found = conn.execute(
            f"SELECT MIN(r.service) FROM {RAG_RECORDS} r{_and(where, 'r.service > ?')}", [*args, current]
        ).fetchone()[0]
        if found is None:
            rows += _service_rows(conn, _and(where, "r.service IS NULL"), args, want - len(rows))
            break
        current = found
        rows += _service_rows(conn, _and(where, "r.service = ?"), [*args, current], want - len(rows))
    return rows


def _service_rows(conn: AnyConnection, where: str, args: list[Any], limit: int) -> list[dict[str, Any]]:
    cursor = conn.execute(f"SELECT {_RECORD_COLUMNS} FROM {RAG_RECORDS} r{where} {_ORDER} LIMIT ?", [*args, limit])
    return _records(cursor)


def _and(where: str, clause: str) -> str:
    """``where`` (a ``WHERE`` clause with its leading space, or empty) narrowed by ``clause``."""
    return f"{where} AND {clause}" if where else f" WHERE {clause}"


_ORDER = "ORDER BY r.time_ns DESC, r.span_id DESC"
_ORDER_METADATA = "ORDER BY m.time_ns DESC, m.span_id DESC"
"""The same order, read from a record's metadata row, whose index ends with (time_ns, span_id)."""
_ORDER_UNINDEXED = "ORDER BY r.time_ns + 0 DESC, r.span_id DESC"
"""The same order, which no index gives: the planner finds the rows by the other conditions' indexes, then sorts."""


def _select(
    conn: AnyConnection,
    f: RecordFilter,
    where: str,
    args: list[Any],
    *,
    by_metadata: bool = False,
) -> list[dict[str, Any]]:
    """``f.limit + 1`` records of ``where``, newest first; ``by_metadata``: by walking the first metadata
    condition's rows (``where_clause(by_metadata=True)``)."""
    source = f"{metadata.DRIVEN} JOIN {RAG_RECORDS} r ON r.span_id = m.span_id" if by_metadata else f"{RAG_RECORDS} r"
    order = _ORDER_METADATA if by_metadata else _ORDER
    cursor = conn.execute(
        f"SELECT {_RECORD_COLUMNS} FROM {source}{where} {order} LIMIT ?",
        [*args, f.limit + 1],
    )
    return _records(cursor)


def _by_index(
    conn: AnyConnection, f: RecordFilter, where: str, args: list[Any], dialect: Dialect
) -> list[dict[str, Any]]:
    """``f.limit + 1`` records of ``where`` (whose text condition rides the index), newest first, in the order no
    index gives (``_ORDER_UNINDEXED``): the candidates the index hands over are sorted by their key alone and the
    page's rows read after, so a rare text's thousands of candidates are not each carried whole through the sort.
    A walk of ``time_ns``'s index, which PostgreSQL's planner would take for a text it reckons common, would read
    every record newer than the oldest that has it."""
    key = "rowid" if dialect is SQLITE else "span_id"
    cursor = conn.execute(
        f"SELECT {_RECORD_COLUMNS} FROM {RAG_RECORDS} r WHERE r.{key} IN "
        f"(SELECT r.{key} FROM {RAG_RECORDS} r{where} {_ORDER_UNINDEXED} LIMIT ?) {_ORDER_UNINDEXED}",
        [*args, f.limit + 1],
    )
    return _records(cursor)


@contextlib.contextmanager
def _bitmaps_only(conn: AnyConnection, dialect: Dialect) -> Iterator[None]:
    """PostgreSQL, inside the reader's transaction: plan the block's statement without plain index scans, so
    that a text searched among the newest records is an AND of the trigram bitmap and ``time_ns``'s range (a text
    in none of them costs no row read), not a walk of ``time_ns``'s index reading each of them for the text,
    which the planner prefers for a text it reckons common. The setting is back as it was after the block."""
    if dialect is SQLITE or not conn.in_transaction:
        yield
        return
    (was, _) = conn.execute(
        "SELECT current_setting('enable_indexscan'), set_config('enable_indexscan', 'off', true)"
    ).fetchone()
    yield
    # Not after an error: the transaction is aborted then, and takes the setting with it.
    conn.execute("SELECT set_config('enable_indexscan', ?, true)", (was,))


def _search(conn: AnyConnection, f: RecordFilter, dialect: Dialect) -> list[dict[str, Any]]:
    """``f``'s first ``f.limit + 1`` records when ``f.text`` rides the index (``_indexed_text``), newest first, in
    up to three steps, each of which returns when its rows are the answer (they fill the page, and every record
    left unread is older than them; or no record is left unread). On PostgreSQL, a text the planner reckons in at
    most ``_FEW_ROWS`` records goes to the third step at once. SQLite's steps are ``_search_sqlite``'s.

    1. The newest ``_WALK_ROWS`` records (of the other filters) read for the text, newest first: a common text
       fills the page after a few rows.
    2. The text among the newest ``_PROBE_ROWS`` records, the trigram bitmap ANDed with the range of ``time_ns``
       (``_bitmaps_only``). A text in none of them costs no read of a record.
    3. The index over every record (``_by_index``): what is left is a text in few of the newest records, and the
       index hands over the records that have it, to be sorted."""
    assert f.text is not None
    if dialect is SQLITE:
        return _search_sqlite(conn, f)
    where, args = where_clause(f, dialect)
    if _reckoned_rows(conn, where, args) <= _FEW_ROWS:
        return _by_index(conn, f, where, args, dialect)
    where, args = where_clause(replace(f, text=None), dialect)
    # The newest _PROBE_ROWS: how many there are (fewer: every record of the other filters) and the oldest time
    # among them; and the time of the newest _WALK_ROWS' oldest.
    if min(_WALK_ROWS, _PROBE_ROWS) >= 1:
        count, oldest, walked = conn.execute(
            f"SELECT COUNT(*), MIN(w.time_ns), "
            f"(SELECT r.time_ns FROM {RAG_RECORDS} r{where} ORDER BY r.time_ns DESC LIMIT 1 OFFSET ?) "
            f"FROM (SELECT r.time_ns FROM {RAG_RECORDS} r{where} ORDER BY r.time_ns DESC LIMIT ?) w",
            [*args, _WALK_ROWS - 1, *args, _PROBE_ROWS],
        ).fetchone()
        if not count:
            return []  # no record of the other filters
        if walked is not None:
            rows = _newest_read(conn, f, where, args, walked)
            if len(rows) > f.limit:
                return rows
        complete = count < _PROBE_ROWS  # the newest _PROBE_ROWS are every record of the other filters
        text, text_args = _text_clause(f.text, dialect)
        if not complete:
            # Newer than the oldest of them: every such record is one of them; every record past is as old as it,
            # or older.
            text, text_args = f"r.time_ns > ? AND {text}", [oldest, *text_args]
        with _bitmaps_only(conn, dialect):
            rows = _by_index(conn, f, _and(where, text), [*args, *text_args], dialect)
        if complete or len(rows) > f.limit:
            return rows
    return _by_index(conn, f, *where_clause(f, dialect), dialect)


def _newest_read(
    conn: AnyConnection, f: RecordFilter, where: str, args: list[Any], walked: int | None
) -> list[dict[str, Any]]:
    """The first step of a search: ``f``'s records among those of ``where`` (the other filters) as new as
    ``walked`` (the time of the newest ``_WALK_ROWS``' oldest) or newer, read for the text, newest first; every
    record of ``where`` when ``walked`` is None (there are fewer)."""
    assert f.text is not None
    text, text_args = _text_clause(f.text, dialect_of(conn))
    if walked is None:
        return _select(conn, f, _and(where, text), [*args, *text_args])
    # Within the newest _WALK_ROWS: every record past them is as old as the oldest of them, or older.
    return _select(conn, f, _and(where, f"r.time_ns >= ? AND {text}"), [*args, walked, *text_args])


def _search_sqlite(conn: AnyConnection, f: RecordFilter) -> list[dict[str, Any]]:
    """SQLite: ``_search``'s steps, the index's matches read by their blocks of arrival (``_by_blocks``).

    1. The newest ``_WALK_ROWS`` records (of the other filters) read for the text, newest first.
    2. The index's matches over every record, their records read a few blocks at a time, the blocks that may hold
       the newest first, until no block left can hold a record the page shows. Records mostly arrive in the order
       of their time, so a text found only in old records costs its matches' ids and the records of a block or
       two, not every match's record read and sorted. A question to FTS5 costs a lookup of each of the text's
       trigrams in each segment of its table (about 6 ms for a text of 13 trigrams at a million records, whatever
       rowids it is restricted to): one question over every record, rather than one over the newest first, then
       one over every record when those do not fill the page.

    A store read without migrating (an earlier collector's file) may lack the blocks: after the first step the
    index hands over every record with the text, to be sorted (``_by_index``)."""
    assert f.text is not None
    where, args = where_clause(replace(f, text=None))
    if _WALK_ROWS >= 1:
        (walked,) = conn.execute(
            f"SELECT r.time_ns FROM {RAG_RECORDS} r{where} ORDER BY r.time_ns DESC LIMIT 1 OFFSET ?",
            [*args, _WALK_ROWS - 1],
        ).fetchone() or (None,)
        rows = _newest_read(conn, f, where, args, walked)
        if walked is None or len(rows) > f.limit:
            return rows
    if not _blocks_kept(conn):
        return _by_index(conn, f, *where_clause(f, SQLITE, fts=True), SQLITE)
    cursor = conn.execute(
        f"SELECT {_RECORD_COLUMNS} FROM {RAG_RECORDS} r "
        f"WHERE r.rowid IN (SELECT value FROM json_each(?)) {_ORDER_UNINDEXED}",
        [json.dumps([row[2] for row in _by_blocks(conn, f)])],
    )
    return _records(cursor)


def _blocks_kept(conn: AnyConnection) -> bool:
    """SQLite: whether the store bounds its records' times by blocks of arrival (``schema.RECORD_BLOCKS``): a
    store read without migrating (an earlier collector's file) may not."""
    return RECORD_BLOCKS.name in table_names(conn)


def _newest_first(row: tuple[Any, ...]) -> tuple[bool, int, str]:
    """The sort key of ``_ORDER`` (newest first, then the span id; a record without a time last), in reverse, of
    a row that starts with ``time_ns, span_id``."""
    return (row[0] is not None, row[0] or 0, row[1])


def _by_blocks(conn: AnyConnection, f: RecordFilter) -> list[tuple[Any, ...]]:
    """SQLite: ``(time_ns, span_id, rowid)`` of ``f``'s first ``f.limit + 1`` records (``f.text`` rides the index),
    newest first, from the index's matches grouped by their block of arrival (``schema.RECORD_BLOCKS``), read in
    the order of the newest time each block may hold, a few blocks at a time (a page of matches at least), until
    the records kept fill the page and the next block's bound is older than the last of them: no record left
    unread can come before it."""
    assert f.text is not None
    fts, blocks, size = quoted(TEXT_SEARCH.fts), quoted(RECORD_BLOCKS.name), RECORD_BLOCKS.SIZE
    found = conn.execute(
        f"SELECT b.newest, m.n, m.rowids FROM (SELECT rowid / {size} AS block, COUNT(*) AS n, "
        f"json_group_array(rowid) AS rowids FROM {fts} WHERE {fts} MATCH ? GROUP BY 1) m "
        f"LEFT JOIN {blocks} b ON b.block = m.block ORDER BY b.newest IS NULL, b.newest DESC",
        [_phrase(f.text)],
    ).fetchall()
    where, args = where_clause(f)  # the text by LIKE, on the matches' records: what LIKE alone keeps
    read = f"SELECT r.time_ns, r.span_id, r.rowid FROM {RAG_RECORDS} r" + _and(
        where, "r.rowid IN (SELECT j.value FROM json_each(?) b, json_each(b.value) j)"
    )
    kept: list[tuple[Any, ...]] = []  # newest first, then by span id (_ORDER); a record without a time last
    at = 0
    while at < len(found):
        last = kept[f.limit][0] if len(kept) > f.limit else None
        newest = found[at][0]
        if last is not None and (newest is None or newest < last):
            break  # no record in the blocks left can come before the page's last (no bound: no time)
        group: list[str] = []  # the blocks' rowids, each a JSON array
        matches = 0
        while at < len(found) and (not group or matches < f.limit + 1):
            matches += found[at][1]
            group.append(found[at][2])
            at += 1
        rows = conn.execute(read, [*args, f"[{','.join(group)}]"])
        kept = sorted([*kept, *rows], key=_newest_first, reverse=True)[: f.limit + 1]
    return kept


def _reckoned_rows(conn: AnyConnection, where: str, args: list[Any]) -> float:
    """PostgreSQL: how many records of ``where`` the planner reckons, by its statistics (``EXPLAIN``: nothing read)."""
    (plan,) = conn.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 FROM {RAG_RECORDS} r{where}", args).fetchone()
    return float(plan[0]["Plan"]["Plan Rows"])


def newer_records(conn: AnyConnection, f: RecordFilter, after: Arrival) -> tuple[list[dict[str, Any]], Arrival, bool]:
    """Records ``f`` selects that the store received after ``after`` (``last_row`` of the page the reader has),
    in the order they arrived, at most ``f.limit``; with the cursor to ask from next and whether more are
    waiting. Arrival order, not the records' own times: a record that arrives late with an older time is new to
    the reader too, and a burst larger than a page is taken page by page. On PostgreSQL a record committed after
    one written later (another replica's) is still read once (``arrival.py``)."""
    dialect = dialect_of(conn)
    # The newest row first, then the rows up to it: one committed between the two reads is left for the next
    # poll rather than passed over. A cursor past the newest row (the store was replaced, or pruned empty, and
    # rowids start again) comes back to it.
    upto = newest(conn, RAG_RECORDS)
    where, args = where_clause(f, dialect)
    newer, newer_args = within(dialect, "r", min(after, upto), upto)
    where = f"{where} AND {newer}" if where else f" WHERE {newer}"
    cursor = conn.execute(
        f"SELECT {position(dialect, 'r')}, {_RECORD_COLUMNS} FROM {RAG_RECORDS} r{where} "
        f"ORDER BY {order(dialect, 'r')} LIMIT ?",
        [*args, *newer_args, f.limit + 1],
    )
    fetched = [(Arrival(int(row[0]), int(row[1])), dict(zip(RAG_FIELDS, row[2:], strict=True))) for row in cursor]
    more = len(fetched) > f.limit
    fetched = fetched[: f.limit]
    rows = [row for _, row in fetched]
    attach_scores(conn, rows)
    # Past the filter's misses too: the next poll need not read them again.
    return rows, fetched[-1][0] if more else upto, more


def attach_scores(conn: AnyConnection, rows: list[dict[str, Any]]) -> None:
    by_span: dict[str, dict[str, Any]] = {row["span_id"]: row for row in rows}
    for row in rows:
        row["scores"] = {}
    if not by_span:
        return
    marks = ", ".join("?" for _ in by_span)
    for span_id, metric, value, label in conn.execute(
        f"SELECT span_id, metric, value, label FROM {SCORES} WHERE span_id IN ({marks})", list(by_span)
    ):
        by_span[span_id]["scores"][metric] = {"value": value, "label": label}


def _score_columns(conn: AnyConnection) -> tuple[str, ...]:
    present = set(column_names(conn, SCORES))
    return (*_SCORE_FIELDS, wire.CLAIMS) if wire.CLAIMS in present else _SCORE_FIELDS


def record_detail(conn: AnyConnection, span_id: str) -> RecordDetail | None:
    """One record with everything the record view shows; None when the store has no such record."""
    row = conn.execute(
        f"SELECT {', '.join(RAG_FIELDS)}, chunks FROM {RAG_RECORDS} WHERE span_id = ?", (span_id,)
    ).fetchone()
    if row is None:
        return None
    record = dict(zip((*RAG_FIELDS, "chunks"), row, strict=True))
    chunks = _json_list(record.pop("chunks"))
    columns = _score_columns(conn)
    scores = [
        dict(zip(columns, r, strict=True))
        for r in conn.execute(
            f"SELECT {', '.join(columns)} FROM {SCORES} WHERE span_id = ? ORDER BY metric", (span_id,)
        )
    ]
    attributes = conn.execute(f"SELECT attributes FROM {SPANS} WHERE span_id = ?", (span_id,)).fetchone()
    attrs = _json_object(attributes[0] if attributes else None)
    for score in scores:
        score["claims"] = _json_list(score.get(wire.CLAIMS))
        score["judge"] = attrs.get(f"ragtrace.eval.{score['metric']}.judge") or record.get("judge")
    trace = trace_spans(conn, str(record["trace_id"]), TRACE_SPANS + 1) if record.get("trace_id") else []
    reviewed = reviews_of(conn, span_id) if REVIEWS in table_names(conn) else []  # a store not migrated yet
    return RecordDetail(
        record,
        [c if isinstance(c, dict) else {"content": str(c)} for c in chunks],
        scores,
        trace[:TRACE_SPANS],
        len(trace) > TRACE_SPANS,
        reviewed,
    )


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


def services(conn: AnyConnection) -> Sequence[str]:
    """The services the store has records of (for the filter form): one index seek per service on
    ``(service, time_ns)`` (a ``DISTINCT`` would read the whole index, 30 ms at a million records)."""
    return [
        r[0]
        for r in conn.execute(
            f"WITH RECURSIVE s(name) AS (SELECT MIN(service) FROM {RAG_RECORDS} UNION ALL "
            f"SELECT (SELECT MIN(service) FROM {RAG_RECORDS} WHERE service > s.name) FROM s WHERE s.name IS NOT NULL) "
            "SELECT name FROM s WHERE name IS NOT NULL"
        )
    ]


def last_row(conn: AnyConnection) -> Arrival:
    """The newest ``rag_records`` row (``START``: none); rows after it are new to a page read now (``after_row=``,
    ``Arrival.text``)."""
    return newest(conn, RAG_RECORDS)


# -- an alert and the records that made it fire -----------------------------------------------------------------

_BAD_CUTOFF = 0.5
"""A record beyond this on its metric's bad side "made the alert fire" (the spike rule's default cutoff)."""


@dataclass(frozen=True, slots=True)
class AlertScope:
    """An alert row and which records made it fire: its group's, from ``since_ns`` to the alert, beyond
    ``cutoff`` on the metric's bad side (``lower``: lower is better)."""

    alert: dict[str, Any]
    since_ns: int
    since_ok: bool
    """Whether ``since_ns`` is the group's last OK (else the hour before the alert: it never was)."""
    cutoff: float | None
    """None when they are all the period's records (a drift rule)."""
    lower: bool


@dataclass(frozen=True, slots=True)
class AlertDetail:
    """An alert's scope, its group's transitions, the metric around it, and the records that made it fire."""

    scope: AlertScope
    history: list[dict[str, Any]]
    records: list[dict[str, Any]]
    series: list[tuple[int, float]]
    """The metric's mean over time around the alert, ``(time_ns, mean)``, for the chart."""


_GROUP = "rule = ? AND COALESCE(service, '') = COALESCE(?, '') AND COALESCE(route, '') = COALESCE(?, '')"


def alert_scope(conn: AnyConnection, alert_id: int) -> AlertScope | None:
    """An alert of the ``alerts`` table by id and the scope of the records that made it fire; None when there
    is none. They are its metric's records of its group (service and/or route) from the group's last OK (the
    hour before the alert, when it never was) to the alert, beyond a threshold rule's own threshold, else 0.5
    (the spike rule's default cutoff; a rule's own cutoff is in its rules file, not in the store); a drift
    or agreement rule's are all of them."""
    names = column_names(conn, ALERTS)
    if not names:
        return None
    row = conn.execute(f"SELECT {', '.join(names)} FROM {ALERTS} WHERE id = ?", (alert_id,)).fetchone()
    if row is None:
        return None
    alert = dict(zip(names, row, strict=True))
    ok = conn.execute(
        f"SELECT MAX(time_ns) FROM {ALERTS} WHERE {_GROUP} AND state IN ('OK', 'NO_DATA') AND time_ns < ?",
        (alert["rule"], alert.get("service"), alert.get("route"), alert["time_ns"]),
    ).fetchone()[0]
    since = ok if ok is not None else alert["time_ns"] - 3600 * 1_000_000_000
    cutoff = alert.get("threshold") if alert.get("kind") == "threshold" else _BAD_CUTOFF
    if alert.get("kind") in ("drift", "agreement"):  # about the whole period, not records past a level
        cutoff = None
    lower = metric_direction(alert["metric"]) == "lower"
    return AlertScope(alert, since, ok is not None, None if cutoff is None else float(cutoff), lower)


def alert_detail(conn: AnyConnection, alert_id: int, limit: int = 100) -> AlertDetail | None:
    """``alert_scope``, the group's transitions, the records that made it fire (worst first, at most
    ``limit``) and ``series``: the metric's mean over that period and as long again on each side, in 40 steps."""
    found = alert_scope(conn, alert_id)
    if found is None:
        return None
    alert, since = found.alert, found.since_ns
    history = [
        dict(zip(("time_ns", "state", "value", "threshold"), r, strict=True))
        for r in conn.execute(
            f"SELECT time_ns, state, value, threshold FROM {ALERTS} WHERE {_GROUP} ORDER BY time_ns",
            (alert["rule"], alert.get("service"), alert.get("route")),
        )
    ]
    scope, scope_args = "", []
    for column in ("service", "route"):
        if alert.get(column):
            scope += f" AND s.{column} = ?"
            scope_args.append(alert[column])
    # On SQLite "+" keeps the value index out: without statistics its planner walked every score past the cutoff,
    # of all time (0.5-0.7 s at 1,000,000 records), rather than the alert's period by time (8-13 ms).
    value = "+s.value" if dialect_of(conn) is SQLITE else "s.value"
    bad = "" if found.cutoff is None else (f" AND {value} > ?" if found.lower else f" AND {value} < ?")
    args: list[Any] = [alert["metric"], since, alert["time_ns"], *([found.cutoff] if bad else []), *scope_args]
    cursor = conn.execute(
        f"SELECT {_RECORD_COLUMNS}, s.value FROM {SCORES} s "
        f"JOIN {RAG_RECORDS} r ON r.span_id = s.span_id "
        f"WHERE s.metric = ? AND s.time_ns BETWEEN ? AND ?{bad}{scope} "
        f"ORDER BY s.value {'DESC' if found.lower else 'ASC'}, s.time_ns DESC LIMIT ?",
        [*args, limit],
    )
    records = [dict(zip((*RAG_FIELDS, "value"), r, strict=True)) for r in cursor]
    attach_scores(conn, records)
    span = max(alert["time_ns"] - since, 60 * 1_000_000_000)
    start, end = since - span, alert["time_ns"] + span
    step = max(1, (end - start) // 40)
    series = [
        (int(bucket) * step + step // 2, float(mean))
        for bucket, mean in conn.execute(
            f"SELECT s.time_ns / ? AS bucket, AVG(s.value) FROM {SCORES} s WHERE s.metric = ? "
            f"AND s.time_ns BETWEEN ? AND ? AND s.value IS NOT NULL{scope} GROUP BY bucket ORDER BY bucket",
            [step, alert["metric"], start, end, *scope_args],
        )
    ]
    return AlertDetail(found, history, records, series)


def latest_alert_id(conn: AnyConnection, rule: str, service: str | None, route: str | None) -> int | None:
    """The id of a group's latest ALERT row (its latest row of any state when it never fired), or None."""
    if ALERTS not in table_names(conn):
        return None
    row = conn.execute(
        f"SELECT id FROM {ALERTS} WHERE rule = ? AND COALESCE(service, '') = ? AND COALESCE(route, '') = ? "
        "ORDER BY state = 'ALERT' DESC, time_ns DESC LIMIT 1",
        (rule, service or "", route or ""),
    ).fetchone()
    return int(row[0]) if row else None


# -- judge cost and coverage ------------------------------------------------------------------------------------

HOUR_NS = rollups.HOUR_NS


COSTS_DEFAULT_DAYS = 7
"""Without ``since``: the week before the store's newest record (an index lookup), not the whole store, from the
start of an hour: whole hours, which ``record_hours`` answers for, where an hour cut in its middle is read from
its records (3,600 of them at one record a second)."""


def read_costs(conn: AnyConnection, f: RecordFilter) -> dict[str, Any]:
    """Per hour: judge calls, tokens and mean seconds of the scored records; per service: decision counts.
    Over ``f``'s time range, by default the ``COSTS_DEFAULT_DAYS`` before ``until`` (else the newest record), from
    the start of that hour.

    A filter of time and service only (the page's) reads the whole hours from ``record_hours`` (``rollups.py``)
    and the part-hours at the ends from the records; any other condition reads every record it keeps."""
    if f.since_ns is None:
        end = f.until_ns
        if end is None:
            end = conn.execute(f"SELECT MAX(time_ns) FROM {RAG_RECORDS}").fetchone()[0]
        if end is not None:
            f = replace(f, since_ns=(int(end) // HOUR_NS - COSTS_DEFAULT_DAYS * 24) * HOUR_NS)
    plain = f.route is None and f.decision is None and not f.scores and not f.meta and not f.text
    if plain and RECORD_HOURS in table_names(conn):
        period = rollups.Period(f.since_ns, f.until_ns)
        rows = list(rollups.read_record_hours(conn, period, f.service))
        for since, until in period.edges:
            rows += _record_rows(conn, replace(f, since_ns=since, until_ns=until))
    else:
        rows = _record_rows(conn, f)
    hours: dict[int, list[float]] = {}
    coverage: dict[tuple[Any, Any], int] = {}
    judge_days: dict[tuple[int, Any, Any], list[float]] = {}
    for hour, service, decision, judge, records, costed, calls, prompt, completion, seconds, timed in rows:
        coverage[service, decision] = coverage.get((service, decision), 0) + int(records)
        if not costed:
            continue
        h = hours.setdefault(int(hour), [0, 0, 0.0, 0, 0])
        for i, value in enumerate((calls, prompt + completion, seconds, timed, costed)):
            h[i] += value
        d = judge_days.setdefault((int(hour) // 24, service, judge), [0, 0, 0, 0])
        for i, value in enumerate((prompt, completion, calls, costed)):
            d[i] += value
    return {
        "hours": [
            (hour, int(calls), int(tokens), seconds / timed if timed else None, int(costed))
            for hour, (calls, tokens, seconds, timed, costed) in sorted(hours.items())
        ],
        "coverage": sorted(((s, d, n) for (s, d), n in coverage.items() if n), key=lambda r: (r[0] or "", r[1] or "")),
        "since_ns": f.since_ns,
        "judge_days": [(day, s, j, *map(int, sums)) for (day, s, j), sums in sorted(judge_days.items(), key=_day_key)],
        "app_days": _app_model_days(conn, f),
    }


def _record_rows(conn: AnyConnection, f: RecordFilter) -> list[tuple[Any, ...]]:
    """``rollups.read_record_hours``' rows, added up from the records ``f`` keeps."""
    where, args = where_clause(f, dialect_of(conn))
    return rollups.read_record_rows(conn, "r", where, args)


def _day_key(item: tuple[tuple[int, Any, Any], Any]) -> tuple[int, str, str]:
    (day, service, judge), _ = item
    return day, service or "", judge or ""


DAY_NS = 24 * HOUR_NS


def _app_model_days(conn: AnyConnection, f: RecordFilter) -> list[tuple[Any, ...]]:
    """Per day, service and model: the input and output tokens of the app's own model calls (spans that said their
    tokens, ``spans.input_tokens``/``output_tokens``) in ``f``'s time range and service, and how many calls. Read
    through the partial index of model calls by time: not a scan of every span."""
    where, args = [MODEL_CALLS], []
    for column, op, value in (("end_ns", ">=", f.since_ns), ("end_ns", "<", f.until_ns), ("service", "=", f.service)):
        if value is not None:
            where.append(f"s.{column} {op} ?")
            args.append(value)
    return [
        tuple(row)
        for row in conn.execute(
            f"SELECT s.end_ns / {DAY_NS} AS day, s.service, s.model, SUM(s.input_tokens), SUM(s.output_tokens), "
            f"COUNT(*) FROM {SPANS} s WHERE {' AND '.join(where)} GROUP BY day, s.service, s.model ORDER BY day",
            args,
        ).fetchall()
    ]
