"""Versioned migrations: the one way the store's schema is created or changed, on either engine.

A step is a function of the connection and its dialect; step ``i`` takes a store from version ``i`` to ``i + 1``.
``migrate`` runs the steps above the store's version, in order, in the one transaction that also records the
version reached, and returns the version it found. Several processes may open one store at once (the server,
its decode workers, the watcher, ``prune``; on PostgreSQL, several replicas starting together): each takes the
engine's lock for migrations first and reads the version under it, so the first migrates and the others find
the work done.

* SQLite: the version is ``PRAGMA user_version`` (0 for a new file, and for every file an earlier collector
  wrote, which predates versions); the lock is SQLite's write lock (``BEGIN IMMEDIATE``).
* PostgreSQL: the version is the one row of ``ragtrace_schema``; the lock is a transaction-scoped advisory
  lock (``pg_advisory_xact_lock``). DDL is transactional there too.

Step 12 adds, on SQLite, the records' times bounded by blocks of arrival (``schema.RECORD_BLOCKS``), which the text
search walks by, filled from the records stored (nothing on PostgreSQL). Step 11 adds the overall scores added up by
hour (``rollups.py``: ``quality_hours`` and its triggers), filled from the ``record_quality`` rows stored. Step 10
rebuilds PostgreSQL's text search indexes in the ``"C"`` collation, which the search reads in (nothing on SQLite).
Step 9 adds the rollups the overview and the costs page read (``rollups.py``: ``score_hours``, ``record_hours``,
``record_quality`` and the triggers that keep them), filled from the rows stored. Step 8 adds the order PostgreSQL's
rows arrived in: an ``xact`` column (the writing transaction) on the tables read in that order, and its index, and
the cursor's second half (``phoenix_cursor.after_xact``) on both engines (``arrival.py``). Step 7 adds the index of
scores by value (``SCORES_BY_VALUE``), which the records list sorted by a score walks. Step 6 adds records' metadata
as rows (``record_metadata``, ``metadata.py``), filled from the records already stored. Step 5 adds the index of
text search (``schema.TEXT_SEARCH``: FTS5 trigram on SQLite, ``pg_trgm`` GIN on PostgreSQL) and builds it over the
rows the store holds. Step 4 adds what each model call took to ``spans`` (filled for the spans already stored) and
the index of model calls by time. Step 3 adds people's reviews of records. Step 2 adds the claims of work that
several replicas share (the join, server-side scoring). Step 1 is the baseline: every table and index of
``schema.py``, made where missing, and the columns an earlier collector's SQLite file lacks (``rag_records.reason``,
``scores.claims``, ``alerts.silenced``), added with their rows kept. A later change of schema is a new step appended
to ``STEPS`` (never an edit of an old one), and ``schema.py`` shows the result.

A store whose version is above ``CURRENT`` was written by a newer collector: ``SchemaTooNew``, since this one
would misread it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ragtrace_collector._store import metadata, rollups
from ragtrace_collector._store.dialect import SQLITE, AnyConnection, Dialect, column_names, dialect_of
from ragtrace_collector._store.schema import (
    ALERT_ACKS,
    PHOENIX_CURSOR,
    QUALITY_HOURS,
    RAG_RECORDS,
    RECORD_BLOCKS,
    RECORD_HOURS,
    RECORD_METADATA,
    RECORD_QUALITY,
    REVIEWS,
    SCORE_HOURS,
    SCORES,
    SPANS,
    TABLES,
    TEXT_SEARCH,
    XACT,
    quoted,
)

__all__ = [
    "CURRENT",
    "MODEL_CALLS",
    "MODEL_CALLS_INDEX",
    "SCORES_BY_VALUE",
    "STEPS",
    "MissingExtension",
    "SchemaTooNew",
    "migrate",
    "version",
]

_VERSION_TABLE: Final = "ragtrace_schema"
"""PostgreSQL: the table holding the schema version (SQLite keeps it in the file's header)."""
_LOCK_KEY: Final = 0x72616774  # "ragt": the advisory lock of migrations, one number for every replica


class SchemaTooNew(RuntimeError):
    """The store was written by a newer collector (its schema version is above this one's)."""


class MissingExtension(RuntimeError):
    """PostgreSQL: the store needs an extension the database lacks and its user may not create."""


def _baseline(conn: AnyConnection, dialect: Dialect) -> None:
    for table in TABLES:
        conn.execute(table.ddl(dialect))
        present = set(column_names(conn, table.name))
        for column in table.columns:
            if column not in present:  # a file from before the column: keep its rows, add the column
                conn.execute(f"ALTER TABLE {quoted(table.name)} ADD COLUMN {table.column_ddl(column, dialect)}")
        for ddl in table.index_ddl():
            conn.execute(ddl)
    # Earlier collectors named this one index by hand; the schema's name replaces it.
    conn.execute(f"DROP INDEX IF EXISTS {quoted(f'idx_{ALERT_ACKS}_episode')}")
    if dialect is not SQLITE:
        # Text as jsonb, NULL where it is not JSON (PostgreSQL 15 has no IS JSON; a cast would fail the query):
        # the pages' metadata filter reads span attributes with it.
        conn.execute(
            "CREATE OR REPLACE FUNCTION ragtrace_jsonb(value text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$ "
            "BEGIN RETURN value::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $$"
        )


def _claims(conn: AnyConnection, dialect: Dialect) -> None:
    """The claims of work (``claims.py``): ``claimed_by``/``claimed_until`` on ``rag_records`` and ``join_pending``,
    and an index of the records still undecided, which the sweep for a dead replica's work reads."""
    for table in TABLES:
        present = set(column_names(conn, table.name))
        for column in table.all_columns:
            if column not in present:
                conn.execute(f"ALTER TABLE {quoted(table.name)} ADD COLUMN {table.column_ddl(column, dialect)}")
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {quoted(f'idx_{RAG_RECORDS}_undecided')} "
        f"ON {quoted(RAG_RECORDS)} ({quoted('claimed_until')}) WHERE decision IS NULL"
    )


def _create(conn: AnyConnection, dialect: Dialect, *names: str) -> None:
    """The tables ``names`` of ``schema.TABLES`` and their indexes, where missing (in ``TABLES``' order)."""
    for table in TABLES:
        if table.name in names:
            conn.execute(table.ddl(dialect))
            for ddl in table.index_ddl():
                conn.execute(ddl)


def _reviews(conn: AnyConnection, dialect: Dialect) -> None:
    """People's reviews of records (``reviews.py``): the ``reviews`` table and its index."""
    _create(conn, dialect, REVIEWS)


MODEL_CALLS_INDEX: Final = "idx_spans_model_calls"
MODEL_CALLS: Final = "(input_tokens IS NOT NULL OR output_tokens IS NOT NULL)"
"""The spans that are model calls, as the cost page's query writes it (a partial index is used only for a query
that repeats its condition)."""


def _json_count(dialect: Dialect, key: str) -> str:
    """SQL: the span attribute ``key`` (a constant wire name) when it is a whole number >= 0, else NULL."""
    if dialect is SQLITE:
        path = f"'$.\"{key}\"'"
        return (
            f"CASE WHEN json_type(attributes, {path}) = 'integer' AND json_extract(attributes, {path}) >= 0 "
            f"THEN json_extract(attributes, {path}) END"
        )
    value = f"(ragtrace_jsonb(attributes) -> '{key}')"
    return (
        f"CASE WHEN jsonb_typeof({value}) = 'number' AND ({value})::numeric >= 0 "
        f"AND ({value})::numeric = trunc(({value})::numeric) THEN ({value})::numeric::bigint END"
    )


def _json_text(dialect: Dialect, key: str) -> str:
    if dialect is SQLITE:
        return (
            f"CASE WHEN json_type(attributes, '$.\"{key}\"') = 'text' THEN json_extract(attributes, '$.\"{key}\"') END"
        )
    return f"NULLIF(ragtrace_jsonb(attributes) ->> '{key}', '')"


def _model_calls(conn: AnyConnection, dialect: Dialect) -> None:
    """What each model call took, in columns of ``spans`` (``model``, ``input_tokens``, ``output_tokens``; the
    receivers fill them as spans arrive), filled for the spans already stored, and a partial index of the spans
    that are model calls by time, which the cost page reads."""
    (table,) = [t for t in TABLES if t.name == SPANS]
    present = set(column_names(conn, SPANS))
    for column in ("model", "input_tokens", "output_tokens"):
        if column not in present:
            conn.execute(f"ALTER TABLE {quoted(SPANS)} ADD COLUMN {table.column_ddl(column, dialect)}")
    inputs = ", ".join(_json_count(dialect, k) for k in ("gen_ai.usage.input_tokens", "llm.token_count.prompt"))
    outputs = ", ".join(_json_count(dialect, k) for k in ("gen_ai.usage.output_tokens", "llm.token_count.completion"))
    models = ", ".join(
        _json_text(dialect, k) for k in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
    )
    # Only spans whose text names a token count are parsed: the others keep NULL without costing a JSON parse.
    maybe = "(attributes LIKE '%gen_ai.usage.%' OR attributes LIKE '%llm.token_count.%')"
    valid = "json_valid(attributes)" if dialect is SQLITE else "ragtrace_jsonb(attributes) IS NOT NULL"
    conn.execute(
        f"UPDATE {quoted(SPANS)} SET input_tokens = COALESCE({inputs}), output_tokens = COALESCE({outputs}) "
        f"WHERE {maybe} AND {valid}"
    )
    conn.execute(f"UPDATE {quoted(SPANS)} SET model = COALESCE({models}) WHERE {MODEL_CALLS}")
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {quoted(MODEL_CALLS_INDEX)} ON {quoted(SPANS)} (end_ns) WHERE {MODEL_CALLS}"
    )


def _text_search(conn: AnyConnection, dialect: Dialect) -> None:
    """The index of the pages' text search (``schema.TEXT_SEARCH``), built over the rows already stored: one
    pass over ``rag_records`` inside the migration's transaction (168 s for a million records on SQLite on two
    busy cores, ``bench/triage_page.py``).

    PostgreSQL: ``pg_trgm`` ships with PostgreSQL (``postgresql-contrib`` on older packagings) and is a trusted
    extension, which a user with ``CREATE`` on the database may create. Without that right the migration stops
    with ``MissingExtension`` saying what to run as a superuser, rather than serve searches that scan: a scan
    of a million records is a third of a second a page, and it would go unnoticed."""
    if dialect is not SQLITE:
        present = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").fetchone()
        if present is None:
            allowed = conn.execute("SELECT has_database_privilege(current_database(), 'CREATE')").fetchone()[0]
            available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'").fetchone()
            if not (allowed and available):
                database = conn.execute("SELECT current_database()").fetchone()[0]
                raise MissingExtension(
                    f"the collector's text search needs the pg_trgm extension in database {database!r}, "
                    + ("and this user may not create it: " if available else "and the server lacks it: ")
                    + f"as a superuser, run CREATE EXTENSION pg_trgm; in {database!r}"
                    + ("" if available else " after installing PostgreSQL's contrib modules")
                    + ", then start the collector again"
                )
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for ddl in TEXT_SEARCH.ddl(dialect):
        conn.execute(ddl)


def _record_metadata(conn: AnyConnection, dialect: Dialect) -> None:
    """Records' metadata as rows (``record_metadata``, ``metadata.py``), which the pages' ``meta=`` filter looks
    up instead of reading every record's span attributes, filled from the records already stored."""
    _create(conn, dialect, RECORD_METADATA)
    metadata.fill(conn)


SCORES_BY_VALUE: Final = f"idx_{SCORES}_metric_value_span_id"
"""``scores(metric, value, span_id)``: a metric's records in the order of their score, a page at a time."""


def _scores_by_value(conn: AnyConnection, dialect: Dialect) -> None:
    """The index the records list sorted by a metric's score walks (``SCORES_BY_VALUE``), built over the scores
    already stored; the span id in it makes the keyset cursor ``(value, span_id)`` one seek."""
    conn.execute(f"CREATE INDEX IF NOT EXISTS {quoted(SCORES_BY_VALUE)} ON {quoted(SCORES)} (metric, value, span_id)")


def _arrival_order(conn: AnyConnection, dialect: Dialect) -> None:
    """PostgreSQL: ``xact`` on each arrival table and the ``(xact, rowid)`` index its readers walk; both engines:
    ``phoenix_cursor.after_xact``. Rows already stored get ``xact`` 0 (a constant default, so no table is
    rewritten): they all come before any row written from now on, which is the order a reader needs."""
    for table in TABLES:
        present = set(column_names(conn, table.name))
        if table.name == PHOENIX_CURSOR and "after_xact" not in present:
            conn.execute(f"ALTER TABLE {quoted(table.name)} ADD COLUMN {table.column_ddl('after_xact', dialect)}")
        if not (table.arrival and dialect.arrival_xact is not None):
            continue
        if XACT not in present:
            conn.execute(f"ALTER TABLE {quoted(table.name)} ADD COLUMN {quoted(XACT)} BIGINT NOT NULL DEFAULT 0")
        conn.execute(f"ALTER TABLE {quoted(table.name)} ALTER COLUMN {quoted(XACT)} SET DEFAULT {dialect.arrival_xact}")
        for ddl in table.arrival_index_ddl(dialect):
            conn.execute(ddl)


def _rollups(conn: AnyConnection, dialect: Dialect) -> None:
    """The rollups of the overview and the costs page (``rollups.py``): their tables, the triggers that keep them
    in step, and their sums over the rows already stored (one pass over ``scores`` and ``rag_records``)."""
    _create(conn, dialect, SCORE_HOURS, RECORD_HOURS, RECORD_QUALITY)  # step 11 adds the fourth
    rollups.install(conn, dialect)
    rollups.backfill(conn, dialect)


def _text_search_in_c(conn: AnyConnection, dialect: Dialect) -> None:
    """PostgreSQL: the text search's trigram indexes again, of the columns in the ``"C"`` collation, which the
    search's ``ILIKE`` now reads in (``schema.TextSearch``: ASCII's case folded only, as on SQLite, whatever the
    database's locale, at half the cost a row); an index of step 5 (the database's collation) would serve it no
    more. Built over the rows the store holds, in the migration's transaction (as step 5's). SQLite: nothing."""
    if dialect is SQLITE:
        return
    for column in TEXT_SEARCH.columns:
        name = TEXT_SEARCH.index(column)
        (found,) = conn.execute("SELECT pg_get_indexdef(to_regclass(?))", (quoted(name),)).fetchone()
        if found is not None and f"COLLATE {TEXT_SEARCH.COLLATION}" not in found:
            conn.execute(f"DROP INDEX {quoted(name)}")
    for ddl in TEXT_SEARCH.ddl(dialect):
        conn.execute(ddl)


def _quality_hours(conn: AnyConnection, dialect: Dialect) -> None:
    """The overall scores added up by hour (``rollups.py``: ``quality_hours``), its triggers, and its sums over the
    ``record_quality`` rows already stored (one pass over them)."""
    _create(conn, dialect, QUALITY_HOURS)
    rollups.install_quality_hours(conn, dialect)
    rollups.backfill_quality_hours(conn)


def _record_blocks(conn: AnyConnection, dialect: Dialect) -> None:
    """SQLite: the records' times bounded by blocks of arrival (``schema.RECORD_BLOCKS``) and their triggers,
    filled in one pass over ``rag_records``. PostgreSQL: nothing."""
    for ddl in RECORD_BLOCKS.ddl(dialect):
        conn.execute(ddl)


STEPS: Final[tuple[Callable[[AnyConnection, Dialect], None], ...]] = (
    _baseline,
    _claims,
    _reviews,
    _model_calls,
    _text_search,
    _record_metadata,
    _scores_by_value,
    _arrival_order,
    _rollups,
    _text_search_in_c,
    _quality_hours,
    _record_blocks,
)
"""Step ``i`` takes a store from version ``i`` to ``i + 1``."""
CURRENT: Final = len(STEPS)


def version(conn: AnyConnection) -> int:
    """The store's schema version (0: new, or an SQLite file written before versions)."""
    if dialect_of(conn) is SQLITE:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    found = conn.execute("SELECT to_regclass(?)", (_VERSION_TABLE,)).fetchone()[0]
    if found is None:
        return 0
    row = conn.execute(f"SELECT version FROM {_VERSION_TABLE}").fetchone()
    return 0 if row is None else int(row[0])


def _lock(conn: AnyConnection, dialect: Dialect) -> None:
    if conn.in_transaction:
        conn.commit()
    if dialect is SQLITE:
        conn.execute("BEGIN IMMEDIATE")
    else:
        conn.execute("BEGIN")
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))


def _record(conn: AnyConnection, dialect: Dialect) -> None:
    if dialect is SQLITE:
        # PRAGMA takes no bound parameter; CURRENT is this module's own integer.
        conn.execute(f"PRAGMA user_version = {CURRENT}")
        return
    conn.execute(f"CREATE TABLE IF NOT EXISTS {_VERSION_TABLE} (version INTEGER NOT NULL)")
    conn.execute(f"DELETE FROM {_VERSION_TABLE}")
    conn.execute(f"INSERT INTO {_VERSION_TABLE} (version) VALUES (?)", (CURRENT,))


def migrate(conn: AnyConnection) -> int:
    """Bring the store to ``CURRENT``; return the version it was at. Commits; safe to run from several processes
    at once. ``SchemaTooNew`` when the store is ahead of this collector."""
    dialect = dialect_of(conn)
    found = version(conn)  # without the lock first: the usual case, a current store, takes no lock
    if found == CURRENT:
        if conn.in_transaction:
            conn.commit()
        return found
    _lock(conn, dialect)
    try:
        found = version(conn)
        if found > CURRENT:
            raise SchemaTooNew(
                f"the store's schema is version {found}, newer than this collector's {CURRENT}: "
                "upgrade ragtrace-collector, or point it at another store"
            )
        for step in STEPS[found:]:
            step(conn, dialect)
        _record(conn, dialect)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return found
