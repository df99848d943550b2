"""Rollups: what the overview and the costs page add up, kept added up as rows arrive.

The overview over all of a million records read every score: 6.9 s on SQLite, past the pages' 2 s read budget
(``bench/page_walk.py``). Three tables hold the sums instead:

* ``score_hours``: per hour, service and metric, how many scores (``n``, non-NULL values only) and their sum.
* ``record_hours``: per hour, service, decision and judge, how many records, and the judge's calls, tokens and
  seconds of the records it scored (``costed``: those with ``calls``; ``timed``: those that also said ``seconds``).
* ``record_quality``: per scored record, its overall score (the mean of its scores, each as "higher is
  better"), its worst one, how many, its scores' service and latest time, and its record's time when the
  record is stored (``recorded_ns``): the overview's overall score, its problem records and its scored counts.
* ``quality_hours``: ``record_quality`` added up per hour of its scores' time, hour of its record's time (-1:
  no record stored) and service: how many records and the sum of their overall scores. The overview over all of
  a million records read each of their ``record_quality`` rows once: 378 of its 391 ms on SQLite
  (``bench/triage_page.py``). It follows ``record_quality`` by triggers on both engines (statement triggers on
  PostgreSQL, row triggers on SQLite: one row a record, where ``scores`` has several), whoever writes it.

A key's NULL (a record with no decision, a score with no service) is stored as ``''`` (a primary key column
cannot hold NULL on PostgreSQL); a row without a time goes to hour -1, which only an unbounded read counts, as a
raw read would. Hours are ``time_ns // 3_600_000_000_000`` since the epoch, UTC.

How they stay in step with ``scores`` and ``rag_records``:

* PostgreSQL: statement triggers with transition tables, whoever writes. One aggregated upsert a statement, in
  key order (so concurrent writers lock shared rows in one order), into a ``slot`` of its own (the backend's pid
  modulo ``SLOTS``): replicas that write at once rarely wait for each other's hour rows. Readers add the slots up.
  A statement first takes the ``record_quality`` rows of its records (``_pg_hold_records``).
* SQLite: ``ingest`` reads the spans of a batch before and after its upserts and adds the difference
  (``Snapshot``, ``apply_difference``); delete triggers follow retention; ``transfer`` adds them up again after a
  copy. Those are every writer of the two tables on SQLite. (Row triggers on insert halved SQLite's ingest.)

``record_quality`` is recomputed from a record's scores whenever one changes (not adjusted: a worst score
cannot be taken away), so it is exact whatever the order of writes. Its overall and worst read the metrics lower
is better as ``LOWER_AT_STEP_9`` names them, which PostgreSQL's triggers hold written out: a change of
``ragtrace.metrics.LOWER_IS_BETTER`` needs a migration step that installs the triggers again and refills
``record_quality`` (``test_rollups`` fails until there is one).

Readers split a period into the whole hours inside it, read from the rollups, and the part-hours at its ends,
read from the rows (``Period``); every sum is then exact. The per-record figures take a record at its scores'
latest time (the raw read counted each score at its own time; they differ only for a record whose scores
straddle the period's edge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ragtrace_collector._store.dialect import SQLITE, AnyConnection, Dialect
from ragtrace_collector._store.schema import (
    QUALITY_HOURS,
    RAG_RECORDS,
    RECORD_HOURS,
    RECORD_QUALITY,
    SCORE_HOURS,
    SCORES,
    quoted,
)

__all__ = [
    "HOUR_NS",
    "LOWER_AT_STEP_9",
    "SLOTS",
    "Period",
    "QualitySums",
    "Snapshot",
    "apply_difference",
    "backfill",
    "backfill_quality_hours",
    "install",
    "install_quality_hours",
    "prune_empty",
    "read_quality",
    "read_record_hours",
    "read_record_rows",
    "read_score_hours",
    "read_score_rows",
]

HOUR_NS: Final = 3_600_000_000_000
SLOTS: Final = 16
"""PostgreSQL: rows of a key per hour, one a writer's backend picks; more spread concurrent writers wider."""

LOWER_AT_STEP_9: Final = (
    "context_contradiction",
    "hallucinated_claim",
    "hallucination",
    "irrelevant_noise_sensitivity",
    "noise_sensitivity",
    "relevant_noise_sensitivity",
)
"""The metrics lower is better, as schema step 9 wrote them into the triggers (``ragtrace.metrics.LOWER_IS_BETTER``
then)."""


def _goodness(alias: str) -> str:
    """SQL: a score as "higher is better" (``1 - value`` for the metrics lower is better)."""
    names = ", ".join(f"'{m}'" for m in LOWER_AT_STEP_9)  # the package's own metric names: plain words
    return f"CASE WHEN {alias}.metric IN ({names}) THEN 1.0 - {alias}.value ELSE {alias}.value END"


# -- the contributions of rows, signed --------------------------------------------------------------------------


def _hour(alias: str) -> str:
    return f"COALESCE({alias}.time_ns / {HOUR_NS}, -1)"


def _named(items: list[str], names: tuple[str, ...]) -> str:
    return ", ".join(f"{item} AS {name}" for item, name in zip(items, names, strict=True))


def _score_delta(alias: str, sign: str, slot: str) -> str:
    """SELECT list: a ``scores`` row's key in ``score_hours`` (``slot`` its slot) and its signed count and sum."""
    a = alias
    items = [_hour(a), f"COALESCE({a}.service, '')", f"{a}.metric", slot, f"{sign}1", f"{sign}{a}.value"]
    return _named(items, (*_SCORE_KEY, *_SCORE_SUMS))


def _record_delta(alias: str, sign: str, slot: str) -> str:
    """SELECT list: a ``rag_records`` row's key in ``record_hours`` and its signed counts and sums."""
    a = alias
    costed = f"(CASE WHEN {a}.calls IS NULL THEN 0 ELSE 1 END)"
    items = [
        _hour(a), f"COALESCE({a}.service, '')", f"COALESCE({a}.decision, '')", f"COALESCE({a}.judge, '')", slot,
        f"{sign}1", f"{sign}{costed}", f"{sign}COALESCE({a}.calls, 0)",
        f"{sign}{costed} * COALESCE({a}.prompt_tokens, 0)", f"{sign}{costed} * COALESCE({a}.completion_tokens, 0)",
        f"{sign}{costed} * COALESCE({a}.seconds, 0.0)",
        f"{sign}(CASE WHEN {a}.calls IS NULL OR {a}.seconds IS NULL THEN 0 ELSE 1 END)",
    ]  # fmt: skip
    return _named(items, (*_RECORD_KEY, *_RECORD_SUMS))


def _quality_delta(alias: str, sign: str, slot: str) -> str:
    """SELECT list: a ``record_quality`` row's key in ``quality_hours`` and its signed count and sum."""
    a = alias
    items = [
        _hour(a), f"COALESCE({a}.recorded_ns / {HOUR_NS}, -1)", f"COALESCE({a}.service, '')", slot, f"{sign}1",
        f"{sign}{a}.overall",
    ]  # fmt: skip
    return _named(items, (*_QUALITY_KEY, *_QUALITY_SUMS))


_QUALITY_COUNTED: Final = "n > 0"
"""The ``record_quality`` rows ``quality_hours`` counts: not the empty rows PostgreSQL's triggers hold a record's
place with inside a statement (``_pg_hold_records``), which never outlive it."""
_SCORE_KEY: Final = ("hour", "service", "metric", "slot")
_SCORE_SUMS: Final = ("n", "total")
_RECORD_KEY: Final = ("hour", "service", "decision", "judge", "slot")
_RECORD_SUMS: Final = ("records", "costed", "calls", "prompt_tokens", "completion_tokens", "seconds", "timed")
_QUALITY_KEY: Final = ("hour", "recorded_hour", "service", "slot")
_QUALITY_SUMS: Final = ("n", "total")


def _add(table: str, key: tuple[str, ...], sums: tuple[str, ...], select: str) -> str:
    """An upsert adding the rows of ``select`` (the key, then the sums) to ``table``'s."""
    columns = ", ".join((*key, *sums))
    updates = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in sums)
    return f"INSERT INTO {table} ({columns}) {select} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"


def _quality_refresh(spans: str) -> list[str]:
    """Recompute ``record_quality`` for the span ids ``spans`` (a subquery or one value): their row from their
    scores, or none when they have none left."""
    q, s, r = RECORD_QUALITY, SCORES, RAG_RECORDS
    return [
        f"DELETE FROM {q} WHERE span_id IN ({spans}) AND NOT EXISTS "
        f"(SELECT 1 FROM {s} WHERE {s}.span_id = {q}.span_id AND {s}.value IS NOT NULL)",
        f"INSERT INTO {q} (span_id, service, time_ns, n, overall, worst, recorded_ns) "
        f"SELECT s.span_id, MAX(s.service), MAX(s.time_ns), COUNT(*), AVG({_goodness('s')}), MIN({_goodness('s')}), "
        f"(SELECT r.time_ns FROM {r} r WHERE r.span_id = s.span_id) "
        f"FROM {s} s WHERE s.span_id IN ({spans}) AND s.value IS NOT NULL GROUP BY s.span_id ORDER BY s.span_id "
        f"ON CONFLICT (span_id) DO UPDATE SET service = excluded.service, time_ns = excluded.time_ns, "
        f"n = excluded.n, overall = excluded.overall, worst = excluded.worst, recorded_ns = excluded.recorded_ns",
    ]


# -- SQLite: the writes' differences, and delete triggers -----------------------------------------------------


def _sqlite_triggers() -> list[str]:
    """Retention's deletes (and any other): each row's part taken away, its record's row recomputed. Inserts and
    updates are ``ingest``'s, which adds their difference itself (``Snapshot``): a row trigger on them halved
    SQLite's ingest (``bench/store_write.py --rollup-cost``)."""

    def take_score(alias: str) -> str:
        select = f"SELECT {_score_delta(alias, '-', '0')} WHERE {alias}.value IS NOT NULL"
        return _add(SCORE_HOURS, _SCORE_KEY, _SCORE_SUMS, select) + ";"

    def take_record(alias: str) -> str:
        # WHERE: SQLite parses an upsert's SELECT without one as a join's ON.
        return _add(RECORD_HOURS, _RECORD_KEY, _RECORD_SUMS, f"SELECT {_record_delta(alias, '-', '0')} WHERE 1") + ";"

    refresh = " ".join(f"{sql};" for sql in _quality_refresh("old.span_id"))
    s, r = quoted(SCORES), quoted(RAG_RECORDS)
    return [
        f"CREATE TRIGGER IF NOT EXISTS rollup_scores_ad AFTER DELETE ON {s} BEGIN {take_score('old')} {refresh} END",
        f"CREATE TRIGGER IF NOT EXISTS rollup_records_ad AFTER DELETE ON {r} BEGIN {take_record('old')} "
        f"UPDATE {RECORD_QUALITY} SET recorded_ns = NULL WHERE span_id = old.span_id; END",
    ]


def _sqlite_quality_triggers() -> list[str]:
    """``quality_hours`` after every change of ``record_quality``: the old row's part taken away, the new one's
    added (an update that moves none of its figures does nothing)."""

    def move(alias: str, sign: str) -> str:
        select = f"SELECT {_quality_delta(alias, sign, '0')} WHERE {alias}.{_QUALITY_COUNTED}"
        return _add(QUALITY_HOURS, _QUALITY_KEY, _QUALITY_SUMS, select) + ";"

    q = quoted(RECORD_QUALITY)
    moved = " OR ".join(f"old.{c} IS NOT new.{c}" for c in ("time_ns", "recorded_ns", "service", "n", "overall"))
    return [
        f"CREATE TRIGGER IF NOT EXISTS rollup_quality_ai AFTER INSERT ON {q} BEGIN {move('new', '')} END",
        f"CREATE TRIGGER IF NOT EXISTS rollup_quality_ad AFTER DELETE ON {q} BEGIN {move('old', '-')} END",
        f"CREATE TRIGGER IF NOT EXISTS rollup_quality_au AFTER UPDATE ON {q} WHEN {moved} "
        f"BEGIN {move('old', '-')} {move('new', '')} END",
    ]


_SCORE_READ: Final = (
    f"SELECT t.span_id, {_score_delta('t', '', '0')} FROM {SCORES} t WHERE t.value IS NOT NULL AND t.span_id IN "
)
# A record's own time too: its record_quality row keeps it exactly, where the rollup keeps only its hour.
_RECORD_READ: Final = (
    f"SELECT t.span_id, t.time_ns, {_record_delta('t', '', '0')} FROM {RAG_RECORDS} t WHERE t.span_id IN "
)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """SQLite: what some spans add to the rollups (each score's and record's key and sums, read through the SQL
    that defines them for the triggers and the backfill), read before and after a batch's upserts in its
    transaction; ``apply_difference`` adds the change. It diffs what the rows hold, so whatever the upserts' rules
    (a retry, a log record's score merged) the sums follow."""

    scores: dict[tuple[str, str], tuple[Any, ...]]
    """(span id, metric) -> the score's key in ``score_hours`` (slot 0), then its sums."""
    records: dict[str, tuple[Any, ...]]
    """span id -> the record's time, its key in ``record_hours`` (slot 0), then its sums."""

    @classmethod
    def read(cls, conn: AnyConnection, span_ids: Sequence[str]) -> Snapshot:
        scores: dict[tuple[str, str], tuple[Any, ...]] = {}
        records: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(span_ids), 500):  # well under SQLite's bound on parameters
            part = list(span_ids[start : start + 500])
            marks = f"({', '.join('?' for _ in part)})"
            for span_id, *contribution in conn.execute(_SCORE_READ + marks, part):
                scores[span_id, contribution[2]] = tuple(contribution)  # the key's third column: the metric
            for span_id, *rest in conn.execute(_RECORD_READ + marks, part):
                records[span_id] = tuple(rest)
        return cls(scores, records)


def _cells(before: dict[Any, tuple[Any, ...]], after: dict[Any, tuple[Any, ...]], changed: set[Any], key: int,
           skip: int = 0) -> dict[tuple[Any, ...], list[float]]:  # fmt: skip
    """Each rollup cell's change: the ``changed`` rows' contributions (after ``skip`` leading columns, their
    ``key`` columns, then their sums) taken away as they were and added as they are."""
    cells: dict[tuple[Any, ...], list[float]] = {}
    for sign, found in ((-1, before), (1, after)):
        for row in (found[k][skip:] for k in changed if k in found):
            cell = cells.setdefault(tuple(row[:key]), [0] * (len(row) - key))
            for i, value in enumerate(row[key:]):
                cell[i] += sign * value
    return cells


def _add_cells(
    conn: AnyConnection,
    table: str,
    key: tuple[str, ...],
    sums: tuple[str, ...],
    cells: dict[tuple[Any, ...], list[float]],
) -> None:
    """Add ``cells`` (key -> sums) to ``table``, in key order; nothing for a zero."""
    rows = [(*cell, *values) for cell, values in sorted(cells.items()) if any(values)]
    if rows:
        marks = ", ".join("?" for _ in (*key, *sums))
        conn.executemany(_add(table, key, sums, f"VALUES ({marks})"), rows)


def apply_difference(conn: AnyConnection, before: Snapshot, after: Snapshot) -> None:
    """Add to the rollups what changed from ``before`` to ``after`` (SQLite, in the writes' transaction)."""
    changed_scores = {
        k for k in before.scores.keys() | after.scores.keys() if before.scores.get(k) != after.scores.get(k)
    }
    changed_records = {
        k for k in before.records.keys() | after.records.keys() if before.records.get(k) != after.records.get(k)
    }
    score_cells = _cells(before.scores, after.scores, changed_scores, len(_SCORE_KEY))
    _add_cells(conn, SCORE_HOURS, _SCORE_KEY, _SCORE_SUMS, score_cells)
    record_cells = _cells(before.records, after.records, changed_records, len(_RECORD_KEY), skip=1)
    _add_cells(conn, RECORD_HOURS, _RECORD_KEY, _RECORD_SUMS, record_cells)
    spans = sorted({span_id for span_id, _ in changed_scores} | changed_records)
    scored = {span_id for span_id, _ in after.scores}
    gone = [span_id for span_id in spans if span_id not in scored]  # no score left: the row goes
    spans = [span_id for span_id in spans if span_id in scored]
    for which, ids in ((0, gone), (1, spans)):  # _quality_refresh's DELETE, then its INSERT
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            conn.execute(_quality_refresh(", ".join("?" for _ in part))[which], part)


# -- PostgreSQL: statement triggers ------------------------------------------------------------------------------

_PG_SLOT: Final = f"mod(pg_backend_pid(), {SLOTS})"
_CASES: Final[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]] = (
    ("INSERT", ("new_rows",), ()),
    ("DELETE", (), ("old_rows",)),
    ("UPDATE", ("new_rows",), ("old_rows",)),
)
"""Each event: its transition tables of rows added and of rows taken away."""


def _pg_sums(
    table: str, key: tuple[str, ...], sums: tuple[str, ...], delta: str, where: str, added: tuple[str, ...],
    removed: tuple[str, ...],
) -> str:  # fmt: skip
    """One upsert of a statement's net change of ``table``, aggregated by key, in key order."""
    parts = [f"SELECT {delta.format(alias='t', sign='')} FROM {t} t{where}" for t in added]
    parts += [f"SELECT {delta.format(alias='t', sign='-')} FROM {t} t{where}" for t in removed]
    keys = ", ".join(key)
    net = " OR ".join(f"SUM({c}) <> 0" for c in sums)
    select = (
        f"SELECT {keys}, {', '.join(f'SUM({c})' for c in sums)} FROM ({' UNION ALL '.join(parts)}) AS d "
        f"GROUP BY {keys} HAVING {net} ORDER BY {keys}"
    )
    return _add(table, key, sums, select)


def _pg_function(name: str, bodies: dict[str, list[str]]) -> str:
    branches = " ".join(
        f"{'IF' if i == 0 else 'ELSIF'} TG_OP = '{op}' THEN {' '.join(f'{sql};' for sql in sqls)}"
        for i, (op, sqls) in enumerate(bodies.items())
    )
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {branches} END IF; RETURN NULL; END $$"
    )


def _pg_hold_records(spans: str) -> list[str]:
    """Lock the ``record_quality`` rows of ``spans`` (made, empty, where missing) in span order, before they are
    recomputed. Two replicas writing one span's record and scores at once: each statement of a PL/pgSQL function
    reads a snapshot of its own, so the one that waited for the other's row recomputes it with what the other
    wrote, where without the wait it could miss it (a record's time read as NULL: measured)."""
    q = RECORD_QUALITY
    return [
        f"INSERT INTO {q} (span_id, n, overall, worst) SELECT DISTINCT span_id, 0, 0.0, 0.0 FROM ({spans}) AS s "
        f"ORDER BY span_id ON CONFLICT (span_id) DO NOTHING",
        f"PERFORM 1 FROM {q} WHERE span_id IN ({spans}) ORDER BY span_id FOR UPDATE",
    ]


def _pg_ddl() -> list[str]:
    score_delta = _score_delta("{alias}", "{sign}", _PG_SLOT)
    record_delta = _record_delta("{alias}", "{sign}", _PG_SLOT)
    scores: dict[str, list[str]] = {}
    records: dict[str, list[str]] = {}
    for op, added, removed in _CASES:
        spans = " UNION ".join(f"SELECT span_id FROM {t}" for t in (*added, *removed))
        scores[op] = [
            _pg_sums(SCORE_HOURS, _SCORE_KEY, _SCORE_SUMS, score_delta, " WHERE t.value IS NOT NULL", added, removed),
            *_pg_hold_records(spans),
            *_quality_refresh(spans),
        ]
        records[op] = [_pg_sums(RECORD_HOURS, _RECORD_KEY, _RECORD_SUMS, record_delta, "", added, removed)]
        if added:
            # The records' rows held too: a record and its scores written at once by two replicas, the later
            # one reads the other's (its time, or its scores) once it committed. Held, a row with no score yet
            # (n = 0) is the one just made here: it goes again.
            records[op] += [
                *_pg_hold_records(spans),
                f"UPDATE {RECORD_QUALITY} q SET recorded_ns = t.time_ns FROM {added[0]} t "
                "WHERE q.span_id = t.span_id AND q.recorded_ns IS DISTINCT FROM t.time_ns",
                f"DELETE FROM {RECORD_QUALITY} WHERE span_id IN ({spans}) AND n = 0",
            ]
        else:
            records[op].append(
                f"UPDATE {RECORD_QUALITY} q SET recorded_ns = NULL FROM {removed[0]} t WHERE q.span_id = t.span_id"
            )
    return [
        _pg_function("ragtrace_rollup_scores", scores),
        _pg_function("ragtrace_rollup_records", records),
        *_pg_triggers(SCORES, "ragtrace_rollup_scores", "scores"),
        *_pg_triggers(RAG_RECORDS, "ragtrace_rollup_records", "records"),
    ]


def _pg_quality_ddl() -> list[str]:
    delta = _quality_delta("{alias}", "{sign}", _PG_SLOT)
    where = f" WHERE t.{_QUALITY_COUNTED}"
    bodies = {
        op: [_pg_sums(QUALITY_HOURS, _QUALITY_KEY, _QUALITY_SUMS, delta, where, added, removed)]
        for op, added, removed in _CASES
    }
    return [
        _pg_function("ragtrace_rollup_quality", bodies),
        *_pg_triggers(RECORD_QUALITY, "ragtrace_rollup_quality", "quality"),
    ]


def _pg_triggers(table: str, function: str, short: str) -> list[str]:
    """A statement trigger of ``table`` for each event, with its transition tables, running ``function``."""
    statements = []
    for op, added, removed in _CASES:
        referencing = " ".join([f"NEW TABLE AS {t}" for t in added] + [f"OLD TABLE AS {t}" for t in removed])
        trigger = f"rollup_{short}_{op.lower()}"
        statements.append(f"DROP TRIGGER IF EXISTS {trigger} ON {quoted(table)}")
        statements.append(
            f"CREATE TRIGGER {trigger} AFTER {op} ON {quoted(table)} REFERENCING {referencing} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        )
    return statements


# -- installing and filling --------------------------------------------------------------------------------------


def install(conn: AnyConnection, dialect: Dialect) -> None:
    """Create the triggers that keep the rollups in step (the tables are ``schema.py``'s); idempotent."""
    for ddl in _sqlite_triggers() if dialect is SQLITE else _pg_ddl():
        conn.execute(ddl)


def install_quality_hours(conn: AnyConnection, dialect: Dialect) -> None:
    """Create the triggers that keep ``quality_hours`` in step with ``record_quality``; idempotent."""
    for ddl in _sqlite_quality_triggers() if dialect is SQLITE else _pg_quality_ddl():
        conn.execute(ddl)


def _fill(conn: AnyConnection, table: str, key: tuple[str, ...], sums: tuple[str, ...], rows: str) -> None:
    """Insert into ``table`` the ``rows`` (a subquery of each row's key and sums) added up by key."""
    keys = ", ".join(key)
    conn.execute(
        f"INSERT INTO {table} ({keys}, {', '.join(sums)}) SELECT {keys}, {', '.join(f'SUM({c})' for c in sums)} "
        f"FROM ({rows}) AS d GROUP BY {keys}"
    )


def backfill(conn: AnyConnection, dialect: Dialect) -> None:
    """Fill the rollups from the rows stored (a migration: the triggers count only what is written after them)."""
    slot = "0"
    conn.execute(f"DELETE FROM {SCORE_HOURS}")
    conn.execute(f"DELETE FROM {RECORD_HOURS}")
    conn.execute(f"DELETE FROM {RECORD_QUALITY}")
    scores = f"SELECT {_score_delta('t', '', slot)} FROM {SCORES} t WHERE t.value IS NOT NULL"
    _fill(conn, SCORE_HOURS, _SCORE_KEY, _SCORE_SUMS, scores)
    _fill(conn, RECORD_HOURS, _RECORD_KEY, _RECORD_SUMS, f"SELECT {_record_delta('t', '', slot)} FROM {RAG_RECORDS} t")
    conn.execute(_quality_refresh(f"SELECT span_id FROM {SCORES}")[1])


def backfill_quality_hours(conn: AnyConnection) -> None:
    """Fill ``quality_hours`` from the ``record_quality`` rows stored (after a migration or a copy: its triggers
    count only what changes after them)."""
    conn.execute(f"DELETE FROM {QUALITY_HOURS}")
    rows = f"SELECT {_quality_delta('t', '', '0')} FROM {RECORD_QUALITY} t WHERE t.{_QUALITY_COUNTED}"
    _fill(conn, QUALITY_HOURS, _QUALITY_KEY, _QUALITY_SUMS, rows)


def prune_empty(conn: AnyConnection) -> dict[str, int]:
    """Delete the hour rows retention emptied (their counts are back to 0); the rows deleted by table."""
    return {
        table: int(conn.execute(f"DELETE FROM {table} WHERE {count} = 0").rowcount)
        for table, count in ((SCORE_HOURS, "n"), (RECORD_HOURS, "records"), (QUALITY_HOURS, "n"))
    }


# -- reading -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Period:
    """A period, its bounds inclusive, in ns since the epoch (None: open), split into the whole hours inside it,
    which the rollups answer for, and the part-hours at its ends, which a reader reads from the rows."""

    since_ns: int | None = None
    until_ns: int | None = None

    @property
    def hours(self) -> tuple[int | None, int | None] | None:
        """The first and last whole hour inside the period (None: open; hour -1, the rows without a time, only
        counts in a period open at its start), or None when no whole hour fits."""
        first = None if self.since_ns is None else -(-self.since_ns // HOUR_NS)
        last = None if self.until_ns is None else (self.until_ns + 1) // HOUR_NS - 1
        if first is not None and last is not None and first > last:
            return None
        return first, last

    @property
    def edges(self) -> tuple[tuple[int | None, int | None], ...]:
        """The parts of the period outside ``hours``, as inclusive ``(since_ns, until_ns)`` bounds."""
        hours = self.hours
        if hours is None:
            return ((self.since_ns, self.until_ns),)
        first, last = hours
        out = []
        if first is not None and self.since_ns is not None and self.since_ns < first * HOUR_NS:
            out.append((self.since_ns, first * HOUR_NS - 1))
        if last is not None and self.until_ns is not None and self.until_ns >= (last + 1) * HOUR_NS:
            out.append(((last + 1) * HOUR_NS, self.until_ns))
        return tuple(out)


def _where(hours: tuple[int | None, int | None], service: str | None, column: str = "hour") -> tuple[str, list[Any]]:
    """A ``WHERE`` condition keeping ``column`` in ``[hours[0], hours[1]]`` (each None: open) and ``service``."""
    clauses: list[str] = ["1 = 1"]
    args: list[Any] = []
    for op, bound in ((">=", hours[0]), ("<=", hours[1])):
        if bound is not None:
            clauses.append(f"{column} {op} ?")
            args.append(bound)
    if service:
        clauses.append("service = ?")
        args.append(service)
    return " AND ".join(clauses), args


def _score_rows(found: Sequence[Sequence[Any]]) -> list[tuple[int, str, int, float]]:
    return [(int(hour), metric, int(n), float(total)) for hour, metric, n, total in found if n]


def _record_rows(found: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    # PostgreSQL's SUM of integers is numeric (Decimal in Python): the counts as int, the seconds as float.
    return [
        (int(row[0]), *(v or None for v in row[1:4]), *(int(v) for v in row[4:9]), float(row[9]), int(row[10]))
        for row in found
        if row[4]
    ]


_SCORE_GROUP: Final = "SELECT hour, metric, SUM(n), SUM(total) FROM {} GROUP BY hour, metric"
_RECORD_GROUP: Final = (
    f"SELECT hour, service, decision, judge, {', '.join(f'SUM({c})' for c in _RECORD_SUMS)} FROM {{}} "
    "GROUP BY hour, service, decision, judge"
)


def read_score_hours(conn: AnyConnection, period: Period, service: str | None) -> list[tuple[int, str, int, float]]:
    """``(hour, metric, n, total)`` of ``period``'s whole hours (of ``service``'s scores when given)."""
    if period.hours is None:
        return []
    where, args = _where(period.hours, service)
    return _score_rows(conn.execute(_SCORE_GROUP.format(f"{SCORE_HOURS} WHERE {where}"), args).fetchall())


def read_score_rows(conn: AnyConnection, where: str, args: Sequence[Any]) -> list[tuple[int, str, int, float]]:
    """``read_score_hours``' rows, added up from the ``scores`` rows (aliased ``t``) that `` WHERE 1 = 1{where}``
    keeps: what the part-hours at a period's ends hold."""
    rows = f"(SELECT {_score_delta('t', '', '0')} FROM {SCORES} t WHERE t.value IS NOT NULL{where}) AS d"
    return _score_rows(conn.execute(_SCORE_GROUP.format(rows), args).fetchall())


def read_record_hours(conn: AnyConnection, period: Period, service: str | None) -> list[tuple[Any, ...]]:
    """``(hour, service, decision, judge, records, costed, calls, prompt_tokens, completion_tokens, seconds,
    timed)`` of ``period``'s whole hours (of ``service``'s records when given); NULL keys as None."""
    if period.hours is None:
        return []
    where, args = _where(period.hours, service)
    return _record_rows(conn.execute(_RECORD_GROUP.format(f"{RECORD_HOURS} WHERE {where}"), args).fetchall())


def read_record_rows(conn: AnyConnection, alias: str, where: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
    """``read_record_hours``' rows, added up from the ``rag_records`` rows (aliased ``alias``) that ``where`` (a
    `` WHERE ...`` clause, or "") keeps: what the part-hours at a period's ends hold, or any other filter."""
    rows = f"(SELECT {_record_delta(alias, '', '0')} FROM {RAG_RECORDS} {alias}{where}) AS d"
    return _record_rows(conn.execute(_RECORD_GROUP.format(rows), args).fetchall())


@dataclass(frozen=True, slots=True)
class QualitySums:
    """What ``record_quality`` says of a period: its records taken at their scores' latest time (``n`` of them,
    ``total`` the sum of their overall scores, ``elsewhere`` those whose record is not in the period, or not
    stored), and ``scored``: the records of the period by their own time that have a score."""

    n: int
    total: float
    elsewhere: int
    scored: int


def _bounds(column: str, since: int | None, until: int | None, service: str | None) -> tuple[str, list[Any]]:
    """`` AND``-clauses keeping ``column`` in ``[since, until]`` (each None: open) and ``service``'s rows."""
    where, args = _where((since, until), service, column)
    return f" AND {where}", args


def read_quality(conn: AnyConnection, period: Period, service: str | None) -> QualitySums:
    """``QualitySums`` of ``period`` (``service``'s records when given), exact: its whole hours from
    ``quality_hours``, the rest from ``record_quality``'s rows, each read an index range of at most an hour.

    A record's two hours place it: by its scores' hour it is in the period or not; by its record's hour it is
    elsewhere or not, except in the hour that holds one of the period's bounds, where its rows are read."""
    since, until = period.since_ns, period.until_ns
    n, total, elsewhere, scored = 0, 0.0, 0, 0
    outside = ["recorded_ns IS NULL"]
    outside += [f"recorded_ns {op} ?" for op, bound in (("<", since), (">", until)) if bound is not None]
    outside_sql, outside_args = f"({' OR '.join(outside)})", [b for b in (since, until) if b is not None]
    hours = period.hours
    if hours is not None:
        first, last = hours
        where, args = _where(hours, service)
        straddling = []
        for recorded_hour, count, added in conn.execute(
            f"SELECT recorded_hour, SUM(n), SUM(total) FROM {QUALITY_HOURS} WHERE {where} GROUP BY recorded_hour",
            args,
        ).fetchall():
            n, total = n + int(count), total + float(added)
            start, end = recorded_hour * HOUR_NS, (recorded_hour + 1) * HOUR_NS - 1
            if recorded_hour < 0 or (since is not None and end < since) or (until is not None and start > until):
                elsewhere += int(count)
            elif since is not None and start < since:
                straddling.append((start, since - 1))  # the part of the hour before the period
            elif until is not None and end > until:
                straddling.append((until + 1, end))
        # The whole hours by the scores' time (the rows without one, hour -1, only in a period open at its start).
        in_hours: list[str] = []
        in_args: list[int] = []
        if first is not None:
            in_hours.append("time_ns >= ?")
            in_args.append(first * HOUR_NS)
        if last is not None:
            in_hours.append("time_ns <= ?" if first is not None else "(time_ns <= ? OR time_ns IS NULL)")
            in_args.append((last + 1) * HOUR_NS - 1)
        in_hours_sql = "".join(f" AND {c}" for c in in_hours)
        for low, high in straddling:
            b_where, b_args = _bounds("recorded_ns", low, high, service)
            (count,) = conn.execute(
                f"SELECT COUNT(*) FROM {RECORD_QUALITY} WHERE 1 = 1{b_where}{in_hours_sql}", [*b_args, *in_args]
            ).fetchone()
            elsewhere += int(count)
        r_where, r_args = _where((max(first or 0, 0), last), service, "recorded_hour")
        (count,) = conn.execute(f"SELECT SUM(n) FROM {QUALITY_HOURS} WHERE {r_where}", r_args).fetchone()
        scored += int(count or 0)
    for lo, hi in period.edges:
        e_where, e_args = _bounds("time_ns", lo, hi, service)
        count, added, away = conn.execute(
            f"SELECT COUNT(*), SUM(overall), SUM(CASE WHEN {outside_sql} THEN 1 ELSE 0 END) FROM {RECORD_QUALITY} "
            f"WHERE 1 = 1{e_where}",
            [*outside_args, *e_args],
        ).fetchone()
        n, total, elsewhere = n + int(count), total + float(added or 0.0), elsewhere + int(away or 0)
        e_where, e_args = _bounds("recorded_ns", lo, hi, service)
        (count,) = conn.execute(f"SELECT COUNT(*) FROM {RECORD_QUALITY} WHERE 1 = 1{e_where}", e_args).fetchone()
        scored += int(count)
    return QualitySums(n, total, elsewhere, scored)
