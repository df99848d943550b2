"""The states a rule can be in, which way is better for a metric, and what one evaluation says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

# Which way is better is the metric classes' to say (``Metric.direction``); the registry collects it.
from ragtrace.metrics import LOWER_IS_BETTER, Direction

__all__ = [
    "ALERT",
    "LOWER_IS_BETTER",
    "NO_DATA",
    "OK",
    "STATES",
    "WARNING",
    "Direction",
    "Evaluation",
    "State",
    "goodness",
    "metric_direction",
]

State = Literal["OK", "WARNING", "ALERT", "NO_DATA"]
"""The state of one rule for one service/route."""

OK: Final = "OK"
WARNING: Final = "WARNING"
ALERT: Final = "ALERT"
NO_DATA: Final = "NO_DATA"
STATES: Final = (OK, WARNING, ALERT, NO_DATA)


def metric_direction(metric: str) -> Direction:
    """Return which way is better for ``metric``: ``lower`` for hallucination-like metrics, else ``higher``."""
    return "lower" if metric in LOWER_IS_BETTER else "higher"


def goodness(metric: str, value: float) -> float:
    """Map a score onto "higher is better": ``1 - value`` for lower-is-better metrics, else ``value``."""
    return 1.0 - value if metric_direction(metric) == "lower" else value


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What one detector concluded about one window.

    ``value`` is the statistic compared (the window mean, the CUSUM statistic, the PSI or the KS
    p-value) and ``threshold`` the level that raises ``ALERT``; both are ``None`` under ``NO_DATA``
    when nothing could be computed. ``count`` is the number of scored records in the recent window
    and ``baseline_count`` in the baseline window (0 when the detector has none).
    """

    state: State
    value: float | None
    threshold: float | None
    count: int
    message: str
    baseline_count: int = 0
