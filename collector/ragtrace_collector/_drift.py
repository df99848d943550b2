"""Drift detection over score streams: pure functions, no I/O, no clock.

Three detectors, each turning windows of scores into an ``Evaluation`` with a state:

* threshold: the mean of a metric over a window against a fixed level (``mean faithfulness < 0.7``);
* spike: a Bernoulli CUSUM on "bad" records (e.g. ``hallucination > 0``) against a baseline rate
  learnt from history; it answers "has the rate gone up?" within a few dozen records while staying
  quiet on a stable stream (see ``bench/drift_detection.py`` for the measured delay and false alarms);
* drift: the distribution of a metric in a recent window against a baseline window, by the
  population stability index (PSI) or the two-sample Kolmogorov-Smirnov test.

States are ``OK``, ``WARNING``, ``ALERT`` and ``NO_DATA``. A window with too few scored records is
``NO_DATA``, never ``OK``: "not measured" must not read as "fine".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

# Which way is better is the metric classes' to say (``Metric.direction``); the registry collects it.
from ragtrace.metrics._base import Direction
from ragtrace.metrics._registry import LOWER_IS_BETTER

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


# --------------------------------------------------------------------------------------------------
# Threshold
# --------------------------------------------------------------------------------------------------


def threshold_state(
    values: Sequence[float],
    *,
    threshold: float,
    direction: Direction,
    warning: float | None = None,
    min_count: int = 20,
    previous: str | None = None,
) -> Evaluation:
    """Compare the mean of ``values`` with ``threshold`` on the bad side given by ``direction``.

    For a higher-is-better metric the state is ``ALERT`` when the mean is below ``threshold`` and
    ``WARNING`` when below ``warning``; for a lower-is-better metric, above. With a ``warning`` level,
    an ``ALERT`` (``previous``) holds until the mean is back past it, so a mean hovering at the
    threshold does not flap. Fewer than ``min_count`` values give ``NO_DATA``.
    """
    n = len(values)
    if n < min_count or n == 0:
        return Evaluation(NO_DATA, None, threshold, n, f"{n} scored records, need {min_count}")
    mean = math.fsum(values) / n
    if direction == "higher":
        bad, worse = mean < threshold, "below"
        warn = warning is not None and mean < warning
    else:
        bad, worse = mean > threshold, "above"
        warn = warning is not None and mean > warning
    if bad or (warn and previous == ALERT):
        return Evaluation(ALERT, mean, threshold, n, f"mean {mean:.3f} over {n} records is {worse} {threshold:g}")
    if warn:
        assert warning is not None
        return Evaluation(WARNING, mean, threshold, n, f"mean {mean:.3f} over {n} records is {worse} {warning:g}")
    return Evaluation(OK, mean, threshold, n, f"mean {mean:.3f} over {n} records")


# --------------------------------------------------------------------------------------------------
# Spike: Bernoulli CUSUM
# --------------------------------------------------------------------------------------------------


def bad_events(values: Iterable[float], *, direction: Direction, cutoff: float) -> list[bool]:
    """Turn scores into events: True when a record is bad (above ``cutoff`` for lower-is-better metrics,
    below it for higher-is-better ones). ``hallucination > 0`` is the hallucinated label of metrics.md."""
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


# --------------------------------------------------------------------------------------------------
# Distribution drift
# --------------------------------------------------------------------------------------------------


def psi(recent: Sequence[float], baseline: Sequence[float], *, bins: int = 10, floor: float = 1e-4) -> float:
    """Population stability index of ``recent`` against ``baseline``: sum of ``(r - b) * ln(r / b)``
    over equal-width bins spanning [0, 1] (widened to cover every value), proportions floored at
    ``floor`` so an empty bin does not give infinity. Equal-width rather than quantile bins because
    scores pile up on a few values (1.0, 0.0) and quantile edges would collapse."""
    if not recent or not baseline:
        raise ValueError("psi needs two non-empty samples")
    r = np.asarray(recent, dtype=float)
    b = np.asarray(baseline, dtype=float)
    lo = min(0.0, float(r.min()), float(b.min()))
    hi = max(1.0, float(r.max()), float(b.max()))
    edges = np.linspace(lo, hi, bins + 1)
    rp = np.maximum(np.histogram(r, bins=edges)[0] / r.size, floor)
    bp = np.maximum(np.histogram(b, bins=edges)[0] / b.size, floor)
    return float(np.sum((rp - bp) * np.log(rp / bp)))


def ks_2samp(recent: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov test: the statistic D and its asymptotic p-value.

    The p-value uses the Kolmogorov distribution with Stephens' small-sample correction; with tied
    values (scores are often discrete) it is conservative, i.e. it errs towards no drift.
    """
    if not recent or not baseline:
        raise ValueError("ks_2samp needs two non-empty samples")
    r = np.sort(np.asarray(recent, dtype=float))
    b = np.sort(np.asarray(baseline, dtype=float))
    grid = np.concatenate([r, b])
    cdf_r = np.searchsorted(r, grid, side="right") / r.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    d = float(np.max(np.abs(cdf_r - cdf_b)))
    ne = r.size * b.size / (r.size + b.size)
    lam = (math.sqrt(ne) + 0.12 + 0.11 / math.sqrt(ne)) * d
    return d, _kolmogorov_q(lam)


def _kolmogorov_q(lam: float) -> float:
    # Q_KS(lambda) = 2 * sum_{k>=1} (-1)^(k-1) exp(-2 k^2 lambda^2); the series is useless near 0,
    # where the p-value is 1 anyway.
    if lam < 0.2:
        return 1.0
    total = 0.0
    for k in range(1, 101):
        term = 2.0 * (-1) ** (k - 1) * math.exp(-2.0 * k * k * lam * lam)
        total += term
        if abs(term) < 1e-12:
            break
    return min(max(total, 0.0), 1.0)


DriftMethod = Literal["psi", "ks"]


def drift_state(
    recent: Sequence[float],
    baseline: Sequence[float],
    *,
    method: DriftMethod = "psi",
    warning: float | None = None,
    alert: float | None = None,
    min_count: int = 50,
    bins: int = 10,
) -> Evaluation:
    """Distribution drift of ``recent`` against ``baseline``.

    ``psi``: ``value`` is the PSI; ``WARNING`` at ``warning`` (default 0.1) and ``ALERT`` at ``alert``
    (default 0.25), the customary levels. ``ks``: ``value`` is the p-value; ``WARNING`` below
    ``warning`` (default 0.05) and ``ALERT`` below ``alert`` (default 0.001). Either window with fewer
    than ``min_count`` values gives ``NO_DATA``.
    """
    n, n_base = len(recent), len(baseline)
    if n < min_count or n_base < min_count or n == 0 or n_base == 0:
        return Evaluation(
            NO_DATA, None, alert, n, f"recent {n} / baseline {n_base} scored records, need {min_count} each", n_base
        )
    mean_r, mean_b = math.fsum(recent) / n, math.fsum(baseline) / n_base
    means = f"mean {mean_r:.3f} over {n} records vs baseline {mean_b:.3f} over {n_base}"
    if method == "psi":
        warn_at = 0.1 if warning is None else warning
        alert_at = 0.25 if alert is None else alert
        value = psi(recent, baseline, bins=bins)
        state = classify(value, alert=alert_at, warning=warn_at, previous=None)
        return Evaluation(state, value, alert_at, n, f"PSI {value:.3f} (alert at {alert_at:g}); {means}", n_base)
    warn_p = 0.05 if warning is None else warning
    alert_p = 0.001 if alert is None else alert
    d, p = ks_2samp(recent, baseline)
    state = ALERT if p < alert_p else WARNING if p < warn_p else OK
    return Evaluation(state, p, alert_p, n, f"KS D={d:.3f}, p={p:.2g} (alert below {alert_p:g}); {means}", n_base)
