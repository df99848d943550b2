"""G-Eval: a metric named and described by the user, scored by the judge against criteria and steps.

``GEval(name="rag_fact_checker", criteria="...", params=("input", "answer", "chunks"))``. With only
criteria, the evaluation steps are generated once per (judge, criteria) and cached process-wide
(bounded, least recently used out first). The judge scores on ``score_range`` (default 1 to 5): the
probability-weighted sum over the score tokens when the endpoint returns logprobs, else the integer;
the value is normalised to (s - min) / (max - min). The label is ``pass`` when the value reaches
``threshold`` (default 0.5), else ``fail``.

Params and the keys the judge receives: ``input`` -> ``input`` (the query), ``answer`` ->
``actual_output``, ``chunks`` -> ``retrieval_context`` (chunks joined, numbered), ``reference`` ->
``expected_output``.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import GEVAL, GEvalRating
from ragtrace.metrics._base import DETAIL_FREE_TEXT, Score
from ragtrace.metrics._metric import NEEDS_CHUNKS, NEEDS_REFERENCE, JudgeMetric
from ragtrace.metrics._steps import ReplyError, Steps

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

__all__ = ["GEVAL_PARAMS", "GEval", "clear_geval_cache", "normalise"]

GEVAL_PARAMS = {
    "input": "input",
    "answer": "actual_output",
    "chunks": "retrieval_context",
    "reference": "expected_output",
}
"""The record fields a G-Eval metric can show the judge, and the key each is sent under."""

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CACHE_SIZE = 256
_steps_cache: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
_cache_lock = threading.Lock()  # the cache is process-wide; scorers may run in several threads
_in_flight: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Future[Any]]] = (
    weakref.WeakKeyDictionary()
)


def clear_geval_cache() -> None:
    """Forget every generated set of evaluation steps."""
    with _cache_lock:
        _steps_cache.clear()


def _cached(key: tuple[str, str]) -> tuple[str, ...] | None:
    with _cache_lock:
        steps = _steps_cache.get(key)
        if steps is not None:
            _steps_cache.move_to_end(key)
        return steps


def _remember(key: tuple[str, str], steps: tuple[str, ...]) -> None:
    with _cache_lock:
        _steps_cache[key] = steps
        _steps_cache.move_to_end(key)
        while len(_steps_cache) > _CACHE_SIZE:
            _steps_cache.popitem(last=False)


def normalise(score: float, score_range: tuple[int, int]) -> float:
    """(score - min) / (max - min)."""
    low, high = score_range
    return (score - low) / (high - low)


class GEval(JudgeMetric):
    """A user-defined judge metric; see the module docstring."""

    capabilities = frozenset({GEVAL})

    def __init__(
        self,
        name: str,
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        params: Iterable[str] = ("input", "answer"),
        score_range: tuple[int, int] = (1, 5),
        threshold: float = 0.5,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigurationError(
                f"GEval name {name!r}: use lower-case letters, digits and '_' (it becomes ragtrace.eval.<name>)"
            )
        steps = tuple(s.strip() for s in evaluation_steps or () if s.strip())
        if not (criteria or "").strip() and not steps:
            raise ConfigurationError(f"GEval {name!r}: give criteria=... or evaluation_steps=[...] (or both)")
        chosen = tuple(dict.fromkeys(params))
        unknown = [p for p in chosen if p not in GEVAL_PARAMS]
        if unknown or not chosen:
            raise ConfigurationError(
                f"GEval {name!r}: params {unknown or chosen!r}: choose from {sorted(GEVAL_PARAMS)}"
            )
        low, high = score_range
        if not (isinstance(low, int) and isinstance(high, int) and low < high):
            raise ConfigurationError(f"GEval {name!r}: score_range={score_range!r}: give two integers, low < high")
        self.name = name
        self.criteria = (criteria or "").strip()
        self.evaluation_steps = steps
        self.params = chosen
        self.score_range = (low, high)
        self.threshold = float(threshold)
        self.uses_query = "input" in chosen
        self.uses_answer = "answer" in chosen
        self.needs = frozenset(
            {NEEDS_CHUNKS for p in chosen if p == "chunks"} | {NEEDS_REFERENCE for p in chosen if p == "reference"}
        )

    async def _steps(self, steps: Steps, judge: Judge) -> tuple[str, ...]:
        if self.evaluation_steps:
            return self.evaluation_steps
        key = (judge.name, self.criteria)
        cached = _cached(key)
        if cached is not None:
            return cached
        # Records scored concurrently on one loop share the generation in flight: one call per criteria.
        with _cache_lock:  # the map of loops is shared by every scoring thread
            pending = _in_flight.setdefault(asyncio.get_running_loop(), {})
        task = pending.get(key)
        if task is None:
            task = asyncio.ensure_future(judge.geval_steps(self.criteria))
            pending[key] = task
            task.add_done_callback(lambda _: pending.pop(key, None))
        try:
            reply = await steps(asyncio.shield(task))
        except asyncio.CancelledError:
            if not task.cancelled():
                raise  # we are the ones being cancelled
            # The shared call was cancelled with the record that started it, not with us: ask ourselves.
            reply = await steps(judge.geval_steps(self.criteria))
        if not isinstance(reply, (list, tuple)) or not all(isinstance(s, str) for s in reply):
            raise ReplyError("expected the evaluation steps as a list of strings")
        generated = tuple(s.strip() for s in reply if s.strip())
        if not generated:
            raise ReplyError("the judge generated no evaluation step")
        _remember(key, generated)
        return generated

    def _params(self, record: RagRecord) -> dict[str, str]:
        values = {
            "input": record.query,
            "answer": record.answer,
            "chunks": "\n\n".join(f"[{i + 1}] {text}" for i, text in enumerate(record.texts)),
            "reference": record.reference or "",
        }
        return {GEVAL_PARAMS[p]: values[p] for p in self.params}

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        eval_steps = await self._steps(steps, steps.judge)
        rating = await steps(
            steps.judge.geval_score(self.criteria, list(eval_steps), self._params(record), self.score_range)
        )
        if not isinstance(rating, GEvalRating) or isinstance(rating.score, bool):
            raise ReplyError("expected a GEvalRating")
        low, high = self.score_range
        raw = float(rating.score)
        if not math.isfinite(raw) or not low <= raw <= high:
            raise ReplyError(f"G-Eval score {rating.score!r} is outside {low}..{high}")
        value = normalise(raw, self.score_range)
        return self.measured(
            value,
            steps,
            label="pass" if value >= self.threshold else "fail",
            explanation=rating.explanation or None,
            details={"raw_score": raw, "weighted": rating.weighted, "steps": list(eval_steps), DETAIL_FREE_TEXT: True},
        )
