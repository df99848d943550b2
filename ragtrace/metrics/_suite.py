"""A Suite scores one record with many metrics, sharing the judge's work between them.

``Suite.score`` wraps the judge in a per-record memoizing proxy (same step, same arguments: one
call; concurrent callers await the same call) and runs the metrics concurrently. The answer's claims
are extracted once, all claims x all chunks verified in one call, reference claims extracted once,
and so on; with a judge that rates the chunks in its verification call, context relevance is read
there too. Each ``Score.cost`` counts the steps that metric used; ``SuiteResult.cost`` counts the
unique calls, i.e. what the record really cost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from ragtrace._exceptions import ConfigurationError
from ragtrace._secrets import scrub
from ragtrace.judges._capabilities import RATE_CHUNKS, VERIFY
from ragtrace.metrics._base import REASON_JUDGE_ERROR, ZERO_COST, Cost, Metric, Score
from ragtrace.metrics._memo import MemoJudge

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

_log = logging.getLogger("ragtrace.metrics")


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """One record's scores by metric name, what the unique judge calls cost, who judged, and wall time."""

    scores: Mapping[str, Score]
    cost: Cost = ZERO_COST
    judge: str = ""
    seconds: float = 0.0
    calls: int = field(default=0)
    """Unique judge calls made (equals ``cost.calls`` for a judge that reports its calls)."""

    def value(self, name: str) -> float | None:
        """The metric's value, or None when absent or not in the suite."""
        score = self.scores.get(name)
        return None if score is None else score.value


class Suite:
    """Metrics scored together on one judge; see the module docstring. Metric names must be unique."""

    def __init__(self, metrics: Iterable[Metric]) -> None:
        self.metrics: tuple[Metric, ...] = tuple(metrics)
        if not self.metrics:
            raise ConfigurationError("a Suite needs at least one metric, e.g. Suite([Faithfulness()])")
        names = [m.name for m in self.metrics]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"metric names must be unique in a Suite: {duplicates} appear twice")

    @property
    def names(self) -> tuple[str, ...]:
        """The metrics' names, in order."""
        return tuple(m.name for m in self.metrics)

    @property
    def capabilities(self) -> frozenset[str]:
        """Every judge step some metric of the suite may call."""
        return frozenset().union(*(m.capabilities for m in self.metrics))

    def __repr__(self) -> str:
        return f"Suite({list(self.names)!r})"

    async def score(self, record: RagRecord, judge: Judge) -> SuiteResult:
        """Score the record with every metric. Never raises for judge failures: those are absent scores."""
        started = time.perf_counter()
        # The question goes with verification when one metric verifies and another rates the chunks: a judge
        # that rates them in that call answers both in one (``MemoJudge.relevance_in_verify``).
        memo = MemoJudge(
            judge,
            question=record.query,
            shared_ratings={VERIFY, RATE_CHUNKS} <= self.capabilities,
            chunks=len(record.texts),
        )
        try:
            scores = await asyncio.gather(*(_guarded(m, record, memo) for m in self.metrics))
        finally:
            memo.close()
        return SuiteResult(
            scores=MappingProxyType({m.name: s for m, s in zip(self.metrics, scores, strict=True)}),
            cost=memo.cost,
            judge=judge.name,
            seconds=time.perf_counter() - started,
            calls=memo.calls,
        )


async def _guarded(metric: Metric, record: RagRecord, judge: Judge) -> Score:
    # Built-in metrics never raise; a user's metric might, and must not sink the others.
    try:
        return await metric.score(record, judge)
    except Exception as err:
        _log.warning("metric %s raised", metric.name, exc_info=True)
        return Score.absent(
            metric.name,
            "error",
            REASON_JUDGE_ERROR,
            direction=metric.direction,
            explanation=scrub(f"{type(err).__name__}: {err}"),  # a user's message may quote a URL or a key
            error_type=type(err).__name__,
        )
