"""Offline evaluation: score a list or a JSONL file of RAG records (golden sets, replays) with a suite.

``ragtrace.evaluate(records, metrics=None, judge=None, concurrency=8, progress=True)`` returns an
``EvaluationResult``: the ``SuiteResult`` of every record, a per-metric summary (measured count,
mean, min, max, why the rest are absent), the worst records and the total judge cost, with
``to_markdown()``. ``aevaluate`` is the same coroutine for callers already inside an event loop.

Records are ``RagRecord`` values, dicts in the shape ``RagRecord.from_dict`` reads, or a path to a
JSONL file of such dicts. ``fields`` renames keys first, e.g. ``{"answer": "hallucinated_answer",
"chunks": "knowledge"}`` for a data set with its own names. A bad line is a ``ValueError`` naming the
file and line number; nothing is skipped silently.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tqdm import tqdm

from ragtrace._record import RagRecord
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import Judge
from ragtrace.metrics._base import REASON_JUDGE_ERROR, ZERO_COST, Cost, Direction, Metric, Score
from ragtrace.metrics._registry import build_suite
from ragtrace.metrics._suite import Suite, SuiteResult

__all__ = [
    "EvaluationResult",
    "MetricSummary",
    "RecordResult",
    "aevaluate",
    "evaluate",
    "load_records",
]

DEFAULT_THRESHOLD = 0.6
"""A record has a problem when some metric's goodness (value, or 1 - value when lower is better) is below this."""

Records = str | os.PathLike[str] | Iterable[RagRecord | Mapping[str, Any]]
Metrics = str | Suite | Iterable[str | Metric] | None


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def _renamed(data: Mapping[str, Any], fields: Mapping[str, str] | None) -> Mapping[str, Any]:
    if not fields:
        return data
    out = dict(data)
    for target, source in fields.items():
        if source in data:
            out[target] = data[source]
    return out


def load_records(path: str | os.PathLike[str], fields: Mapping[str, str] | None = None) -> list[RagRecord]:
    """Read a JSONL file of records; blank lines are skipped, a bad line raises naming its number.

    The file is UTF-8 (a byte-order mark at its start is allowed); a line that is not UTF-8, not a
    JSON object or not a record in the shape ``RagRecord.from_dict`` reads raises ``ValueError``
    naming the file and the line.
    """
    file = Path(path)
    if file.is_dir():
        raise IsADirectoryError(f"records file {file} is a directory: give a JSONL file")
    if not file.is_file():
        raise FileNotFoundError(f"no such records file: {file}")
    records: list[RagRecord] = []
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(
                    f"{file}, line {number}: not UTF-8 (byte {raw[err.start]:#04x} at byte {err.start + 1}); "
                    "save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{file}, line {number}: not valid JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(data, dict):
                raise ValueError(f"{file}, line {number}: expected a JSON object, got {type(data).__name__}")
            try:
                records.append(RagRecord.from_dict(_renamed(data, fields)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"{file}, line {number}: {err}") from None
    return records


def _as_records(records: Records, fields: Mapping[str, str] | None) -> list[RagRecord]:
    if isinstance(records, (str, os.PathLike)):
        return load_records(records, fields)
    out: list[RagRecord] = []
    for index, item in enumerate(records):
        if isinstance(item, RagRecord):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(RagRecord.from_dict(_renamed(item, fields)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"record {index}: {err}") from None
        else:
            raise TypeError(f"record {index}: expected a RagRecord or a dict, got {type(item).__name__}")
    return out


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


def goodness(score: Score) -> float | None:
    """The score on a higher-is-better scale in [0, 1], or None when absent."""
    if not score.ok or score.value is None:
        return None
    value = min(1.0, max(0.0, score.value))
    return value if score.direction == "higher" else 1.0 - value


@dataclass(frozen=True, slots=True)
class RecordResult:
    """One record, where it was in the input, and its scores."""

    index: int
    record: RagRecord
    result: SuiteResult

    @property
    def overall(self) -> float | None:
        """Mean goodness of the measured scores (lower-is-better metrics flipped), None if none was measured."""
        values = [g for g in map(goodness, self.result.scores.values()) if g is not None]
        return math.fsum(values) / len(values) if values else None

    def issues(self, threshold: float = DEFAULT_THRESHOLD) -> list[Score]:
        """The measured scores whose goodness is below ``threshold``."""
        return [s for s in self.result.scores.values() if (g := goodness(s)) is not None and g < threshold]


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """One metric over all records: how many were measured, their mean/min/max, and why others are absent.

    ``absent`` counts the absent scores by reason (``judge_error``, ``no_chunks``, ...); ``errors``
    counts the ``judge_error`` ones by the judge's error type (``connection``, ``timeout``,
    ``authentication``, ...), which says what to fix.
    """

    name: str
    direction: Direction
    measured: int
    total: int
    mean: float | None
    minimum: float | None
    maximum: float | None
    absent: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """Scores of many records with their aggregate; ``to_markdown()`` renders the report."""

    records: tuple[RecordResult, ...]
    metrics: tuple[str, ...]
    summary: Mapping[str, MetricSummary]
    cost: Cost
    judge: str
    seconds: float

    @property
    def count(self) -> int:
        """Records scored."""
        return len(self.records)

    @property
    def scored(self) -> int:
        """Records with at least one measured score."""
        return sum(1 for r in self.records if any(s.ok for s in r.result.scores.values()))

    @property
    def errors(self) -> dict[str, int]:
        """Failed scores (status ``error``) over all records and metrics, by error type, most frequent first."""
        counts = Counter(
            s.error_type or s.reason or s.status for r in self.records for s in r.result.scores.values() if _failed(s)
        )
        return dict(counts.most_common())

    @property
    def judge_failed(self) -> bool:
        """True when there were records but none got a score, and judge errors are why (some score failed).

        ``ragtrace eval`` exits 1 then: a dead endpoint or a wrong key must not look like a run.
        """
        return self.count > 0 and self.scored == 0 and bool(self.errors)

    @property
    def means(self) -> dict[str, float | None]:
        """Mean of each metric over the records where it was measured."""
        return {name: s.mean for name, s in self.summary.items()}

    def worst(self, n: int = 10, threshold: float = DEFAULT_THRESHOLD) -> list[RecordResult]:
        """Up to ``n`` records with a problem (some metric below ``threshold``, direction-aware), worst first."""
        problems = [r for r in self.records if r.issues(threshold)]
        problems.sort(key=lambda r: (r.overall if r.overall is not None else 1.0, r.index))
        return problems[:n]

    def to_markdown(self, worst: int = 10, threshold: float = DEFAULT_THRESHOLD) -> str:
        """A markdown report: totals, one row per metric, then the worst records and their issues."""
        cost = self.cost
        lines = [
            "# ragtrace evaluation",
            "",
            f"- records: {self.count}",
            f"- judge: `{self.judge}`",
            f"- judge calls: {cost.calls} ({cost.chat_calls} chat, {cost.embedding_calls} embeddings)"
            + (f", {cost.calls / self.count:.2f} per record" if self.count else ""),
            f"- tokens: {cost.prompt_tokens} prompt, {cost.completion_tokens} completion",
            f"- wall time: {self.seconds:.1f} s",
            f"- overall (mean goodness per record): {_spread([r.overall for r in self.records])}",
            "",
            "| metric | better | measured | mean | min | max | absent (reason: count) |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in self.summary.values():
            absent = ", ".join(_absent_cell(reason, n, s) for reason, n in sorted(s.absent.items())) or "-"
            lines.append(
                f"| {s.name} | {s.direction} | {s.measured}/{s.total} | {_num(s.mean)} | {_num(s.minimum)} "
                f"| {_num(s.maximum)} | {absent} |"
            )
        bad = self.worst(worst, threshold)
        lines += ["", f"## Worst records (a metric below {threshold:g}, direction-aware)", ""]
        if not bad:
            lines.append("None.")
        else:
            lines += ["| # | query | overall | issues |", "|---|---|---|---|"]
            for r in bad:
                issues = ", ".join(f"{s.name} {_num(s.value)}" for s in r.issues(threshold))
                lines.append(f"| {r.index} | {_cell(r.record.query)} | {_num(r.overall)} | {issues} |")
        return "\n".join(lines) + "\n"


def _failed(score: Score) -> bool:
    return not score.ok and score.status == "error"


def _absent_cell(reason: str, count: int, summary: MetricSummary) -> str:
    # A judge error says what broke: "judge_error: 3 (connection)", or with several kinds
    # "judge_error: 3 (connection: 2, timeout: 1)". Other reasons say it themselves.
    kinds = summary.errors if reason == REASON_JUDGE_ERROR else {}
    if not kinds:
        return f"{reason}: {count}"
    if len(kinds) == 1:
        return f"{reason}: {count} ({next(iter(kinds))})"
    return f"{reason}: {count} ({', '.join(f'{kind}: {n}' for kind, n in kinds.items())})"


def _spread(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "-"
    return f"mean {math.fsum(known) / len(known):.3f}, min {min(known):.3f}, max {max(known):.3f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cell(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _summarise(name: str, direction: Direction, scores: Sequence[Score]) -> MetricSummary:
    values = [s.value for s in scores if s.ok and s.value is not None]
    reasons = Counter(s.reason or s.status for s in scores if not s.ok)
    errors = Counter(s.error_type or "unknown" for s in scores if not s.ok and s.reason == REASON_JUDGE_ERROR)
    return MetricSummary(
        name=name,
        direction=direction,
        measured=len(values),
        total=len(scores),
        mean=math.fsum(values) / len(values) if values else None,
        minimum=min(values) if values else None,
        maximum=max(values) if values else None,
        absent=MappingProxyType(dict(reasons)),
        errors=MappingProxyType(dict(errors.most_common())),
    )


# --------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------


async def _default_judge() -> Judge:
    try:
        from ragtrace.judges._default import default_judge
    except ModuleNotFoundError:
        raise ConfigurationError(
            "evaluate needs a judge: pass judge=OpenAIJudge(...) (or any ragtrace.judges.Judge)"
        ) from None
    judge: Any = default_judge()
    if inspect.isawaitable(judge):
        judge = await judge
    return judge  # type: ignore[no-any-return]


async def aevaluate(
    records: Records,
    metrics: Metrics = None,
    judge: Judge | None = None,
    concurrency: int = 8,
    progress: bool = True,
    fields: Mapping[str, str] | None = None,
) -> EvaluationResult:
    """Score every record; see ``evaluate``."""
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency={concurrency!r}: give a whole number >= 1 (default 8)")
    suite = metrics if isinstance(metrics, Suite) else build_suite(metrics)
    items = _as_records(records, fields)
    own_judge = judge is None
    active = await _default_judge() if judge is None else judge
    started = time.perf_counter()
    limit = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(items), disable=not progress, desc="ragtrace eval", unit="record", leave=False)

    async def one(index: int, record: RagRecord) -> RecordResult:
        async with limit:
            result = await suite.score(record, active)
        bar.update(1)
        return RecordResult(index=index, record=record, result=result)

    try:
        results = await asyncio.gather(*(one(i, r) for i, r in enumerate(items)))
    finally:
        bar.close()
        if own_judge:
            await active.aclose()
    summary = {
        m.name: _summarise(m.name, m.direction, [r.result.scores[m.name] for r in results]) for m in suite.metrics
    }
    return EvaluationResult(
        records=tuple(results),
        metrics=suite.names,
        summary=MappingProxyType(summary),
        cost=sum((r.result.cost for r in results), ZERO_COST),
        judge=active.name,
        seconds=time.perf_counter() - started,
    )


def evaluate(
    records: Records,
    metrics: Metrics = None,
    judge: Judge | None = None,
    concurrency: int = 8,
    progress: bool = True,
    fields: Mapping[str, str] | None = None,
) -> EvaluationResult:
    """Score RAG records offline with a suite of metrics and aggregate the results.

    ``records``: ``RagRecord`` values, dicts, or a JSONL path. ``metrics``: names (a list or ``"a,b"``),
    metric instances or a ``Suite``; default the production suite. ``judge``: default
    ``ragtrace.judges._default.default_judge()`` (chosen by ``RAGTRACE_JUDGE``), closed afterwards;
    a judge you pass stays open. At most ``concurrency`` records are scored at once; ``progress``
    shows a progress bar on stderr. Call ``aevaluate`` from inside an event loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: the normal case
    else:
        raise RuntimeError("evaluate() was called inside a running event loop: use 'await ragtrace.aevaluate(...)'")
    # Outside the except block, so that an error of the run (a missing file, an unknown metric) shows
    # alone, not as "during handling of RuntimeError: no running event loop".
    return asyncio.run(aevaluate(records, metrics, judge, concurrency, progress, fields))
