"""Degenerate judging made visible: a judge step whose results stop varying.

A judge that answers every record the same way (every claim unsupported, every chunk rated 0.5) gives
scores that look normal one by one: measured with a small local model, ``ragtrace eval`` reported
faithfulness 0.000 and context relevance 0.500 on every record and exited 0. Each record's result of a
step is summarised as one number (the share of supported claims, the mean chunk rating, ...) and
watched per (judge, step) over a window of records: when a full window holds one value only, the
window counts as degenerate. Then

- a WARNING on logger ``ragtrace`` names the judge, the step and the value, at most once per
  ``interval`` seconds per (judge, step);
- the OpenTelemetry counter ``ragtrace.judge.degenerate`` (``semconv.METRIC_JUDGE_DEGENERATE``) goes
  up by one, with attributes ``ragtrace.eval.judge`` and ``ragtrace.judge.step``, so an alert can fire.

The window then starts over. A healthy app whose answers are all grounded gives every claim supported
record after record (the offline judge with its support model did, for 84 records of the demo's healthy
phase), so a window of "all supported" or "all relevant" (``ALL_GOOD``) is not flagged: constancy there
is what a good app looks like, not a stuck judge. Every other constant window is.

``watch()`` is called by the per-record memoizing judge (``metrics/_memo.py``) for every step a suite
runs, so every judge is watched, whoever wrote it.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import metrics as metrics_api

from ragtrace import semconv
from ragtrace._rate_limit import Every
from ragtrace.judges._base import GEvalRating, Rating, Verdict

_logger = logging.getLogger("ragtrace")

DEFAULT_WINDOW = 50
"""Records per window."""
DEFAULT_INTERVAL = 600.0
"""Seconds between two warnings for the same judge and step."""
ALL_GOOD = {"verify": 1.0, "support": 1.0, "classify_claims": 1.0, "rate_statements": 1.0}
"""Per step, the summary a healthy app can give on every record (every claim supported, every statement
relevant): a window of it alone is not degenerate."""


def summary(step: str, value: Any) -> float | None:
    """One number per step result (None: nothing to watch, e.g. claims or embeddings)."""
    if step in ("verify", "support") and isinstance(value, list) and value:
        if step == "verify":
            return sum(any(v is Verdict.SUPPORTED for v in row) for row in value) / len(value)
        return float(sum(max(row) for row in value if row)) / len(value)
    if step in ("rate_chunks", "classify_claims", "rate_statements") and isinstance(value, list) and value:
        return sum(float(v) for v in value) / len(value)
    if isinstance(value, Rating):
        return float(value.value)
    if isinstance(value, GEvalRating):
        return float(value.score)
    return None


class DegenerateMonitor:
    """Watches step results per (judge, step); thread-safe. See the module docstring."""

    def __init__(
        self,
        *,
        window: int = DEFAULT_WINDOW,
        interval: float = DEFAULT_INTERVAL,
        meter_provider: metrics_api.MeterProvider | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if window < 2:
            raise ValueError(f"window={window}: watch at least 2 records")
        self.window = window
        self.interval = interval
        self._meter_provider = meter_provider
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], collections.deque[float]] = {}
        self._warnings = Every(interval, clock)
        self._counters: dict[int, Any] = {}
        self.degenerate: dict[tuple[str, str], int] = collections.Counter()
        """Degenerate windows seen, by (judge, step)."""

    def observe(self, judge: str, step: str, value: float) -> bool:
        """Add one record's result; True when it completed a degenerate window."""
        if not math.isfinite(value):
            return False
        key = (judge, step)
        with self._lock:
            values = self._values.setdefault(key, collections.deque(maxlen=self.window))
            values.append(value)
            if len(values) < self.window or max(values) - min(values) > 1e-9:
                return False
            if ALL_GOOD.get(step) == value:
                return False
            values.clear()
            self.degenerate[key] += 1
            warn = self._warnings.allow(key) is not None
        self._count(judge, step)
        if warn:
            _logger.warning(
                "ragtrace: the %s judge's %s gave %.3f on each of the last %d records: its scores do not vary "
                "(a model too small for the prompt, or a reply copied from an example); check the judge "
                "before trusting these scores",
                judge,
                step,
                value,
                self.window,
            )
        return True

    def _count(self, judge: str, step: str) -> None:
        try:
            provider = self._meter_provider or metrics_api.get_meter_provider()
            counter = self._counters.get(id(provider))
            if counter is None:
                counter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE).create_counter(
                    semconv.METRIC_JUDGE_DEGENERATE,
                    unit="{window}",
                    description="Windows of records in which a judge step's results did not vary",
                )
                self._counters[id(provider)] = counter
            counter.add(1, {semconv.EVAL_JUDGE: judge, semconv.JUDGE_STEP: step})
        except Exception:
            _logger.debug("ragtrace: counting a degenerate window failed", exc_info=True)

    def reset(self) -> None:
        """Forget every window, warning time and count (tests)."""
        with self._lock:
            self._values.clear()
            self._warnings.clear()
            self.degenerate.clear()


MONITOR = DegenerateMonitor()
"""The process-wide monitor every suite reports to."""


def watch(judge: str, step: str, value: Any, monitor: DegenerateMonitor | None = None) -> None:
    """Report one step result of ``judge`` (summarised by ``summary``); never raises."""
    try:
        number = summary(step, value)
        if number is not None:
            (monitor or MONITOR).observe(judge, step, number)
    except Exception:
        _logger.debug("ragtrace: watching a judge step failed", exc_info=True)


def steps_watched() -> Sequence[str]:
    """The steps whose results are watched."""
    return ("verify", "support", "rate_chunks", "classify_claims", "rate_statements", "rate_answer", "geval_score")
