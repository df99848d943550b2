"""The store's schema: every table of docs/collector.md, its columns, key and indexes, defined once.

A ``Table`` is a value: its name, its columns in order (the upserts bind rows in that order), its primary key
and its indexes. ``ddl`` renders it for an engine (``dialect.py``); ``migrations.py`` is the only caller that
creates or alters a table. The SQL of the other modules in this package names tables through these constants,
so a table's name is written once.

Both engines get the same tables and columns. Where rows are read in the order they arrived (``arrival``:
``rag_records`` for the pages' live updates, ``scores`` for the Phoenix annotator), SQLite's implicit ``rowid``
numbers them; PostgreSQL gets an explicit ``rowid`` identity column, so the same SQL reads both, and an ``xact``
column, the transaction that wrote the row, which its readers need because its writers commit out of rowid
order (``arrival.py``).

Column types and index names follow what sqlite-utils writes (``TEXT``, ``idx_<table>_<columns>``), so the file
opens as it is in Datasette and a file an earlier collector made with sqlite-utils is the same schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ragtrace_collector._store.dialect import POSTGRESQL, SQLITE, Dialect

__all__ = [
    "ACK_COLUMNS",
    "ALERTS",
    "ALERT_ACKS",
    "ALERT_COLUMNS",
    "ALERT_GROUPS",
    "ALERT_GROUP_COLUMNS",
    "ALERT_SILENCES",
    "ALERT_TABLES",
    "CLAIM_COLUMNS",
    "JOIN_PENDING",
    "JOIN_PENDING_COLUMNS",
    "PHOENIX_CURSOR",
    "QUALITY_HOURS",
    "RAG_COLUMNS",
    "RAG_RECORDS",
    "RECORD_BLOCKS",
    "RECORD_HOURS",
    "RECORD_METADATA",
    "RECORD_METADATA_COLUMNS",
    "RECORD_QUALITY",
    "REVIEWS",
    "REVIEW_COLUMNS",
    "ROLLUPS",
    "SCORES",
    "SCORE_COLUMNS",
    "SCORE_HOURS",
    "SILENCE_COLUMNS",
    "SPANS",
    "SPAN_COLUMNS",
    "TABLES",
    "TEXT_SEARCH",
    "XACT",
    "RowidBlocks",
    "Table",
    "TextSearch",
    "quoted",
]

SPANS: Final = "spans"
RAG_RECORDS: Final = "rag_records"
SCORES: Final = "scores"
JOIN_PENDING: Final = "join_pending"
"""Traces with spans of a RAG call another instrumentation traced, waiting to settle and be joined (``_join``)."""
ALERTS: Final = "alerts"
"""Every state change (and reminder) of an alert group."""
ALERT_GROUPS: Final = "alert_groups"
"""Each group's state now: one row per (rule, service, route), keyed by their JSON (``group_key``)."""
ALERT_SILENCES: Final = "alert_silences"
ALERT_ACKS: Final = "alert_acks"
ALERT_TABLES: Final = (ALERTS, ALERT_GROUPS, ALERT_SILENCES, ALERT_ACKS)
REVIEWS: Final = "reviews"
"""People's verdicts on records: the whole answer (``claim`` -1) or one claim (its index) right or wrong."""
RECORD_METADATA: Final = "record_metadata"
"""One row per (record, metadata key, value): what the pages' ``meta=key:value`` filter looks up."""
PHOENIX_CURSOR: Final = "phoenix_cursor"
"""How far the Phoenix annotator delivered: one row per annotation URL (``after_xact``, ``after_row``: a
``scores`` row's place, ``arrival.Arrival``)."""
SCORE_HOURS: Final = "score_hours"
RECORD_HOURS: Final = "record_hours"
RECORD_QUALITY: Final = "record_quality"
QUALITY_HOURS: Final = "quality_hours"
ROLLUPS: Final = (SCORE_HOURS, RECORD_HOURS, RECORD_QUALITY, QUALITY_HOURS)
"""What the overview and the costs page add up, kept added up by the database as rows change (``rollups.py``)."""
XACT: Final = "xact"
"""PostgreSQL: the column of an arrival table holding the transaction that wrote the row (``arrival.py``)."""


def quoted(name: str) -> str:
    """``name`` as an identifier both engines read (the store's names are plain words)."""
    return f'"{name}"'


@dataclass(frozen=True, slots=True)
class Table:
    """One table: ``columns`` in order (name -> Python type), ``pk`` its primary key, ``indexes`` the column
    lists indexed. ``rowid_pk``: the key is an id the database assigns (the alert tables' ``id``).
    ``arrival``: its rows are read in the order they arrived, by ``rowid``. ``claimed``: a replica takes its rows
    as work (``claims.py``), with the ``CLAIM_COLUMNS`` the store alone writes. ``not_null``: columns declared
    ``NOT NULL``."""

    name: str
    columns: dict[str, type]
    pk: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()
    rowid_pk: bool = False
    arrival: bool = False
    claimed: bool = False
    not_null: tuple[str, ...] = ()
    defaults: tuple[tuple[str, str], ...] = ()

    def column_ddl(self, column: str, dialect: Dialect = SQLITE) -> str:
        """One column's declaration: ``"name" TYPE`` with its default and NOT NULL."""
        if self.rowid_pk and self.pk == (column,):
            return f"{quoted(column)} {dialect.identity}"
        kind = self.all_columns[column]
        declared = f"{quoted(column)} {dialect.types[kind]}{dialect.text_options if kind is str else ''}"
        if column in self.not_null:
            declared += " NOT NULL"
        default = dict(self.defaults).get(column)
        return f"{declared} DEFAULT {default}" if default is not None else declared

    @property
    def all_columns(self) -> dict[str, type]:
        """``columns`` and, for a claimed table, the claim's columns after them."""
        return {**self.columns, **CLAIM_COLUMNS} if self.claimed else self.columns

    def ddl(self, dialect: Dialect = SQLITE) -> str:
        """``CREATE TABLE IF NOT EXISTS`` in the engine's dialect."""
        parts = [self.column_ddl(c, dialect) for c in self.all_columns]
        if len(self.pk) == 1 and not self.rowid_pk:
            parts[list(self.columns).index(self.pk[0])] += " PRIMARY KEY"
        elif len(self.pk) > 1:
            parts.append(f"PRIMARY KEY ({', '.join(map(quoted, self.pk))})")
        if self.arrival and dialect.arrival is not None:
            parts.append(f"{quoted('rowid')} {dialect.arrival} UNIQUE")
        if self.arrival and dialect.arrival_xact is not None:
            parts.append(f"{quoted(XACT)} BIGINT NOT NULL DEFAULT {dialect.arrival_xact}")
        return f"CREATE TABLE IF NOT EXISTS {quoted(self.name)} ({', '.join(parts)})"

    def index_ddl(self) -> list[str]:
        """``CREATE INDEX IF NOT EXISTS`` for each index, named as sqlite-utils names them (a column written
        ``"name DESC"`` is indexed in descending order, and named ``name_desc``)."""
        return [
            f"CREATE INDEX IF NOT EXISTS {quoted(f'idx_{self.name}_' + '_'.join(_index_name(c) for c in cols))} "
            f"ON {quoted(self.name)} ({', '.join(map(_index_column, cols))})"
            for cols in self.indexes
        ]

    def arrival_index_ddl(self, dialect: Dialect) -> list[str]:
        """PostgreSQL, an arrival table: the index of ``(xact, rowid)`` its readers walk (``arrival.py``)."""
        if not (self.arrival and dialect.arrival_xact is not None):
            return []
        return [
            f"CREATE INDEX IF NOT EXISTS {quoted(f'idx_{self.name}_{XACT}_rowid')} "
            f"ON {quoted(self.name)} ({quoted(XACT)}, rowid)"
        ]


def _index_name(column: str) -> str:
    name, _, order = column.partition(" ")
    return f"{name}_{order.lower()}" if order else name


def _index_column(column: str) -> str:
    name, _, order = column.partition(" ")
    return f"{quoted(name)} {order}" if order else quoted(name)


CLAIM_COLUMNS: dict[str, type] = {"claimed_by": str, "claimed_until": int}
"""Who took a row as work (a replica's name) and until when (ns since the epoch); the store alone writes them, so
the rows a receiver upserts never name them."""

SPAN_COLUMNS: dict[str, type] = {
    "span_id": str,
    "trace_id": str,
    "parent_span_id": str,
    "name": str,
    "kind": int,
    "service": str,
    "scope": str,
    "start_ns": int,
    "end_ns": int,
    "status_code": int,
    "status_message": str,
    "attributes": str,
    "events": str,
    "links": str,
    "resource": str,
    "received_ns": int,
    "model": str,
    "input_tokens": int,
    "output_tokens": int,
}
"""``model``, ``input_tokens``, ``output_tokens``: what a model call said it took, read from its attributes when it
arrives (``gen_ai.usage.*`` or ``llm.token_count.*``; the model from ``gen_ai.response.model``,
``gen_ai.request.model`` or ``llm.model_name``), NULL on other spans: the cost page sums them without reading
every span's attributes."""
RAG_COLUMNS: dict[str, type] = {
    "span_id": str,
    "trace_id": str,
    "service": str,
    "route": str,
    "time_ns": int,
    "query": str,
    "answer": str,
    "chunks": str,
    "reference": str,
    "decision": str,
    "judge": str,
    "calls": int,
    "prompt_tokens": int,
    "completion_tokens": int,
    "seconds": float,
    "reason": str,
}
"""``reason``: why a ``not_scored`` record was not scored (``ragtrace.eval.not_scored.reason``: ``no_content``,
``app_error``)."""
SCORE_COLUMNS: dict[str, type] = {
    "span_id": str,
    "metric": str,
    "value": float,
    "label": str,
    "explanation": str,
    "reason": str,
    "error_type": str,
    "trace_id": str,
    "service": str,
    "route": str,
    "time_ns": int,
    "source": str,
    "claims": str,
}
"""``claims``: a claim metric's per-claim verdicts, JSON (``ragtrace._wire_claims``: claim text when the app
captured content, verdict, deciding chunk, support probability)."""
JOIN_PENDING_COLUMNS: dict[str, type] = {
    "trace_id": str,
    "first_ns": int,
    "last_ns": int,
    "spans": int,
    "bytes": int,
}
"""``first_ns``/``last_ns``: when its first and latest such span arrived (``last_ns`` is also moved on when the
joiner looked and the trace was not ready); ``spans``, ``bytes``: how many, and their approximate size."""
ALERT_COLUMNS: dict[str, type] = {
    "id": int, "time_ns": int, "rule": str, "kind": str, "metric": str, "service": str, "route": str,
    "state": str, "previous_state": str, "value": float, "threshold": float, "message": str, "sinks": str,
    "silenced": int,
}  # fmt: skip
ALERT_GROUP_COLUMNS: dict[str, type] = {
    "group_key": str, "rule": str, "kind": str, "metric": str, "service": str, "route": str, "state": str,
    "detected": str, "since_ns": int, "notified_ns": int, "evaluated_ns": int, "last_alert_ns": int,
    "last_measured_ns": int, "baseline_end_ns": int, "announced": int, "value": float, "threshold": float,
    "message": str, "last_warning_ns": int,
}  # fmt: skip
SILENCE_COLUMNS: dict[str, type] = {
    "id": int, "rule": str, "service": str, "route": str, "starts_ns": int, "ends_ns": int, "created_ns": int,
    "author": str, "comment": str,
}  # fmt: skip
ACK_COLUMNS: dict[str, type] = {
    "id": int, "rule": str, "service": str, "route": str, "episode_ns": int, "time_ns": int, "author": str,
    "comment": str,
}  # fmt: skip

REVIEW_COLUMNS: dict[str, type] = {
    "span_id": str,
    "claim": int,
    "grounded": int,
    "note": str,
    "author": str,
    "time_ns": int,
    "service": str,
}
"""A review: ``grounded`` 1 when the person says the answer (or the claim) is supported by its chunks, 0 when
not; the latest review of a (record, claim) replaces the one before."""

RECORD_METADATA_COLUMNS: dict[str, type] = {"span_id": str, "key": str, "value": str, "time_ns": int}
"""A record's metadata as rows: each key of its span's ``metadata`` attribute (a JSON object) whose value is not
an object or array, and the span's ``user.id`` and ``session.id``; ``value`` as text as SQLite's ``CAST``
writes it (``3``, ``alice``; a JSON true is ``1`` there, ``true`` on PostgreSQL); ``time_ns`` the record's, for
retention. Filled by the store as records arrive (``ingest.fill_metadata``)."""


TABLES: Final = (
    Table(SPANS, SPAN_COLUMNS, ("span_id",), indexes=(("trace_id",),)),  # + idx_spans_model_calls, a step-4 index
    Table(
        RAG_RECORDS,
        RAG_COLUMNS,
        ("span_id",),
        indexes=(("time_ns",), ("service", "time_ns")),
        arrival=True,
        claimed=True,
    ),
    Table(
        SCORES,
        SCORE_COLUMNS,
        ("span_id", "metric"),
        # + idx_scores_metric_value_span_id, a step-7 index (the records list sorted by a score)
        indexes=(("metric", "time_ns"), ("service", "metric", "time_ns"), ("route", "metric", "time_ns")),
        arrival=True,
    ),
    Table(JOIN_PENDING, JOIN_PENDING_COLUMNS, ("trace_id",), indexes=(("first_ns",), ("last_ns",)), claimed=True),
    Table(
        ALERTS,
        ALERT_COLUMNS,
        ("id",),
        indexes=(("time_ns",),),
        rowid_pk=True,
        defaults=(("silenced", "0"),),
    ),
    Table(
        ALERT_GROUPS,
        ALERT_GROUP_COLUMNS,
        ("group_key",),
    ),
    Table(
        ALERT_SILENCES,
        SILENCE_COLUMNS,
        ("id",),
        indexes=(("ends_ns",),),
        rowid_pk=True,
    ),
    Table(
        ALERT_ACKS,
        ACK_COLUMNS,
        ("id",),
        indexes=(("rule", "episode_ns"),),
        rowid_pk=True,
    ),
    Table(REVIEWS, REVIEW_COLUMNS, ("span_id", "claim"), indexes=(("time_ns",),), not_null=("grounded", "time_ns")),
    Table(
        RECORD_METADATA,
        RECORD_METADATA_COLUMNS,
        ("span_id", "key", "value"),
        indexes=(("key", "value", "time_ns", "span_id"), ("time_ns",)),
        not_null=("key", "value", "time_ns"),
    ),
    Table(
        PHOENIX_CURSOR,
        {"url": str, "after_row": int, "updated_ns": int, "after_xact": int},
        ("url",),
        not_null=("after_row", "updated_ns", "after_xact"),
        defaults=(("after_xact", "0"),),
    ),
    Table(
        SCORE_HOURS,
        {"hour": int, "service": str, "metric": str, "slot": int, "n": int, "total": float},
        ("hour", "service", "metric", "slot"),
        not_null=("service", "metric", "n", "total"),
    ),
    Table(
        RECORD_HOURS,
        {
            "hour": int,
            "service": str,
            "decision": str,
            "judge": str,
            "slot": int,
            "records": int,
            "costed": int,
            "calls": int,
            "prompt_tokens": int,
            "completion_tokens": int,
            "seconds": float,
            "timed": int,
        },
        ("hour", "service", "decision", "judge", "slot"),
        not_null=(
            "service",
            "decision",
            "judge",
            "records",
            "costed",
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "seconds",
            "timed",
        ),
    ),
    Table(
        RECORD_QUALITY,
        {
            "span_id": str,
            "service": str,
            "time_ns": int,
            "n": int,
            "overall": float,
            "worst": float,
            "recorded_ns": int,
        },
        ("span_id",),
        # The period's overall scores and its records scored elsewhere (a range of time, the rest read in the
        # index, the service too: a narrower index per service would cost every write); the period's records
        # with a score (by the record's time); the problem records, lowest overall first, newest first among equals.
        indexes=(
            ("time_ns", "recorded_ns", "overall", "service"),
            ("recorded_ns", "service"),
            ("overall", "time_ns DESC"),
        ),
        not_null=("n", "overall", "worst"),
    ),
    Table(
        QUALITY_HOURS,
        {"hour": int, "recorded_hour": int, "service": str, "slot": int, "n": int, "total": float},
        ("hour", "recorded_hour", "service", "slot"),
        # The period's records with a score, by their record's hour (the key reads them by their scores' hour).
        indexes=(("recorded_hour",),),
        not_null=("service", "n", "total"),
    ),
)
"""Every table the store holds, in creation order."""


@dataclass(frozen=True, slots=True)
class TextSearch:
    """The index of a table's text columns that makes a substring search (``LIKE '%text%'``) an index lookup.

    * SQLite: ``<table>_fts``, an FTS5 table with the ``trigram`` tokenizer over ``columns``, external content
      (it stores the index only, the text stays in ``table``; Datasette finds it by its name and offers its
      search box), kept in step by triggers on insert, delete and an update that changes a searched column.
      A phrase ``MATCH`` of text of 3 characters or more finds every row with it as a substring, ignoring case
      (Unicode case folding, so a superset of ``LIKE``'s ASCII-only folding): the pages' reads take its rowids
      and keep ``LIKE`` on them, so what matches is what matched before the index.
    * PostgreSQL: a ``pg_trgm`` GIN index per column (``idx_<table>_<column>_trgm``) of the column in the ``"C"``
      collation (``COLLATION``), which the search's ``ILIKE`` in that collation uses by itself (an index serves
      only a condition in its own collation); the extension is created by the migration (``CREATE EXTENSION``,
      which needs the right to create in the database when it is not there yet). In the ``"C"`` collation
      ``ILIKE`` folds ASCII's case only, as SQLite's ``LIKE`` does, whatever the database's locale, and costs
      half of ``ILIKE`` in a ``C.UTF-8`` database (which folds all of Unicode's case through the C library);
      the trigrams are the same either way (``pg_trgm`` folds case in the database's locale), so the index still
      finds every row the condition keeps."""

    table: str
    columns: tuple[str, ...]

    COLLATION = '"C"'
    """PostgreSQL: the collation of the search's ``ILIKE`` and of its indexes."""

    def index(self, column: str) -> str:
        """PostgreSQL: the name of ``column``'s trigram index."""
        return f"idx_{self.table}_{column}_trgm"

    @property
    def fts(self) -> str:
        """SQLite: the FTS5 table's name."""
        return f"{self.table}_fts"

    def ddl(self, dialect: Dialect) -> list[str]:
        """The statements that create the index (and its triggers) where missing, and fill it from the rows
        already in ``table``."""
        cols = ", ".join(map(quoted, self.columns))
        if dialect is POSTGRESQL:
            return [
                f"CREATE INDEX IF NOT EXISTS {quoted(self.index(column))} "
                f"ON {quoted(self.table)} USING gin ({quoted(column)} COLLATE {self.COLLATION} gin_trgm_ops)"
                for column in self.columns
            ]
        fts, table = quoted(self.fts), quoted(self.table)
        new = ", ".join(f"new.{quoted(c)}" for c in self.columns)
        old = ", ".join(f"old.{quoted(c)}" for c in self.columns)
        insert = f"INSERT INTO {fts} (rowid, {cols}) VALUES (new.rowid, {new});"
        delete = f"INSERT INTO {fts} ({fts}, rowid, {cols}) VALUES ('delete', old.rowid, {old});"
        changed = " OR ".join(f"old.{quoted(c)} IS NOT new.{quoted(c)}" for c in self.columns)
        return [
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5({cols}, content={table}, "
            "content_rowid='rowid', tokenize='trigram')",
            f"CREATE TRIGGER IF NOT EXISTS {quoted(self.fts + '_ai')} AFTER INSERT ON {table} BEGIN {insert} END",
            f"CREATE TRIGGER IF NOT EXISTS {quoted(self.fts + '_ad')} AFTER DELETE ON {table} BEGIN {delete} END",
            # Only when a searched column changed: the receivers' upserts set every column, and the claims and
            # server-side scoring update others; re-indexing those rows would cost every such write.
            f"CREATE TRIGGER IF NOT EXISTS {quoted(self.fts + '_au')} AFTER UPDATE OF {cols} ON {table} "
            f"WHEN {changed} BEGIN {delete} {insert} END",
            f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')",
        ]


TEXT_SEARCH: Final = TextSearch(RAG_RECORDS, ("query", "answer"))
"""What the pages' ``q=`` searches: the records' query and answer."""


@dataclass(frozen=True, slots=True)
class RowidBlocks:
    """SQLite: for each block of ``SIZE`` consecutive rowids of ``table``, the greatest ``column`` (a time) any of
    its rows was written with, in ``<table>_blocks (block, newest)``: a bound on the time of every row of the block.
    Rowids number the rows in the order they arrived, and records mostly arrive in the order of their time, so the
    text search (``triage._by_blocks``) reads its matches' records by block, the blocks with the newest bounds
    first, and stops after a block or two: once the page is full and the next bound is older than its last record,
    no row left unread can come before it. Where rows arrived in another order the bounds overlap, and more blocks
    are read.

    Kept by triggers: on insert, and on an update that changes the time (the receivers' upserts). A delete leaves a
    block's bound as it was, still a bound; retention drops the blocks left without a row (``prune``). Like the
    FTS5 table's external content, it takes a row's rowid to stay its own: SQLite documents that ``VACUUM`` may
    renumber the rowids of a table without an ``INTEGER PRIMARY KEY`` (``rag_records`` is keyed on its span id),
    which would leave both to be built again (3.40's kept them, tried on a table with deleted rows). PostgreSQL:
    none (its search ANDs the trigram bitmap with ``time_ns``'s range)."""

    table: str
    column: str

    SIZE = 1024
    """Rowids a block: a million rows are under a thousand blocks; a search reads a block's records or none."""

    @property
    def name(self) -> str:
        """The table of bounds."""
        return f"{self.table}_blocks"

    def ddl(self, dialect: Dialect) -> list[str]:
        """The statements that create the table and its triggers where missing and bound the rows already in
        ``table``; none on PostgreSQL."""
        if dialect is not SQLITE:
            return []
        name, table, column = quoted(self.name), quoted(self.table), quoted(self.column)

        def keep(select: str) -> str:
            # An upsert of (block, time) rows that keeps each block's greater time.
            return (
                f"INSERT INTO {name} (block, newest) {select} "
                "ON CONFLICT (block) DO UPDATE SET newest = excluded.newest WHERE excluded.newest > newest"
            )

        def trigger(suffix: str) -> str:
            return f"CREATE TRIGGER IF NOT EXISTS {quoted(self.name + suffix)}"

        # A row without a time bounds nothing.
        written = keep(f"SELECT new.rowid / {self.SIZE}, new.{column} WHERE new.{column} IS NOT NULL") + ";"
        return [
            f"CREATE TABLE IF NOT EXISTS {name} (block INTEGER PRIMARY KEY, newest INTEGER NOT NULL)",
            f"{trigger('_ai')} AFTER INSERT ON {table} BEGIN {written} END",
            f"{trigger('_au')} AFTER UPDATE OF {column} ON {table} WHEN new.{column} IS NOT old.{column} "
            f"BEGIN {written} END",
            keep(f"SELECT rowid / {self.SIZE}, MAX({column}) FROM {table} WHERE {column} IS NOT NULL GROUP BY 1"),
        ]

    def prune(self) -> str:
        """The statement dropping the blocks left without a row (after a delete): a block's bound may be of rows
        long gone, and the rowids of an emptied table start again at 1."""
        return (
            f"DELETE FROM {quoted(self.name)} WHERE NOT EXISTS (SELECT 1 FROM {quoted(self.table)} "
            f"WHERE rowid >= block * {self.SIZE} AND rowid < (block + 1) * {self.SIZE})"
        )


RECORD_BLOCKS: Final = RowidBlocks(RAG_RECORDS, "time_ns")
"""SQLite: the records' times bounded by blocks of arrival, which the text search walks by (``triage.py``)."""
