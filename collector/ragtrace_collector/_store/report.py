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
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragtrace import ConfigurationError
from ragtrace.metrics import LOWER_IS_BETTER
from ragtrace_collector._drift import metric_direction
from ragtrace_collector._store.connection import is_postgres, reading
from ragtrace_collector._store.dialect import AnyConnection, table_names
from ragtrace_collector._store.rollups import (
    HOUR_NS,
    Period,
    read_quality,
    read_record_hours,
    read_record_rows,
    read_score_hours,
    read_score_rows,
)
from ragtrace_collector._store.schema import ALERTS, RECORD_QUALITY, ROLLUPS, SCORES
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
    beside "records 140": it counted the scores' spans by the scores' time.)

    A migrated store answers from its rollups (``rollups.py``): the counts and means exactly, the per-record
    figures (the overall score, ``scored``, ``scored_elsewhere``) taking a record at its scores' latest time and
    service. A store read without migrating (a file an earlier collector wrote) is read row by row."""
    with open_source(source) as conn:
        tables = table_names(conn)
        if set(ROLLUPS) <= tables:
            return _summary(conn, tables, Period(since_ns, until_ns), service)
        return _raw_summary(conn, tables, since_ns, until_ns, service)


def _firing(conn: AnyConnection, tables: set[str]) -> tuple[dict[str, Any], ...]:
    return tuple(a for a in _latest_alerts(conn, tables) if a["state"] == "ALERT")


def _hourly_scores(
    conn: AnyConnection, period: Period, service: str | None
) -> dict[tuple[int, str], tuple[int, float]]:
    """``(hour, metric) -> (count, sum)`` of ``period``'s scores with a value: its whole hours from the rollup,
    its part-hours from the rows."""
    out: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for hour, metric, n, total in read_score_hours(conn, period, service):
        out[hour, metric][0] += n
        out[hour, metric][1] += total
    for since, until in period.edges:
        where, args = _scores_clause(conn, since, until, service, table="t.")
        for hour, metric, n, total in read_score_rows(conn, where, args):
            out[hour, metric][0] += n
            out[hour, metric][1] += total
    return {key: (int(n), float(total)) for key, (n, total) in out.items() if n}


def _overall_range(conn: AnyConnection, period: Period, service: str | None) -> tuple[float | None, float | None]:
    """The lowest and highest overall score of ``period``'s records (by their scores' time).

    Over all time each is the first row of an ordered read of ``record_quality(overall, ...)``: a seek (with a
    service, a walk to its first row). A period's are read from its rows by the time index: an ordered walk there
    could pass every record outside the period first, when the scores of the period are not the store's extremes
    (measured: the highest overall score of the last day of a 1,000,000-record store walked 800,000 older ones)."""
    where, args = _time_clause("time_ns", period.since_ns, period.until_ns, service)
    if period.since_ns is None and period.until_ns is None:
        lowest, highest = (
            f"(SELECT overall FROM {RECORD_QUALITY} WHERE 1 = 1{where} ORDER BY overall{order} LIMIT 1)"
            for order in ("", " DESC")
        )
        found = conn.execute(f"SELECT {lowest}, {highest}", [*args, *args]).fetchone()
    else:
        found = conn.execute(
            f"SELECT MIN(overall), MAX(overall) FROM {RECORD_QUALITY} WHERE 1 = 1{where}", args
        ).fetchone()
    return found[0], found[1]


def _summary(conn: AnyConnection, tables: set[str], period: Period, service: str | None) -> Summary:
    since_ns, until_ns = period.since_ns, period.until_ns
    where, args = _time_clause("time_ns", since_ns, until_ns, service)
    # Two subqueries, not MIN and MAX in one: each is then one seek of the time index.
    first, last = conn.execute(
        f"SELECT (SELECT MIN(time_ns) FROM {RAG} WHERE 1 = 1{where}), "
        f"(SELECT MAX(time_ns) FROM {RAG} WHERE 1 = 1{where})",
        [*args, *args],
    ).fetchone()
    rows = read_record_hours(conn, period, service)
    for since, until in period.edges:
        e_where, e_args = _time_clause("time_ns", since, until, service, table="r.")
        rows += read_record_rows(conn, "r", f" WHERE 1 = 1{e_where}", e_args)
    decided: dict[str | None, int] = defaultdict(int)
    for _hour, _service, decision, _judge, records, *_ in rows:
        decided[decision] += records
    decisions = sorted(((d or NO_DECISION, n) for d, n in decided.items() if n), key=lambda item: -item[1])
    hourly = _hourly_scores(conn, period, service)
    by_metric: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for (_hour, metric), (n, total) in hourly.items():
        by_metric[metric][0] += n
        by_metric[metric][1] += total
    metrics = tuple(
        MetricSummary(metric, metric_direction(metric), int(n), total / n)
        for metric, (n, total) in sorted(by_metric.items())
    )
    quality = read_quality(conn, period, service)
    o_min, o_max = _overall_range(conn, period, service) if quality.n else (None, None)
    s_first, s_last = _score_bounds(conn, period, service, hourly)
    first = min((t for t in (first, s_first) if t is not None), default=None)
    last = max((t for t in (last, s_last) if t is not None), default=None)
    return Summary(
        records=sum(n for _, n in decisions),
        scored=quality.scored,
        scored_elsewhere=quality.elsewhere,
        metrics=metrics,
        overall_mean=quality.total / quality.n if quality.n else None,
        overall_min=o_min,
        overall_max=o_max,
        first_ns=first,
        last_ns=last,
        decisions=tuple(decisions),
        firing=_firing(conn, tables),
    )


def _score_bounds(
    conn: AnyConnection, period: Period, service: str | None, hourly: dict[tuple[int, str], tuple[int, float]]
) -> tuple[int | None, int | None]:
    """The first and last time of ``period``'s scores with a value: read in their first and last hour only."""
    hours = sorted({hour for hour, _ in hourly if hour >= 0})
    if not hours:
        return None, None
    found = []
    for hour, aggregate in ((hours[0], "MIN"), (hours[-1], "MAX")):
        since = max(hour * HOUR_NS, period.since_ns if period.since_ns is not None else 0)
        until = (hour + 1) * HOUR_NS - 1 if period.until_ns is None else min((hour + 1) * HOUR_NS - 1, period.until_ns)
        where, args = _scores_clause(conn, since, until, service)
        found.append(
            conn.execute(f"SELECT {aggregate}(time_ns) FROM {SCORES} WHERE value IS NOT NULL{where}", args).fetchone()[
                0
            ]
        )
    return found[0], found[1]


def _raw_summary(
    conn: AnyConnection, tables: set[str], since_ns: int | None, until_ns: int | None, service: str | None
) -> Summary:
    """``summary`` read row by row: a store without the rollups."""
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
        # Scores can arrive without their records (late carrier scores, score-only exports). Those with a value,
        # as the rollups count them: a metric that failed (no value) is not a time the period's figures cover.
        s_first, s_last = conn.execute(
            f"SELECT MIN(time_ns), MAX(time_ns) FROM {SCORES} WHERE value IS NOT NULL{where}", args
        ).fetchone()
        first = min((t for t in (first, s_first) if t is not None), default=None)
        last = max((t for t in (last, s_last) if t is not None), default=None)
        scored_records, elsewhere = _scored_counts(conn, tables, since_ns, until_ns, service)
    firing = _firing(conn, tables)
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
    with open_source(source) as conn:
        tables = table_names(conn)
        if SCORES not in tables:
            return []
        if set(ROLLUPS) <= tables:
            ranked_ids = _ranked_by_quality(conn, threshold, limit, since_ns, until_ns, service)
        else:
            ranked_ids = _ranked_by_scores(conn, threshold, limit, since_ns, until_ns, service)
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


def _limit(limit: int | None) -> tuple[str, list[Any]]:
    # No limit: no LIMIT clause (PostgreSQL refuses SQLite's LIMIT -1).
    return ("", []) if limit is None else (" LIMIT ?", [limit])


def _ranked_by_quality(
    conn: AnyConnection, threshold: float, limit: int | None, since: int | None, until: int | None, service: str | None
) -> list[str]:
    """The problem records' span ids, worst first, from ``record_quality``: a walk of its ``(overall, time_ns)``
    index from the lowest overall score up (a record whose overall is below the threshold has a score past it)."""
    where, args = _time_clause("time_ns", since, until, service)
    tail, tail_args = _limit(limit)
    sql = f"SELECT span_id FROM {RECORD_QUALITY} WHERE worst < ?{where} ORDER BY overall, time_ns DESC, span_id{tail}"
    return [row[0] for row in conn.execute(sql, [threshold, *args, *tail_args])]


def _ranked_by_scores(
    conn: AnyConnection, threshold: float, limit: int | None, since: int | None, until: int | None, service: str | None
) -> list[str]:
    """The problem records' span ids, worst first, ranked over ``scores`` (a store without the rollups)."""
    lower = sorted(LOWER_IS_BETTER)
    where, args = _scores_clause(conn, since, until, service)
    marks = ", ".join("?" for _ in lower)
    goodness_sql = f"CASE WHEN metric IN ({marks}) THEN 1.0 - value ELSE value END"
    bad_sql = f"(metric IN ({marks}) AND value > ?) OR (metric NOT IN ({marks}) AND value < ?)"
    tail, tail_args = _limit(limit)
    return [
        row[0]
        for row in conn.execute(
            f"SELECT span_id FROM {SCORES} WHERE value IS NOT NULL{where} GROUP BY span_id "
            f"HAVING SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END) > 0 "
            f"ORDER BY AVG({goodness_sql}) ASC, MAX(time_ns) DESC, span_id{tail}",
            [*args, *lower, 1.0 - threshold, *lower, threshold, *lower, *tail_args],
        )
    ]


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
    if set(ROLLUPS) <= tables:
        hourly = _hourly_scores(conn, Period(since_ns, until_ns), service)
        hours = [hour for hour, _ in hourly if hour >= 0]
        if hours and max(hours) - min(hours) + 1 > _RAW_SERIES_HOURS:
            return _hourly_series(hourly, min(hours), max(hours), buckets)
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


_RAW_SERIES_HOURS = 24
"""Scores spanning more hours than this are drawn from the hourly rollup (buckets of whole hours); fewer, from
the rows, in finer buckets."""


def _hourly_series(
    hourly: dict[tuple[int, str], tuple[int, float]], first: int, last: int, buckets: int
) -> dict[str, list[tuple[int, float, int]]]:
    """``series`` from hourly sums: buckets of a whole number of hours, at most ``buckets`` of them."""
    width = -(-(last - first + 1) // buckets)
    sums: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))
    for (hour, metric), (n, total) in hourly.items():
        if hour >= 0:
            cell = sums[metric][(hour - first) // width]
            cell[0] += n
            cell[1] += total
    middle = width * HOUR_NS // 2
    return {
        metric: [
            ((first + bucket * width) * HOUR_NS + middle, total / n, int(n))
            for bucket, (n, total) in sorted(cells.items())
        ]
        for metric, cells in sorted(sums.items())
    }


def alert_marks(conn: AnyConnection, tables: set[str]) -> list[dict[str, Any]]:
    """Where alerts fired and resolved, for the charts."""
    return _alert_rows(conn, tables, _ALERT_MARKS_SQL)


def recent_alerts(conn: AnyConnection, tables: set[str], limit: int = 20) -> list[dict[str, Any]]:
    """The latest notified transitions (the first quiet OK/NO_DATA sighting of a group is left out)."""
    return _alert_rows(conn, tables, _RECENT_ALERTS_SQL, (limit,))
