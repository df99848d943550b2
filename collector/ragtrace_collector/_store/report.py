"""The report's reads: the summary, the problem records, score series and alert marks.

A store whose tables do not exist yet (a file an earlier collector wrote, read without migrating) reads as
empty. A *source* is a path to the SQLite file, a ``sqlite_utils.Database``, or an object with ``path`` (the
collector's ``Store``); ``open_source`` opens it read-only.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragtrace import ConfigurationError
from ragtrace.metrics import LOWER_IS_BETTER
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._store.connection import is_postgres, reading
from ragtrace_collector._store.dialect import AnyConnection, table_names
from ragtrace_collector._store.schema import ALERTS, SCORES
from ragtrace_collector._store.schema import RAG_RECORDS as RAG
from ragtrace_collector._store.summaries import NO_DECISION, Issue, MetricSummary, Problem, Summary

__all__ = ["alert_marks", "open_source", "problems", "recent_alerts", "series", "summary"]


@contextlib.contextmanager
def open_source(source: object) -> Iterator[AnyConnection]:
    """A read-only connection for ``source``; one opened here is closed on exit, a given one is left open.
    ``ConfigurationError`` when a path names no file (the report never creates one)."""
    path = getattr(source, "target", source)  # a Store or PostgresStore: what opens it again
    if isinstance(path, str | os.PathLike) and not is_postgres(path) and not Path(path).exists():
        raise ConfigurationError(f"store {path} does not exist; pass the --db file the collector writes")
    with reading(source) as conn:
        yield conn


def _time_clause(
    column: str, since_ns: int | None, until_ns: int | None, service: str | None = None, *, table: str = ""
) -> tuple[str, list[Any]]:
    """`` AND``-clauses keeping rows of ``column`` (their time) in ``[since_ns, until_ns]`` and of ``service``;
    ``table``: the alias the columns are named by (``r.``), where a subquery has columns of the same names."""
    column = table + column
    clauses: list[str] = []
    args: list[Any] = []
    if service:
        clauses.append(f"{table}service = ?")
        args.append(service)
    if since_ns is not None:
        clauses.append(f"{column} >= ?")
        args.append(since_ns)
    if until_ns is not None:
        clauses.append(f"{column} <= ?")
        args.append(until_ns)
    return "".join(f" AND {c}" for c in clauses), args


_MAX_NAMED_METRICS = 200
"""Past this many metric names (senders name metrics), a time-bounded read does without ``metric IN``: the list
would cost more than it saves, and could pass the engine's bound on parameters."""
_METRICS_SQL = (
    f"WITH RECURSIVE m(metric) AS (SELECT MIN(metric) FROM {SCORES} UNION ALL "
    f"SELECT (SELECT MIN(metric) FROM {SCORES} WHERE metric > m.metric) FROM m WHERE m.metric IS NOT NULL) "
    f"SELECT metric FROM m WHERE metric IS NOT NULL LIMIT {_MAX_NAMED_METRICS + 1}"
)
"""The metrics ``scores`` holds, one index seek each (a walk of ``(metric, ...)`` from name to next name)."""


def _scores_clause(
    conn: AnyConnection, since_ns: int | None, until_ns: int | None, service: str | None = None, *, table: str = ""
) -> tuple[str, list[Any]]:
    """``_time_clause`` for ``scores``: with a time bound, also ``metric IN`` the store's metrics. That condition
    keeps every row, and it lets the time bound range over the ``(metric, time_ns)`` and ``(service, metric,
    time_ns)`` indexes, one range per metric: without it a time bound on ``scores`` reads the whole table (neither
    engine skips an index's first column here; SQLite would with statistics, which the store does not gather)."""
    where, args = _time_clause("time_ns", since_ns, until_ns, service, table=table)
    if since_ns is None and until_ns is None:
        return where, args
    metrics = [row[0] for row in conn.execute(_METRICS_SQL)]
    if not metrics or len(metrics) > _MAX_NAMED_METRICS:
        return where, args
    return f"{where} AND {table}metric IN ({', '.join('?' for _ in metrics)})", [*args, *metrics]


def _overall(scores: dict[str, float]) -> float:
    values = [1.0 - v if metric_direction(m) == "lower" else v for m, v in scores.items()]
    return math.fsum(values) / len(values)


def summary(
    source: object, *, since_ns: int | None = None, until_ns: int | None = None, service: str | None = None
) -> Summary:
    """Count, mean of each metric, min/mean/max of the overall score, first and last time, decision
    coverage (of ``service``'s records when given) and the rule groups currently in ALERT.

    ``records`` are the RAG records of the period (by the record's time) and ``scored`` those of them with a score,
    so ``scored <= records`` always; ``scored_elsewhere`` counts the spans scored in the period (by the score's
    time) whose record is not in it: stored outside the period (a late score) or never (a score-only export). The
    metrics and the overall score are over the period's scores, theirs included. (The card once said "scored 152"
    beside "records 140": it counted the scores' spans by the scores' time.)"""
    with open_source(source) as conn:
        tables = table_names(conn)
        records, first, last, decisions = 0, None, None, []
        scored_records, elsewhere = 0, 0
        if RAG in tables:
            where, args = _time_clause("time_ns", since_ns, until_ns, service)
            records, first, last = conn.execute(
                f"SELECT COUNT(*), MIN(time_ns), MAX(time_ns) FROM {RAG} WHERE 1 = 1{where}", args
            ).fetchone()
            decisions = [
                (decision or NO_DECISION, count)
                for decision, count in conn.execute(
                    f"SELECT decision, COUNT(*) FROM {RAG} WHERE 1 = 1{where} GROUP BY decision ORDER BY 2 DESC", args
                )
            ]
        metrics: list[MetricSummary] = []
        o_mean, o_min, o_max = None, None, None
        if SCORES in tables:
            where, args = _scores_clause(conn, since_ns, until_ns, service)
            for metric, count, mean in conn.execute(
                f"SELECT metric, COUNT(value), AVG(value) FROM {SCORES} WHERE value IS NOT NULL{where} "
                "GROUP BY metric ORDER BY metric",
                args,
            ):
                metrics.append(MetricSummary(metric, metric_direction(metric), int(count), float(mean)))
            # The overall score per record, aggregated in SQL so a large store is not read into Python.
            lower = sorted(LOWER_IS_BETTER)
            marks = ", ".join("?" for _ in lower)
            _, o_mean, o_min, o_max = conn.execute(
                f"SELECT COUNT(*), AVG(o), MIN(o), MAX(o) FROM (SELECT AVG(CASE WHEN metric IN ({marks}) "
                f"THEN 1.0 - value ELSE value END) AS o FROM {SCORES} WHERE value IS NOT NULL{where} "
                "GROUP BY span_id) AS per_record",
                [*lower, *args],
            ).fetchone()
            # Scores can arrive without their records (late carrier scores, score-only exports).
            s_first, s_last = conn.execute(
                f"SELECT MIN(time_ns), MAX(time_ns) FROM {SCORES} WHERE 1 = 1{where}", args
            ).fetchone()
            first = min((t for t in (first, s_first) if t is not None), default=None)
            last = max((t for t in (last, s_last) if t is not None), default=None)
            scored_records, elsewhere = _scored_counts(conn, tables, since_ns, until_ns, service)
        firing = tuple(a for a in _latest_alerts(conn, tables) if a["state"] == "ALERT")
    return Summary(
        records=int(records or 0),
        scored=int(scored_records or 0),
        scored_elsewhere=int(elsewhere or 0),
        metrics=tuple(metrics),
        overall_mean=o_mean,
        overall_min=o_min,
        overall_max=o_max,
        first_ns=first,
        last_ns=last,
        decisions=tuple(decisions),
        firing=firing,
    )


def _scored_counts(
    conn: AnyConnection, tables: set[str], since_ns: int | None, until_ns: int | None, service: str | None
) -> tuple[int, int]:
    """(the period's records with a score, the spans scored in the period whose record is not in it)."""
    s_where, s_args = _scores_clause(conn, since_ns, until_ns, service, table="s.")
    if RAG not in tables:
        count = conn.execute(
            f"SELECT COUNT(DISTINCT s.span_id) FROM {SCORES} s WHERE s.value IS NOT NULL{s_where}", s_args
        ).fetchone()[0]
        return 0, int(count or 0)
    r_where, r_args = _time_clause("time_ns", since_ns, until_ns, service, table="r.")
    (scored,) = conn.execute(
        f"SELECT COUNT(*) FROM {RAG} r WHERE 1 = 1{r_where} AND EXISTS "
        f"(SELECT 1 FROM {SCORES} s WHERE s.span_id = r.span_id AND s.value IS NOT NULL)",
        r_args,
    ).fetchone()
    (elsewhere,) = conn.execute(
        f"SELECT COUNT(DISTINCT s.span_id) FROM {SCORES} s WHERE s.value IS NOT NULL{s_where} AND NOT EXISTS "
        f"(SELECT 1 FROM {RAG} r WHERE r.span_id = s.span_id{r_where})",
        [*s_args, *r_args],
    ).fetchone()
    return int(scored or 0), int(elsewhere or 0)


def _alert_rows(conn: AnyConnection, tables: set[str], sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The rows of a query over ``alerts`` as dicts; none while the watcher has not created the table."""
    if ALERTS not in tables:
        return []
    cursor = conn.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


# The three reads of ``alerts``: each group's latest row, the marks on the charts, the recent transitions.
_LATEST_ALERTS_SQL = (
    f"SELECT * FROM {ALERTS} WHERE id IN (SELECT MAX(id) FROM {ALERTS} GROUP BY rule, service, route) "
    "ORDER BY rule, service, route"
)
_ALERT_MARKS_SQL = (
    f"SELECT time_ns, rule, metric, service, route, state, previous_state, value, message FROM {ALERTS} "
    "WHERE state = 'ALERT' OR (state = 'OK' AND previous_state = 'ALERT') ORDER BY time_ns"
)
_RECENT_ALERTS_SQL = (
    f"SELECT time_ns, rule, metric, service, route, previous_state, state, message FROM {ALERTS} "
    "WHERE previous_state IS NOT NULL OR state IN ('ALERT', 'WARNING') ORDER BY id DESC LIMIT ?"
)


def _latest_alerts(conn: AnyConnection, tables: set[str]) -> list[dict[str, Any]]:
    return _alert_rows(conn, tables, _LATEST_ALERTS_SQL)


def problems(
    source: object,
    threshold: float = 0.6,
    *,
    limit: int | None = 50,
    since_ns: int | None = None,
    until_ns: int | None = None,
    service: str | None = None,
) -> list[Problem]:
    """Records with any metric on the wrong side of ``threshold`` (direction-aware), worst overall first
    (ties: newest first), at most ``limit`` (of ``service`` when given), each with its issues and its query, answer
    and chunks."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    lower = sorted(LOWER_IS_BETTER)
    with open_source(source) as conn:
        tables = table_names(conn)
        if SCORES not in tables:
            return []
        where, args = _scores_clause(conn, since_ns, until_ns, service)
        marks = ", ".join("?" for _ in lower)
        goodness_sql = f"CASE WHEN metric IN ({marks}) THEN 1.0 - value ELSE value END"
        bad_sql = f"(metric IN ({marks}) AND value > ?) OR (metric NOT IN ({marks}) AND value < ?)"
        # Rank in SQL (one pass over the range, top `limit` only), then read the chosen records' scores.
        ranked_ids = [
            row[0]
            for row in conn.execute(
                f"SELECT span_id FROM {SCORES} WHERE value IS NOT NULL{where} GROUP BY span_id "
                f"HAVING SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END) > 0 "
                f"ORDER BY AVG({goodness_sql}) ASC, MAX(time_ns) DESC, span_id"
                + ("" if limit is None else " LIMIT ?"),  # no limit: PostgreSQL refuses SQLite's LIMIT -1
                [*args, *lower, 1.0 - threshold, *lower, threshold, *lower, *([] if limit is None else [limit])],
            )
        ]
        found: dict[str, dict[str, Any]] = {
            span_id: {"scores": {}, "trace_id": None, "service": None, "route": None, "time_ns": None}
            for span_id in ranked_ids
        }
        for start in range(0, len(ranked_ids), 500):
            part = ranked_ids[start : start + 500]
            for span_id, metric, value, trace_id, service, route, time_ns in conn.execute(
                f"SELECT span_id, metric, value, trace_id, service, route, time_ns FROM {SCORES} "
                f"WHERE value IS NOT NULL AND span_id IN ({', '.join('?' for _ in part)})",
                part,
            ):
                entry = found[span_id]
                entry["scores"][metric] = float(value)
                for key, val in (("trace_id", trace_id), ("service", service), ("route", route), ("time_ns", time_ns)):
                    entry[key] = entry[key] if entry[key] is not None else val
        ranked = list(found.items())
        content = _records(conn, tables, [span_id for span_id, _ in ranked])
    out = []
    for span_id, entry in ranked:
        scores: dict[str, float] = entry["scores"]
        record = content.get(span_id, {})
        out.append(
            Problem(
                span_id=span_id,
                trace_id=record.get("trace_id") or entry["trace_id"],
                service=record.get("service") or entry["service"],
                route=record.get("route") or entry["route"],
                time_ns=record.get("time_ns") or entry["time_ns"],
                overall=_overall(scores),
                issues=_issues(scores, threshold),
                scores=dict(sorted(scores.items())),
                query=record.get("query"),
                answer=record.get("answer"),
                chunks=_chunks(record.get("chunks")),
            )
        )
    return out


def _issues(scores: dict[str, float], threshold: float) -> tuple[Issue, ...]:
    issues = []
    for metric, value in sorted(scores.items()):
        direction = metric_direction(metric)
        if direction == "higher" and value < threshold:
            issues.append(Issue(metric, value, direction, threshold))
        elif direction == "lower" and value > 1.0 - threshold:
            issues.append(Issue(metric, value, direction, 1.0 - threshold))
    # Worst first: the furthest past its limit.
    return tuple(sorted(issues, key=lambda i: -abs(i.value - i.limit)))


def _records(conn: AnyConnection, tables: set[str], span_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    if RAG not in tables or not span_ids:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(span_ids), 500):
        part = list(span_ids[start : start + 500])
        cursor = conn.execute(
            f"SELECT span_id, trace_id, service, route, time_ns, query, answer, chunks FROM {RAG} "
            f"WHERE span_id IN ({', '.join('?' for _ in part)})",
            part,
        )
        names = [d[0] for d in cursor.description]
        for row in cursor:
            record = dict(zip(names, row, strict=True))
            out[record["span_id"]] = record
    return out


def _chunks(raw: object) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, str) or not raw:
        return ()
    try:
        data = json.loads(raw)
    except ValueError:
        return ({"content": raw},)  # keep what was stored rather than hide it
    if not isinstance(data, list):
        return ()
    return tuple(c if isinstance(c, dict) else {"content": str(c)} for c in data)


def series(
    conn: AnyConnection,
    tables: set[str],
    since_ns: int | None,
    until_ns: int | None,
    buckets: int = 120,
    service: str | None = None,
) -> dict[str, list[tuple[int, float, int]]]:
    """Per metric: (bucket start ns, mean, count) over at most ``buckets`` equal time buckets (``service``'s
    scores when given)."""
    if SCORES not in tables:
        return {}
    where, args = _scores_clause(conn, since_ns, until_ns, service)
    lo, hi = conn.execute(
        f"SELECT MIN(time_ns), MAX(time_ns) FROM {SCORES} WHERE value IS NOT NULL{where}", args
    ).fetchone()
    if lo is None:
        return {}
    width = max((hi - lo) // buckets + 1, 1)
    series: dict[str, list[tuple[int, float, int]]] = {}
    for metric, bucket, mean, count in conn.execute(
        f"SELECT metric, (time_ns - ?) / ?, AVG(value), COUNT(*) FROM {SCORES} WHERE value IS NOT NULL{where} "
        "GROUP BY metric, 2 ORDER BY metric, 2",
        [lo, width, *args],
    ):
        series.setdefault(metric, []).append((lo + int(bucket) * width + width // 2, float(mean), int(count)))
    return series


def alert_marks(conn: AnyConnection, tables: set[str]) -> list[dict[str, Any]]:
    """Where alerts fired and resolved, for the charts."""
    return _alert_rows(conn, tables, _ALERT_MARKS_SQL)


def recent_alerts(conn: AnyConnection, tables: set[str], limit: int = 20) -> list[dict[str, Any]]:
    """The latest notified transitions (the first quiet OK/NO_DATA sighting of a group is left out)."""
    return _alert_rows(conn, tables, _RECENT_ALERTS_SQL, (limit,))
