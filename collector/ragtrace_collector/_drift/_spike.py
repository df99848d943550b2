"""Spike: a Bernoulli CUSUM on "bad" records against a baseline rate learnt from history.

It answers "has the rate gone up?" within a few dozen records while staying quiet on a stable stream (see
``bench/drift_detection.py`` for the measured delay and false alarms).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragtrace_collector._drift._states import ALERT, NO_DATA, OK, WARNING, Direction, Evaluation, State


def bad_events(values: Iterable[float], *, direction: Direction, cutoff: float) -> list[bool]:
    """Turn scores into events: True when a record is bad (above ``cutoff`` for lower-is-better metrics,
    below it for higher-is-better ones). ``hallucination > 0.5``: the judge expects more than half the
    answer's claims unsupported (claims weigh by support probability, so a grounded answer scores about
    0.1-0.3, not 0)."""
    if direction == "lower":
        return [v > cutoff for v in values]
    return [v < cutoff for v in values]


@dataclass(frozen=True, slots=True)
class CusumDesign:
    """A Bernoulli CUSUM tuned to detect a rate going from ``p0`` to ``p1``.

    Each record adds ``log(p1/p0)`` when bad and ``log((1-p1)/(1-p0))`` when good; the statistic is
    floored at 0. It raises ``ALERT`` at ``h`` and ``WARNING`` at ``warning_h``; once in ``ALERT`` it
    stays there until the statistic falls below ``warning_h`` (hysteresis, so one spike is one alarm).
    """

    p0: float
    p1: float
    h: float
    warning_h: float

    def __post_init__(self) -> None:
        if not 0.0 < self.p0 < self.p1 < 1.0:
            raise ValueError(f"need 0 < p0 < p1 < 1, got p0={self.p0}, p1={self.p1}")
        if not 0.0 < self.warning_h <= self.h:
            raise ValueError(f"need 0 < warning_h <= h, got warning_h={self.warning_h}, h={self.h}")

    @property
    def up(self) -> float:
        """Increment of the statistic on a bad record."""
        return math.log(self.p1 / self.p0)

    @property
    def down(self) -> float:
        """Increment (negative) of the statistic on a good record."""
        return math.log((1.0 - self.p1) / (1.0 - self.p0))

    @classmethod
    def from_baseline(
        cls,
        baseline_rate: float,
        *,
        shift: float = 4.0,
        h: float = 8.0,
        warning_h: float | None = None,
        min_rate: float = 0.01,
    ) -> CusumDesign:
        """Design the chart for a baseline rate: ``p0`` = the rate floored at ``min_rate`` (a perfect
        history would otherwise make a single bad record an alarm) and ``p1 = shift * p0`` capped
        below 1."""
        p0 = min(max(baseline_rate, min_rate), 0.5)
        p1 = min(shift * p0, 0.5 * (1.0 + p0))
        return cls(p0=p0, p1=p1, h=h, warning_h=h / 2 if warning_h is None else warning_h)


def learn_rate(events: Sequence[bool]) -> float:
    """Estimate a Bernoulli rate from history with the Jeffreys prior, ``(k + 0.5) / (n + 1)``,
    so that a short clean history does not estimate a rate of exactly 0."""
    return learn_rate_from_counts(sum(events), len(events))


def learn_rate_from_counts(bad: int, total: int) -> float:
    """``learn_rate`` from counts: ``(bad + 0.5) / (total + 1)``."""
    return (bad + 0.5) / (total + 1.0)


def classify(statistic: float, *, alert: float, warning: float, previous: str | None) -> State:
    """State for a statistic where larger is worse, with hysteresis: an ``ALERT`` holds until the
    statistic drops below ``warning``."""
    if statistic >= alert or (previous == ALERT and statistic >= warning):
        return ALERT
    if statistic >= warning:
        return WARNING
    return OK


class BernoulliCusum:
    """The sequential form of the spike detector: feed one event at a time, read the state.

    ``state`` follows ``classify`` with hysteresis, exactly as the watcher does over a window, so the
    benchmark measures what the watcher raises.
    """

    def __init__(self, design: CusumDesign) -> None:
        self.design = design
        self.statistic = 0.0
        self.state: State = OK

    def update(self, bad: bool) -> State:
        """Add one record and return the new state."""
        step = self.design.up if bad else self.design.down
        self.statistic = max(0.0, self.statistic + step)
        self.state = classify(self.statistic, alert=self.design.h, warning=self.design.warning_h, previous=self.state)
        return self.state


def cusum_statistic(events: Sequence[bool], design: CusumDesign) -> float:
    """The CUSUM statistic after ``events`` (in time order), starting from 0.

    Over a sliding window this is the largest log-likelihood ratio of any suffix of the window, so it
    never exceeds the statistic of a chart that ran since the beginning of time.
    """
    statistic = 0.0
    up, down = design.up, design.down
    for bad in events:
        statistic = max(0.0, statistic + (up if bad else down))
    return statistic


def spike_state(
    recent: Sequence[bool],
    *,
    baseline: Sequence[bool] | None = None,
    baseline_counts: tuple[int, int] | None = None,
    baseline_rate: float | None = None,
    shift: float = 4.0,
    h: float = 8.0,
    warning_h: float | None = None,
    min_rate: float = 0.01,
    min_count: int = 20,
    min_baseline: int = 200,
    previous: str | None = None,
) -> Evaluation:
    """Spike detection on the recent window's events (time order) against a baseline.

    The baseline rate is ``baseline_rate`` when given, else learnt from the ``baseline`` events or
    from ``baseline_counts`` = (bad, total) when only counts are at hand; fewer than ``min_baseline``
    baseline records (and no fixed rate) or fewer than ``min_count`` recent events give ``NO_DATA``.
    ``previous`` is the rule's last state, for hysteresis.
    """
    n = len(recent)
    if baseline_counts is None and baseline is not None:
        baseline_counts = (sum(baseline), len(baseline))
    n_base = baseline_counts[1] if baseline_counts is not None else 0
    if baseline_rate is None:
        if baseline_counts is None or n_base < min_baseline:
            return Evaluation(NO_DATA, None, h, n, f"baseline has {n_base} scored records, need {min_baseline}", n_base)
        baseline_rate = learn_rate_from_counts(*baseline_counts)
    if n < min_count:
        return Evaluation(NO_DATA, None, h, n, f"{n} scored records, need {min_count}", n_base)
    design = CusumDesign.from_baseline(baseline_rate, shift=shift, h=h, warning_h=warning_h, min_rate=min_rate)
    statistic = cusum_statistic(recent, design)
    state = classify(statistic, alert=design.h, warning=design.warning_h, previous=previous)
    rate = sum(recent) / n
    message = (
        f"bad rate {rate:.1%} over the last {n} records vs baseline {baseline_rate:.1%}; "
        f"CUSUM {statistic:.2f} (alert at {design.h:g})"
    )
    return Evaluation(state, statistic, design.h, n, message, n_base)
