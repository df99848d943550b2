"""What ``ragtrace eval --out FILE`` writes: the markdown report, or every record's scores as JSONL or CSV.

``output_format(path)`` chooses by the file's extension: ``.jsonl`` (or ``.ndjson``) and ``.csv`` get
one row per record scored, in input order; any other extension gets the markdown report
(``EvaluationResult.to_markdown``). ``render(result, kind, ...)`` returns the file's text.

A row names its record as the rest of ragtrace does: ``line`` (its line in the input file, blank and
skipped lines counted; null when the records were not read from a file), ``index`` (its 0-based
position among the records), ``query``, ``answer``, ``overall`` (``RecordResult.overall``), then for
each metric of the suite the fields of its ``Score``: ``value``, ``label``, ``status``, ``reason``,
``error_type``, ``explanation`` (and ``direction`` in JSONL). In JSONL the scores are an object
under ``scores`` keyed by metric; in CSV each is a column ``<metric>`` (the value) or
``<metric>.<field>``. An absent score has no value (null, or an empty cell) and says why in
``status``, ``reason`` and ``error_type``.

Records that were never scored (a run stopped early) and skipped input lines have no row: the
report counts and lists them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from ragtrace._evaluation_result import DEFAULT_THRESHOLD, EvaluationResult, RecordResult
from ragtrace.metrics._base import Score

__all__ = ["Format", "output_format", "render"]

Format = Literal["markdown", "jsonl", "csv"]

_BY_EXTENSION: dict[str, Format] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}

SCORE_FIELDS = ("value", "label", "status", "reason", "error_type", "explanation")
"""The ``Score`` fields each row carries per metric, in column order (JSONL adds ``direction``)."""


def output_format(path: Path) -> Format:
    """The format ``--out`` writes to ``path``, from its extension (any case)."""
    return _BY_EXTENSION.get(path.suffix.lower(), "markdown")


def render(result: EvaluationResult, kind: Format, worst: int = 10, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The text of an ``--out`` file in format ``kind``; ``worst`` and ``threshold`` shape the markdown report."""
    if kind == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in _rows(result))
    if kind == "csv":
        return _csv(result)
    return result.to_markdown(worst=worst, threshold=threshold)


def _score(score: Score | None) -> dict[str, Any]:
    if score is None:
        return dict.fromkeys(SCORE_FIELDS)
    return {name: getattr(score, name) for name in SCORE_FIELDS}


def _head(record: RecordResult) -> dict[str, Any]:
    return {
        "line": record.line,
        "index": record.index,
        "query": record.record.query,
        "answer": record.record.answer,
        "overall": record.overall,
    }


def _rows(result: EvaluationResult) -> Iterator[dict[str, Any]]:
    for record in result.records:
        scores = record.result.scores
        yield _head(record) | {
            "scores": {
                name: {"direction": scores[name].direction} | _score(scores[name]) if name in scores else _score(None)
                for name in result.metrics
            }
        }


def _csv(result: EvaluationResult) -> str:
    columns = ["line", "index", "query", "answer", "overall"]
    for name in result.metrics:
        columns += [name if field == "value" else f"{name}.{field}" for field in SCORE_FIELDS]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    for record in result.records:
        row = list(_head(record).values())
        for name in result.metrics:
            row += _score(record.result.scores.get(name)).values()
        writer.writerow("" if value is None else value for value in row)
    return out.getvalue()
