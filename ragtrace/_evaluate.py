"""Offline evaluation: score a list or a JSONL file of RAG records (golden sets, replays) with a suite.

``ragtrace.evaluate(records, metrics=None, judge=None, concurrency=8, progress=True)`` returns an
``EvaluationResult``: the ``SuiteResult`` of every record, a per-metric summary (measured count,
mean, min, max, why the rest are absent), the worst records and the total judge cost, with
``to_markdown()`` (all in ``_evaluation_result.py``). ``aevaluate`` is the same coroutine for callers
already inside an event loop.

Records are ``RagRecord`` values, dicts in the shape ``RagRecord.from_dict`` reads, or a path to a
JSONL file of such dicts. ``fields`` renames keys first, e.g. ``{"answer": "hallucinated_answer",
"chunks": "knowledge"}`` for a data set with its own names. Reading a file is ``_eval_input``'s job: a
bad line is a ``ValueError`` reading ``FILE:LINE:COLUMN: what is wrong``, or with ``strict=False`` it
is skipped and listed in the result's ``skipped`` and in the report; nothing is skipped silently.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from tqdm import tqdm

from ragtrace._eval_input import BadLine, JsonlRecords, read_jsonl, renamed
from ragtrace._evaluation_result import EvaluationResult, MetricSummary, RecordResult, summarise
from ragtrace._exceptions import ConfigurationError
from ragtrace._record import RagRecord
from ragtrace.judges._base import Judge
from ragtrace.metrics._base import ZERO_COST, Metric
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

Records = str | os.PathLike[str] | JsonlRecords | Iterable[RagRecord | Mapping[str, Any]]
Metrics = str | Suite | Iterable[str | Metric] | None


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_records(
    path: str | os.PathLike[str], fields: Mapping[str, str] | None = None, *, strict: bool = True
) -> list[RagRecord]:
    """Read a JSONL file of records (``read_jsonl`` in ``_eval_input`` has the rules); blank lines are skipped.

    The file is UTF-8 (a byte-order mark at its start is allowed). With ``strict`` (the default) a line
    that is not UTF-8, not a JSON object or not a record raises ``ValueError`` reading
    ``FILE:LINE:COLUMN: what is wrong``; with ``strict=False`` such lines are left out (``read_jsonl``
    says which).
    """
    return list(read_jsonl(path, fields, strict=strict).records)


def _as_records(
    records: Records, fields: Mapping[str, str] | None, strict: bool
) -> tuple[list[RagRecord], list[int | None], tuple[BadLine, ...]]:
    """The records, the file line of each (None when not read from a file), and the lines skipped."""
    if isinstance(records, (str, os.PathLike)):
        records = read_jsonl(records, fields, strict=strict)
    elif isinstance(records, JsonlRecords) and fields:
        raise ConfigurationError("fields= is applied when the file is read: pass it to read_jsonl, not here")
    if isinstance(records, JsonlRecords):
        return list(records.records), list(records.lines), records.skipped
    out: list[RagRecord] = []
    for index, item in enumerate(records):
        if isinstance(item, RagRecord):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(RagRecord.from_dict(renamed(item, fields)))
            except (ValueError, TypeError) as err:
                raise ValueError(f"record {index}: {err}") from None
        else:
            raise TypeError(f"record {index}: expected a RagRecord or a dict, got {type(item).__name__}")
    return out, [None] * len(out), ()


# --------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------


CONNECTION_ERROR = "connection"
"""The ``error_type`` of a judge step that could not reach the judge at all (``OpenAIJudge`` gives it
when its endpoint refuses or drops the connection, after its retries)."""


class _Breaker:
    """Trips when ``limit`` records in a row could not reach the judge; None never trips.

    A record counts when some score failed with ``CONNECTION_ERROR`` and no score was measured; any
    other record (scored, or failed for another reason) starts the count again.
    """

    def __init__(self, limit: int | None) -> None:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ConfigurationError(
                f"max_connection_errors={limit!r}: give a whole number >= 1, or None to never stop"
            )
        self.limit = limit
        self.streak = 0
        self.reason: str | None = None

    def trips(self, result: SuiteResult) -> bool:
        """Count one scored record; True only for the record that trips the breaker."""
        if self.limit is None or self.reason is not None:
            return False
        scores = result.scores.values()
        unreachable = [s for s in scores if s.error_type == CONNECTION_ERROR]
        if not unreachable or any(s.ok for s in scores):
            self.streak = 0
            return False
        self.streak += 1
        if self.streak < self.limit:
            return False
        self.reason = (
            f"{self.streak} records in a row could not reach the judge "
            f"({unreachable[0].explanation or CONNECTION_ERROR})"
        )
        return True


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
    *,
    strict: bool = True,
    max_connection_errors: int | None = None,
) -> EvaluationResult:
    """Score every record; see ``evaluate``."""
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency={concurrency!r}: give a whole number >= 1 (default 8)")
    breaker = _Breaker(max_connection_errors)
    suite = metrics if isinstance(metrics, Suite) else build_suite(metrics)
    items, lines, skipped = _as_records(records, fields, strict)
    own_judge = judge is None
    active = await _default_judge() if judge is None else judge
    started = time.perf_counter()
    limit = asyncio.Semaphore(concurrency)
    bar = tqdm(total=len(items), disable=not progress, desc="ragtrace eval", unit="record", leave=False)

    tasks: list[asyncio.Future[RecordResult]] = []
    failure: Exception | None = None

    def cancel_the_others() -> None:
        # Synchronously, from the task that decided: a record the semaphore has just woken is
        # cancelled before it starts, so nothing more is sent to the judge.
        current = asyncio.current_task()
        for task in tasks:
            if task is not current:
                task.cancel()

    async def one(index: int, record: RagRecord) -> RecordResult:
        nonlocal failure
        try:
            async with limit:
                result = await suite.score(record, active)
            bar.update(1)
            if breaker.trips(result):
                # The judge is unreachable: every record still waiting or in flight would spend its
                # retries and backoff learning the same thing.
                cancel_the_others()
            return RecordResult(index=index, record=record, result=result, line=lines[index])
        except Exception as err:
            # Not a judge error (those are absent scores) but a bug: fail fast, as a plain loop
            # would, instead of paying the judge for every other record and then discarding them.
            if failure is None:
                failure = err
                cancel_the_others()
            raise

    try:
        tasks.extend(asyncio.ensure_future(one(i, r)) for i, r in enumerate(items))
        # Every task ends promptly once one fails or the breaker trips (the others are cancelled);
        # waiting for them all lets the cancelled ones finish before the judge is closed.
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        bar.close()
        if own_judge:
            await active.aclose()
    if failure is not None:
        raise failure  # the first one: the others' errors and cancellations follow from it
    results: list[RecordResult] = []
    for outcome in outcomes:
        if isinstance(outcome, RecordResult):
            results.append(outcome)
        elif not (isinstance(outcome, asyncio.CancelledError) and breaker.reason):
            raise outcome  # not ours to hide (the breaker's cancellations are the only expected ones)
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
        skipped=skipped,
        not_scored=len(items) - len(results),
        stopped=breaker.reason,
    )


def evaluate(
    records: Records,
    metrics: Metrics = None,
    judge: Judge | None = None,
    concurrency: int = 8,
    progress: bool = True,
    fields: Mapping[str, str] | None = None,
    *,
    strict: bool = True,
    max_connection_errors: int | None = None,
) -> EvaluationResult:
    """Score RAG records offline with a suite of metrics and aggregate the results.

    ``records``: ``RagRecord`` values, dicts, or a JSONL path. ``metrics``: names (a list or ``"a,b"``),
    metric instances or a ``Suite``; default the production suite. ``judge``: default
    ``ragtrace.judges._default.default_judge()`` (chosen by ``RAGTRACE_JUDGE``), closed afterwards;
    a judge you pass stays open. At most ``concurrency`` records are scored at once; ``progress``
    shows a progress bar on stderr. Call ``aevaluate`` from inside an event loop.

    A JSONL path is read with ``strict`` (the default): a bad line raises ``ValueError`` reading
    ``FILE:LINE:COLUMN: what is wrong``. With ``strict=False`` bad lines are skipped and listed in
    ``result.skipped`` (and in the report). ``records`` may also be what ``_eval_input.read_jsonl``
    returned. Each ``RecordResult.line`` is the record's line in the file (blank lines counted).

    ``max_connection_errors``: stop after that many records in a row could not reach the judge (every
    failed score a ``connection`` error, none measured): the records not scored yet are cancelled,
    ``result.stopped`` says why (with the judge's message, which names its URL) and
    ``result.not_scored`` how many were left. None (the default) scores every record whatever happens.

    An exception that is not a judge error (a bug in a metric or suite that escapes ``Suite.score``)
    stops the run at once: the records in flight or waiting are cancelled, unscored, and it is raised.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: the normal case
    else:
        raise RuntimeError("evaluate() was called inside a running event loop: use 'await ragtrace.aevaluate(...)'")
    # Outside the except block, so that an error of the run (a missing file, an unknown metric) shows
    # alone, not as "during handling of RuntimeError: no running event loop".
    return asyncio.run(
        aevaluate(
            records,
            metrics,
            judge,
            concurrency,
            progress,
            fields,
            strict=strict,
            max_connection_errors=max_connection_errors,
        )
    )
