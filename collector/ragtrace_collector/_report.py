"""Reports over the store: ``summary()``, ``problems()``, ``report()`` (markdown or HTML) and the live page.

Everything here reads the store through SQL over the agreed schema (``spans``, ``rag_records``,
``scores``, ``alerts``); a store whose tables do not exist yet reads as empty. A *source* is a path to
the SQLite file, a ``sqlite_utils.Database``, or an object with ``path`` (the collector's ``Store``).

Definitions (``/work/shared/metrics.md``, "Reports over many records"):

* a record's *overall* score is the mean of its measured metrics, each turned "higher is better"
  (``1 - value`` for hallucination-like metrics), so one number ranks records whatever the suite;
* a *problem* is a record with any metric on the wrong side of ``threshold`` (below it for
  higher-is-better metrics, above ``1 - threshold`` for lower-is-better ones), worst overall first,
  each with its issues listed.

The HTML page is self-contained: plotly.js is inlined once, so it renders offline with no CDN.
"""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._registry import LOWER_IS_BETTER
from ragtrace_collector._drift import metric_direction

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

Format = Literal["markdown", "html"]

_RAG = "rag_records"
_SCORES = "scores"
_ALERTS = "alerts"
_NO_DECISION = "(none)"  # rag_records.decision is NULL when the app did not decide (server-side scoring)


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric over the records: how many were scored and their mean."""

    metric: str
    direction: str
    count: int
    mean: float


@dataclass(frozen=True, slots=True)
class Summary:
    """The store at a glance. Times are ns since the epoch; ``None`` when there is nothing yet."""

    records: int
    scored: int
    metrics: tuple[MetricSummary, ...]
    overall_mean: float | None
    overall_min: float | None
    overall_max: float | None
    first_ns: int | None
    last_ns: int | None
    decisions: tuple[tuple[str, int], ...]
    firing: tuple[dict[str, Any], ...] = ()

    @property
    def means(self) -> dict[str, float]:
        """Mean of each metric, by name."""
        return {m.metric: m.mean for m in self.metrics}


@dataclass(frozen=True, slots=True)
class Issue:
    """One metric of a record on the wrong side of the threshold."""

    metric: str
    value: float
    direction: str
    limit: float

    def __str__(self) -> str:
        sign = "<" if self.direction == "higher" else ">"
        return f"{self.metric} {self.value:.2f} {sign} {self.limit:.2f}"


@dataclass(frozen=True, slots=True)
class Problem:
    """A record with at least one issue, with what a human needs to judge it."""

    span_id: str
    trace_id: str | None
    service: str | None
    route: str | None
    time_ns: int | None
    overall: float
    issues: tuple[Issue, ...]
    scores: dict[str, float] = field(default_factory=dict)
    query: str | None = None
    answer: str | None = None
    chunks: tuple[dict[str, Any], ...] = ()


# --------------------------------------------------------------------------------------------------
# Reading the store
# --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _connect(source: object) -> Iterator[sqlite3.Connection]:
    """A connection for ``source``; one opened here is closed on exit, a given one is left open."""
    conn: sqlite3.Connection | None = None
    if isinstance(source, sqlite3.Connection):
        yield source
        return
    database_conn = getattr(source, "conn", None)
    if isinstance(database_conn, sqlite3.Connection):  # a sqlite_utils.Database
        yield database_conn
        return
    path = getattr(source, "path", source)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"report source must be a path, a sqlite_utils.Database or a Store, not {type(source)!r}")
    if not Path(path).exists():
        raise ConfigurationError(f"store {path} does not exist; pass the --db file the collector writes")
    # as_uri() percent-encodes the path: a "#", "?" or "%" in a file name would otherwise end the path part of
    # the URI and open (or create) another file.
    conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        yield conn
    finally:
        conn.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _time_clause(column: str, since_ns: int | None, until_ns: int | None) -> tuple[str, list[int]]:
    clauses, args = [], []
    if since_ns is not None:
        clauses.append(f"{column} >= ?")
        args.append(since_ns)
    if until_ns is not None:
        clauses.append(f"{column} <= ?")
        args.append(until_ns)
    return "".join(f" AND {c}" for c in clauses), args


def _overall(scores: dict[str, float]) -> float:
    values = [1.0 - v if metric_direction(m) == "lower" else v for m, v in scores.items()]
    return math.fsum(values) / len(values)


def summary(source: object, *, since_ns: int | None = None, until_ns: int | None = None) -> Summary:
    """Count, mean of each metric, min/mean/max of the overall score, first and last time, decision
    coverage and the rule groups currently in ALERT."""
    with _connect(source) as conn:
        tables = _tables(conn)
        records, first, last, decisions = 0, None, None, []
        if _RAG in tables:
            where, args = _time_clause("time_ns", since_ns, until_ns)
            records, first, last = conn.execute(
                f"SELECT COUNT(*), MIN(time_ns), MAX(time_ns) FROM {_RAG} WHERE 1 = 1{where}", args
            ).fetchone()
            decisions = [
                (decision or _NO_DECISION, count)
                for decision, count in conn.execute(
                    f"SELECT decision, COUNT(*) FROM {_RAG} WHERE 1 = 1{where} GROUP BY decision ORDER BY 2 DESC", args
                )
            ]
        metrics: list[MetricSummary] = []
        scored, o_mean, o_min, o_max = 0, None, None, None
        if _SCORES in tables:
            where, args = _time_clause("time_ns", since_ns, until_ns)
            for metric, count, mean in conn.execute(
                f"SELECT metric, COUNT(value), AVG(value) FROM {_SCORES} WHERE value IS NOT NULL{where} "
                "GROUP BY metric ORDER BY metric",
                args,
            ):
                metrics.append(MetricSummary(metric, metric_direction(metric), int(count), float(mean)))
            # The overall score per record, aggregated in SQL so a large store is not read into Python.
            lower = sorted(LOWER_IS_BETTER)
            marks = ", ".join("?" for _ in lower)
            scored, o_mean, o_min, o_max = conn.execute(
                f"SELECT COUNT(*), AVG(o), MIN(o), MAX(o) FROM (SELECT AVG(CASE WHEN metric IN ({marks}) "
                f"THEN 1.0 - value ELSE value END) AS o FROM {_SCORES} WHERE value IS NOT NULL{where} "
                "GROUP BY span_id)",
                [*lower, *args],
            ).fetchone()
            # Scores can arrive without their records (late carrier scores, score-only exports).
            s_first, s_last = conn.execute(
                f"SELECT MIN(time_ns), MAX(time_ns) FROM {_SCORES} WHERE 1 = 1{where}", args
            ).fetchone()
            first = min((t for t in (first, s_first) if t is not None), default=None)
            last = max((t for t in (last, s_last) if t is not None), default=None)
        firing = tuple(a for a in _latest_alerts(conn, tables) if a["state"] == "ALERT")
    return Summary(
        records=int(records or 0),
        scored=int(scored or 0),
        metrics=tuple(metrics),
        overall_mean=o_mean,
        overall_min=o_min,
        overall_max=o_max,
        first_ns=first,
        last_ns=last,
        decisions=tuple(decisions),
        firing=firing,
    )


def _latest_alerts(conn: sqlite3.Connection, tables: set[str]) -> list[dict[str, Any]]:
    if _ALERTS not in tables:
        return []
    cursor = conn.execute(
        f"SELECT * FROM {_ALERTS} WHERE id IN (SELECT MAX(id) FROM {_ALERTS} GROUP BY rule, service, route) "
        "ORDER BY rule, service, route"
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def problems(
    source: object,
    threshold: float = 0.6,
    *,
    limit: int | None = 50,
    since_ns: int | None = None,
    until_ns: int | None = None,
) -> list[Problem]:
    """Records with any metric on the wrong side of ``threshold`` (direction-aware), worst overall first
    (ties: newest first), at most ``limit``, each with its issues and its query, answer and chunks."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    lower = sorted(LOWER_IS_BETTER)
    with _connect(source) as conn:
        tables = _tables(conn)
        if _SCORES not in tables:
            return []
        where, args = _time_clause("time_ns", since_ns, until_ns)
        marks = ", ".join("?" for _ in lower)
        goodness_sql = f"CASE WHEN metric IN ({marks}) THEN 1.0 - value ELSE value END"
        bad_sql = f"(metric IN ({marks}) AND value > ?) OR (metric NOT IN ({marks}) AND value < ?)"
        # Rank in SQL (one pass over the range, top `limit` only), then read the chosen records' scores.
        ranked_ids = [
            row[0]
            for row in conn.execute(
                f"SELECT span_id FROM {_SCORES} WHERE value IS NOT NULL{where} GROUP BY span_id "
                f"HAVING SUM(CASE WHEN {bad_sql} THEN 1 ELSE 0 END) > 0 "
                f"ORDER BY AVG({goodness_sql}) ASC, MAX(time_ns) DESC, span_id LIMIT ?",
                [*args, *lower, 1.0 - threshold, *lower, threshold, *lower, -1 if limit is None else limit],
            )
        ]
        found: dict[str, dict[str, Any]] = {
            span_id: {"scores": {}, "trace_id": None, "service": None, "route": None, "time_ns": None}
            for span_id in ranked_ids
        }
        for start in range(0, len(ranked_ids), 500):
            part = ranked_ids[start : start + 500]
            for span_id, metric, value, trace_id, service, route, time_ns in conn.execute(
                f"SELECT span_id, metric, value, trace_id, service, route, time_ns FROM {_SCORES} "
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


def _records(conn: sqlite3.Connection, tables: set[str], span_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    if _RAG not in tables or not span_ids:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(span_ids), 500):
        part = list(span_ids[start : start + 500])
        cursor = conn.execute(
            f"SELECT span_id, trace_id, service, route, time_ns, query, answer, chunks FROM {_RAG} "
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


def _series(
    conn: sqlite3.Connection, tables: set[str], since_ns: int | None, until_ns: int | None, buckets: int = 120
) -> dict[str, list[tuple[int, float, int]]]:
    """Per metric: (bucket start ns, mean, count) over at most ``buckets`` equal time buckets."""
    if _SCORES not in tables:
        return {}
    where, args = _time_clause("time_ns", since_ns, until_ns)
    lo, hi = conn.execute(
        f"SELECT MIN(time_ns), MAX(time_ns) FROM {_SCORES} WHERE value IS NOT NULL{where}", args
    ).fetchone()
    if lo is None:
        return {}
    width = max((hi - lo) // buckets + 1, 1)
    series: dict[str, list[tuple[int, float, int]]] = {}
    for metric, bucket, mean, count in conn.execute(
        f"SELECT metric, (time_ns - ?) / ?, AVG(value), COUNT(*) FROM {_SCORES} WHERE value IS NOT NULL{where} "
        "GROUP BY metric, 2 ORDER BY metric, 2",
        [lo, width, *args],
    ):
        series.setdefault(metric, []).append((lo + int(bucket) * width + width // 2, float(mean), int(count)))
    return series


def _alert_marks(conn: sqlite3.Connection, tables: set[str]) -> list[dict[str, Any]]:
    if _ALERTS not in tables:
        return []
    cursor = conn.execute(
        f"SELECT time_ns, rule, metric, service, route, state, previous_state, value, message FROM {_ALERTS} "
        "WHERE state = 'ALERT' OR (state = 'OK' AND previous_state = 'ALERT') ORDER BY time_ns"
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


# --------------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------------


def _iso(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cut(text: str | None, n: int) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _chunk_label(chunk: dict[str, Any], *, score: bool = False) -> str:
    """The chunk's id (and, with ``score``, its retrieval score); "" for a chunk without either.

    A chunk captured from a plain string has no id (stored as null): the report shows nothing, never "None".
    """
    chunk_id = chunk.get("id")
    label = "" if chunk_id is None else str(chunk_id)
    chunk_score = chunk.get("score")
    if score and chunk_score is not None:
        label = f"{label} (score {chunk_score})".lstrip()
    return label


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def report(
    source: object,
    format: Format = "markdown",
    *,
    threshold: float = 0.6,
    limit: int = 20,
    since_ns: int | None = None,
    until_ns: int | None = None,
    refresh_seconds: int | None = None,
) -> str:
    """The report as markdown or as a self-contained HTML page with charts.

    ``refresh_seconds`` (HTML only) makes the page reload itself, as the live page does.
    """
    if format not in ("markdown", "html"):
        raise ValueError(f"format must be 'markdown' or 'html', got {format!r}")
    head = summary(source, since_ns=since_ns, until_ns=until_ns)
    worst = problems(source, threshold, limit=limit, since_ns=since_ns, until_ns=until_ns)
    with _connect(source) as conn:
        tables = _tables(conn)
        recent = _recent_alerts(conn, tables)
        if format == "markdown":
            return _markdown(head, worst, threshold, recent)
        series = _series(conn, tables, since_ns, until_ns)
        marks = _alert_marks(conn, tables)
    return _html(head, worst, threshold, series, marks, recent, refresh_seconds)


def _recent_alerts(conn: sqlite3.Connection, tables: set[str], limit: int = 20) -> list[dict[str, Any]]:
    """The latest notified transitions (the first quiet OK/NO_DATA sighting of a group is left out)."""
    if _ALERTS not in tables:
        return []
    cursor = conn.execute(
        f"SELECT time_ns, rule, metric, service, route, previous_state, state, message FROM {_ALERTS} "
        "WHERE previous_state IS NOT NULL OR state IN ('ALERT', 'WARNING') ORDER BY id DESC LIMIT ?",
        (limit,),
    )
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _scope(alert: dict[str, Any]) -> str:
    return ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None) or "all"


def _markdown(head: Summary, worst: list[Problem], threshold: float, recent: list[dict[str, Any]]) -> str:
    lines = [
        "# ragtrace report",
        "",
        f"- Records: {head.records} ({head.scored} scored)",
        f"- From {_iso(head.first_ns)} to {_iso(head.last_ns)}",
        f"- Overall score: mean {_num(head.overall_mean)}, min {_num(head.overall_min)}, max {_num(head.overall_max)}",
        "",
        "## Metrics",
        "",
        "| Metric | Mean | Scored | Better |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| {m.metric} | {m.mean:.3f} | {m.count} | {m.direction} |" for m in head.metrics]
    if not head.metrics:
        lines.append("| (no scores yet) | | | |")
    lines += ["", "## Decision coverage", "", "| Decision | Records | Share |", "|---|---:|---:|"]
    total = sum(count for _, count in head.decisions) or 1
    lines += [f"| {d} | {count} | {count / total:.1%} |" for d, count in head.decisions]
    lines += ["", "## Alerts firing", ""]
    if head.firing:
        for alert in head.firing:
            where = ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None)
            lines.append(
                f"- **{alert['rule']}** ({alert['metric']}{'; ' + where if where else ''}): {alert['message']}"
            )
    else:
        lines.append("None.")
    lines += ["", "## Recent alert transitions", ""]
    if recent:
        lines += ["| Time | Rule | Metric | Scope | Change | Message |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {_iso(a['time_ns'])} | {a['rule']} | {a['metric']} | {_md_cell(_scope(a))} | "
            f"{a['previous_state'] or '-'} -> {a['state']} | {_md_cell(a['message'] or '')} |"
            for a in recent
        ]
    else:
        lines.append("None.")
    lines += ["", f"## Problems (threshold {threshold:g}, worst first)", ""]
    if not worst:
        lines.append("None.")
    for i, p in enumerate(worst, 1):
        lines += [
            f"### {i}. {_md_cell(_cut(p.query, 100)) or p.span_id} (overall {p.overall:.2f})",
            "",
            f"- Issues: {', '.join(str(issue) for issue in p.issues)}",
            f"- Scores: {', '.join(f'{m} {v:.2f}' for m, v in p.scores.items())}",
            f"- Service {p.service or '-'}, route {p.route or '-'}, {_iso(p.time_ns)}, "
            f"trace `{p.trace_id or '-'}`, span `{p.span_id}`",
        ]
        if p.answer:
            lines.append(f"- Answer: {_cut(p.answer, 300)}")
        for j, chunk in enumerate(p.chunks[:5]):
            label = _chunk_label(chunk)
            lines.append(f"  - Chunk {j}{f' ({label})' if label else ''}: {_cut(str(chunk.get('content', '')), 200)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _figures(series: dict[str, list[tuple[int, float, int]]], marks: list[dict[str, Any]], head: Summary) -> list[str]:
    import plotly.graph_objects as go

    def when(ns: int) -> datetime:
        return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)

    config = {"displaylogo": False, "responsive": True}
    divs = []
    for metric, points in series.items():
        fig = go.Figure()
        fig.add_trace(
            go.Scatter(
                x=[when(t) for t, _, _ in points],
                y=[mean for _, mean, _ in points],
                customdata=[count for _, _, count in points],
                mode="lines+markers",
                name=f"mean {metric}",
                hovertemplate="%{x}<br>mean %{y:.3f} over %{customdata} records<extra></extra>",
            )
        )
        fired = [m for m in marks if m["metric"] == metric]
        for state, symbol, color in (("ALERT", "triangle-down", "#d62728"), ("OK", "circle-open", "#2ca02c")):
            these = [m for m in fired if m["state"] == state]
            if these:
                fig.add_trace(
                    go.Scatter(
                        x=[when(m["time_ns"]) for m in these],
                        y=[1.05] * len(these),
                        mode="markers",
                        marker={"symbol": symbol, "size": 13, "color": color},
                        name="alert" if state == "ALERT" else "resolved",
                        text=[f"{m['rule']} [{m['service'] or '*'}]: {m['message']}" for m in these],
                        hovertemplate="%{x}<br>%{text}<extra></extra>",
                    )
                )
        better = "lower" if metric_direction(metric) == "lower" else "higher"
        fig.update_layout(
            title=f"{metric} over time ({better} is better)",
            height=320,
            margin={"l": 50, "r": 20, "t": 50, "b": 40},
            yaxis={"range": [-0.05, 1.12]},
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        )
        divs.append(fig.to_html(full_html=False, include_plotlyjs=False, config=config, default_height="320px"))
    if head.decisions:
        names = [d for d, _ in head.decisions]
        counts = [c for _, c in head.decisions]
        total = sum(counts) or 1
        fig = go.Figure(
            go.Bar(x=names, y=counts, text=[f"{c / total:.0%}" for c in counts], textposition="auto", name="records")
        )
        fig.update_layout(
            title="Decision coverage (what happened to each RAG span's scoring)",
            height=320,
            margin={"l": 50, "r": 20, "t": 50, "b": 40},
        )
        divs.append(fig.to_html(full_html=False, include_plotlyjs=False, config=config, default_height="320px"))
    return divs


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1100px; color: #222; }
h1 { margin-bottom: .2rem; } .muted { color: #666; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { background: #f5f7fa; border-radius: 8px; padding: .7rem 1rem; min-width: 9rem; }
.card b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
td, th { padding: .25rem .6rem; border-bottom: 1px solid #ddd; }
.firing { background: #fde8e8; border-left: 4px solid #d62728; padding: .4rem .8rem; margin: .3rem 0; }
details { border: 1px solid #ddd; border-radius: 6px; padding: .5rem .8rem; margin: .5rem 0; }
summary { cursor: pointer; } .issue { color: #b00020; }
pre { white-space: pre-wrap; background: #fafafa; padding: .4rem; }
"""


def _html(
    head: Summary,
    worst: list[Problem],
    threshold: float,
    series: dict[str, list[tuple[int, float, int]]],
    marks: list[dict[str, Any]],
    recent: list[dict[str, Any]],
    refresh_seconds: int | None,
) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>ragtrace report</title>',
        f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">' if refresh_seconds else "",
        f"<style>{_CSS}</style>",
        f"<script>{_plotly_js()}</script>",
        "</head><body>",
        "<h1>ragtrace</h1>",
        f'<p class="muted">{e(_iso(head.first_ns))} to {e(_iso(head.last_ns))}</p>',
        '<div class="cards">',
        f'<div class="card">records<b id="records">{head.records}</b></div>',
        f'<div class="card">scored<b id="scored">{head.scored}</b></div>',
        f'<div class="card">overall mean<b>{_num(head.overall_mean)}</b></div>',
        f'<div class="card">alerts firing<b id="firing">{len(head.firing)}</b></div>',
        "</div>",
    ]
    for alert in head.firing:
        where = ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None)
        parts.append(
            f'<div class="firing"><b>{e(alert["rule"])}</b> {e(alert["metric"])} {e(where)}: '
            f"{e(alert['message'])}</div>"
        )
    parts += ["<h2>Metrics</h2>", "<table><tr><th>metric</th><th>mean</th><th>scored</th><th>better</th></tr>"]
    parts += [
        f"<tr><td>{e(m.metric)}</td><td>{m.mean:.3f}</td><td>{m.count}</td><td>{m.direction}</td></tr>"
        for m in head.metrics
    ]
    parts.append("</table>")
    figures = _figures(series, marks, head)
    parts.append('<h2>Scores over time</h2><div id="charts">')
    parts += figures or ['<p class="muted">No scores stored yet.</p>']
    parts.append("</div>")
    if recent:
        parts.append('<h2>Recent alert transitions</h2><table id="transitions">')
        parts.append("<tr><th>time</th><th>rule</th><th>metric</th><th>scope</th><th>change</th><th>message</th></tr>")
        parts += [
            f"<tr><td>{e(_iso(a['time_ns']))}</td><td>{e(a['rule'])}</td><td>{e(a['metric'])}</td>"
            f"<td>{e(_scope(a))}</td><td>{e(a['previous_state'] or '-')} &rarr; {e(a['state'])}</td>"
            f"<td>{e(a['message'] or '')}</td></tr>"
            for a in recent
        ]
        parts.append("</table>")
    parts.append(f"<h2>Worst traces (threshold {threshold:g})</h2>")
    if not worst:
        parts.append('<p class="muted">No record below the threshold.</p>')
    for p in worst:
        issues = ", ".join(str(i) for i in p.issues)
        parts.append(
            f'<details class="problem"><summary><b>{p.overall:.2f}</b> {e(_cut(p.query, 120) or p.span_id)} '
            f'<span class="issue">{e(issues)}</span></summary>'
        )
        parts.append(
            f'<p class="muted">service {e(p.service or "-")}, route {e(p.route or "-")}, {e(_iso(p.time_ns))}, '
            f"trace {e(p.trace_id or '-')}, span {e(p.span_id)}</p>"
        )
        parts.append(f"<p>Scores: {e(', '.join(f'{m} {v:.2f}' for m, v in p.scores.items()))}</p>")
        parts.append(f"<h4>Query</h4><pre>{e(p.query or '')}</pre><h4>Answer</h4><pre>{e(p.answer or '')}</pre>")
        if p.chunks:
            parts.append("<h4>Chunks</h4><ol start=0>")
            for chunk in p.chunks:
                label = _chunk_label(chunk, score=True)
                title = f"<b>{e(label)}</b>" if label else ""
                parts.append(f"<li>{title}<pre>{e(str(chunk.get('content', '')))}</pre></li>")
            parts.append("</ol>")
        parts.append("</details>")
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)


# --------------------------------------------------------------------------------------------------
# Files and the live page
# --------------------------------------------------------------------------------------------------


def write_report(
    db_path: str | os.PathLike[str], out_path: str | os.PathLike[str], format: Format | None = None, **options: Any
) -> Path:
    """Write the report of the store at ``db_path`` to ``out_path``; the format defaults to markdown
    for ``.md`` files and HTML otherwise. Returns the path written."""
    out = Path(out_path)
    chosen: Format = format or ("markdown" if out.suffix.lower() in (".md", ".markdown") else "html")
    text = report(db_path, chosen, **options)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def page_routes(store: object, *, refresh_seconds: int = 60) -> list[BaseRoute]:
    """Starlette routes serving the live report at ``/`` (HTML; ``?format=markdown`` for text and
    ``?threshold=`` to change the problem threshold). Each request reads the store on a worker thread
    through its own read-only connection, so the page never blocks ingestion or the event loop."""
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    source = _page_source(store)

    async def page(request: Request) -> Response:
        try:
            threshold = float(request.query_params.get("threshold", "0.6"))
            if not 0.0 <= threshold <= 1.0:
                raise ValueError
        except ValueError:
            return PlainTextResponse("threshold must be a number in [0, 1]\n", status_code=400)
        if request.query_params.get("format") == "markdown":
            text = await run_in_threadpool(report, source, "markdown", threshold=threshold)
            return PlainTextResponse(text, media_type="text/markdown; charset=utf-8")
        body = await run_in_threadpool(report, source, "html", threshold=threshold, refresh_seconds=refresh_seconds)
        return HTMLResponse(body)

    return [Route("/", page, methods=["GET"], name="report")]


def _page_source(store: object) -> object:
    """A source each request can open on its own thread: the store's file path when it has one."""
    path = getattr(store, "path", None)
    if isinstance(path, str | os.PathLike):
        return Path(path)
    if isinstance(store, str | os.PathLike):
        return Path(store)
    database = store if hasattr(store, "conn") else getattr(store, "db", None)
    conn = getattr(database, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        row = conn.execute("PRAGMA database_list").fetchone()
        if row and row[2]:
            return Path(row[2])
    raise TypeError("page_routes needs a Store, a path or a file-backed sqlite_utils.Database")
