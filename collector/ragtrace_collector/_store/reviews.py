"""People's reviews of records: a person says a record's answer, or one of its claims, is right (grounded in its
chunks) or wrong, with a note; the review API writes them (``_http/_review_api.py``), the record page shows them,
they are exported as the JSONL ``ragtrace calibrate`` reads, and the judge's agreement with them is measured
(``_agreement.py``). The latest review of a (record, claim) replaces the one before: a person correcting
themselves leaves one verdict.

The review queue lists the records most worth a look: scored and not yet reviewed, their faithfulness nearest the
judge's cut (the judge was least sure), or their record in an alert's spike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ragtrace_collector._store.dialect import AnyConnection, dialect_of
from ragtrace_collector._store.schema import RAG_RECORDS, REVIEW_COLUMNS, REVIEWS, SCORES

__all__ = [
    "ANSWER",
    "QUEUE_DAYS",
    "Agreeing",
    "agreement_rows",
    "groups_with_reviews",
    "labelled_records",
    "review_queue",
    "reviews_of",
    "save_review",
    "window_rows",
]

ANSWER: Final = -1
"""The ``claim`` of a review of the whole answer."""

_CUT: Final = 0.5
"""The judge's cut on faithfulness (the metrics' labels and the alert levels sit at it)."""
QUEUE_DAYS: Final = 7
"""How far back the review queue looks, from the newest record."""
QUEUE_WINDOW: Final = 10_000
"""The review queue ranks the newest this many scored records of its period: ranking a whole week sorted every
score of it (1.7 s at 1,000,000 records on PostgreSQL, 3.7 s on SQLite, where faithfulness takes few values and
ties are broken by time); a person reviews the recent ones first anyway."""
_DAY_NS: Final = 86_400 * 1_000_000_000


def save_review(
    conn: AnyConnection,
    span_id: str,
    *,
    claim: int,
    grounded: bool,
    note: str | None,
    author: str | None,
    now_ns: int,
) -> bool:
    """Store a person's review of the record ``span_id`` (its answer: ``claim`` = ``ANSWER``; else the claim at
    that index), replacing their earlier one of the same; False when the store has no such record."""
    found = conn.execute(f"SELECT service FROM {RAG_RECORDS} WHERE span_id = ?", (span_id,)).fetchone()
    if found is None:
        return False
    values = {
        "span_id": span_id,
        "claim": claim,
        "grounded": 1 if grounded else 0,
        "note": note,
        "author": author,
        "time_ns": now_ns,
        "service": found[0],
    }
    columns = list(REVIEW_COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in ("span_id", "claim"))
    conn.execute(
        f"INSERT INTO {REVIEWS} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)}) "
        f"ON CONFLICT (span_id, claim) DO UPDATE SET {updates}",
        [values[c] for c in columns],
    )
    return True


def reviews_of(conn: AnyConnection, span_id: str) -> list[dict[str, Any]]:
    """The reviews of one record: the answer's first, then each claim's by index."""
    columns = list(REVIEW_COLUMNS)
    rows = conn.execute(
        f"SELECT {', '.join(columns)} FROM {REVIEWS} WHERE span_id = ? ORDER BY claim", (span_id,)
    ).fetchall()
    return [dict(zip(columns, row, strict=True)) for row in rows]


def labelled_records(conn: AnyConnection, since_ns: int | None = None, limit: int = 100_000) -> list[dict[str, Any]]:
    """The records a person reviewed as a whole, as ``ragtrace calibrate`` reads them: ``query``, ``chunks``,
    ``answer``, ``grounded`` (the person's verdict) and ``metadata`` (span id, service, author, note, when);
    oldest review first, at most ``limit``."""
    rows = conn.execute(
        f"SELECT r.span_id, r.service, r.query, r.answer, r.chunks, v.grounded, v.author, v.note, v.time_ns "
        f"FROM {REVIEWS} v JOIN {RAG_RECORDS} r ON r.span_id = v.span_id "
        f"WHERE v.claim = ? AND v.time_ns >= ? ORDER BY v.time_ns, v.span_id LIMIT ?",
        (ANSWER, since_ns or 0, limit),
    ).fetchall()
    labelled = []
    for span_id, service, query, answer, chunks, grounded, author, note, time_ns in rows:
        try:
            parsed = json.loads(chunks) if chunks else []
        except ValueError:
            parsed = []
        labelled.append({
            "query": query or "",
            "chunks": [c for c in parsed if isinstance(c, dict | str)] if isinstance(parsed, list) else [],
            "answer": answer or "",
            "grounded": bool(grounded),
            "metadata": {"span_id": span_id, "service": service, "author": author, "note": note,
                         "reviewed_ns": time_ns},
        })  # fmt: skip
    return labelled


@dataclass(frozen=True, slots=True)
class Agreeing:
    """One reviewed record beside what the judge said of it: its ``score`` (faithfulness, else 1 - hallucination;
    higher is more grounded), the person's ``grounded``, and which judge, service and day."""

    span_id: str
    judge: str
    service: str
    time_ns: int
    score: float
    grounded: bool


def agreement_rows(
    conn: AnyConnection,
    since_ns: int | None = None,
    *,
    records_since_ns: int | None = None,
    records_until_ns: int | None = None,
    service: str | None = None,
) -> list[Agreeing]:
    """Every record reviewed as a whole that the judge scored, reviewed since ``since_ns``; of records from
    ``records_since_ns`` to ``records_until_ns`` (the record's own time, as every page's time range) and of
    ``service``, when given."""
    scope = ""
    args: list[Any] = [ANSWER, since_ns or 0]
    for clause, value in (
        (" AND r.time_ns >= ?", records_since_ns),
        (" AND r.time_ns <= ?", records_until_ns),
        (" AND r.service = ?", service or None),
    ):
        if value is not None:
            scope += clause
            args.append(value)
    rows = conn.execute(
        f"SELECT v.span_id, r.judge, r.service, v.time_ns, f.value, h.value, v.grounded "
        f"FROM {REVIEWS} v JOIN {RAG_RECORDS} r ON r.span_id = v.span_id "
        f"LEFT JOIN {SCORES} f ON f.span_id = v.span_id AND f.metric = 'faithfulness' "
        f"LEFT JOIN {SCORES} h ON h.span_id = v.span_id AND h.metric = 'hallucination' "
        f"WHERE v.claim = ? AND v.time_ns >= ?{scope} ORDER BY v.time_ns",
        args,
    ).fetchall()
    return _agreeing(rows)


def _agreeing(rows: Sequence[Sequence[Any]]) -> list[Agreeing]:
    """``Agreeing`` of each row (span id, judge, service, time, faithfulness, hallucination, grounded) the judge
    scored (faithfulness, else one minus hallucination)."""
    found = []
    for span_id, judge, service, time_ns, faithfulness, hallucination, grounded in rows:
        score = faithfulness if faithfulness is not None else (1 - hallucination if hallucination is not None else None)
        if score is None:
            continue
        found.append(Agreeing(span_id, judge or "-", service or "-", int(time_ns), float(score), bool(grounded)))
    return found


def review_queue(
    conn: AnyConnection,
    *,
    days: int = QUEUE_DAYS,
    limit: int = 50,
    since_ns: int | None = None,
    until_ns: int | None = None,
    service: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Up to ``limit`` records scored nobody reviewed, the judge's least sure first (faithfulness nearest its cut),
    newest first among equals; each with its span id, time, service, query, faithfulness and label. They are among
    the newest ``QUEUE_WINDOW`` scored in the ``days`` before the newest record (or before ``until_ns``), from
    ``since_ns`` when that is later, of ``service`` when given. Returns them and the time they start from (ns)."""
    newest = until_ns
    if newest is None:
        newest = conn.execute(f"SELECT MAX(time_ns) FROM {RAG_RECORDS}").fetchone()[0]
    start = max(int(newest or 0) - days * _DAY_NS, since_ns or 0)
    scope = ""
    args: list[Any] = [start]
    if until_ns is not None:
        scope += " AND f.time_ns <= ?"
        args.append(until_ns)
    if service:
        scope += " AND f.service = ?"
        args.append(service)
    columns: Sequence[str] = ("span_id", "time_ns", "service", "query", "faithfulness", "label")
    # The newest of the period first (a walk back along scores(metric, time_ns) or (service, metric, time_ns)),
    # then ranked: a bounded read whatever the store's size.
    rows = conn.execute(
        f"SELECT r.span_id, r.time_ns, r.service, r.query, f.value, f.label FROM "
        f"(SELECT span_id, value, label FROM {SCORES} f WHERE f.metric = 'faithfulness' AND f.time_ns >= ?{scope} "
        f"AND f.value IS NOT NULL ORDER BY f.time_ns DESC LIMIT ?) AS f "
        f"JOIN {RAG_RECORDS} r ON r.span_id = f.span_id "
        f"WHERE NOT EXISTS (SELECT 1 FROM {REVIEWS} v WHERE v.span_id = f.span_id) "
        f"ORDER BY abs(f.value - ?), r.time_ns DESC LIMIT ?",
        [*args, QUEUE_WINDOW, _CUT, limit],
    ).fetchall()
    return [dict(zip(columns, row, strict=True)) for row in rows], start


def _group(
    conn: AnyConnection, key: tuple[str | None, str | None], grouped: tuple[bool, bool]
) -> tuple[str, list[Any]]:
    """The clause keeping one alert group's records (as the alert rules group scores: a grouped column's None is
    the records without one; an ungrouped column filters only when the rule restricts it)."""
    same = dialect_of(conn).same
    clause, args = "", []
    for column, value, by in zip(("service", "route"), key, grouped, strict=True):
        if by:
            clause += f" AND r.{column} {same} ?"
            args.append(value)
        elif value is not None:
            clause += f" AND r.{column} = ?"
            args.append(value)
    return clause, args


def window_rows(
    conn: AnyConnection, key: tuple[str | None, str | None], grouped: tuple[bool, bool], start: int, end: int
) -> list[Agreeing]:
    """An alert group's records reviewed as a whole in ``(start, end]`` (the review's time) that the judge scored,
    as ``agreement_rows`` gives them: what an ``agreement`` rule evaluates. Read through ``reviews(time_ns)``."""
    clause, args = _group(conn, key, grouped)
    rows = conn.execute(
        f"SELECT v.span_id, r.judge, r.service, v.time_ns, f.value, h.value, v.grounded "
        f"FROM {REVIEWS} v JOIN {RAG_RECORDS} r ON r.span_id = v.span_id "
        f"LEFT JOIN {SCORES} f ON f.span_id = v.span_id AND f.metric = 'faithfulness' "
        f"LEFT JOIN {SCORES} h ON h.span_id = v.span_id AND h.metric = 'hallucination' "
        f"WHERE v.claim = ? AND v.time_ns > ? AND v.time_ns <= ?{clause} ORDER BY v.time_ns",
        [ANSWER, start, end, *args],
    ).fetchall()
    return _agreeing(rows)


def groups_with_reviews(
    conn: AnyConnection, restrict: tuple[str | None, str | None], start: int, end: int
) -> set[tuple[str | None, str | None]]:
    """The (service, route) pairs of records reviewed as a whole in ``(start, end]``, within the rule's own
    restriction ``restrict`` (None: any)."""
    clause, args = _group(conn, restrict, (False, False))
    rows = conn.execute(
        f"SELECT DISTINCT r.service, r.route FROM {REVIEWS} v JOIN {RAG_RECORDS} r ON r.span_id = v.span_id "
        f"WHERE v.claim = ? AND v.time_ns > ? AND v.time_ns <= ?{clause}",
        [ANSWER, start, end, *args],
    ).fetchall()
    return {(service, route) for service, route in rows}
