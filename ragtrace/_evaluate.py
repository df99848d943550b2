"""Offline evaluation: score a list or a JSONL file of RAG records (golden sets, replays) with a suite.

``ragtrace.evaluate(records, metrics=None, judge=None, concurrency=8, progress=True)`` returns an
``EvaluationResult``: the ``SuiteResult`` of every record, a per-metric summary (measured count,
mean, min, max, why the rest are absent), the worst records and the total judge cost, with
``to_markdown()`` (all in ``_evaluation_result.py``). ``aevaluate`` is the same coroutine for callers
already inside an event loop.

Records are ``RagRecord`` values, dicts in the shape ``RagRecord.from_dict`` reads, or a path to a
JSONL file of such dicts. ``fields`` renames keys first, e.g. ``{"answer": "hallucinated_answer",
"chunks": "knowledge"}`` for a data set with its own names. A bad line is a ``ValueError`` naming the
file and line number; nothing is skipped silently.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tqdm import tqdm

from ragtrace._evaluation_result import EvaluationResult, MetricSummary, RecordResult, summarise
from ragtrace._exceptions import ConfigurationError
from ragtrace._record import RagRecord
from ragtrace.judges._base import Judge
from ragtrace.metrics._base import ZERO_COST, Metric
from ragtrace.metrics._registry import build_suite
from ragtrace.metrics._suite import Suite

__all__ = [
    "EvaluationResult",
    "MetricSummary",
    "RecordResult",
    "aevaluate",
    "evaluate",
    "load_records",
]

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
        m.name: summarise(m.name, m.direction, [r.result.scores[m.name] for r in results]) for m in suite.metrics
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
