"""Distribution drift: a recent window against a baseline by the population stability index (PSI) or the
two-sample Kolmogorov-Smirnov test."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from ragtrace_collector._drift._spike import classify
from ragtrace_collector._drift._states import ALERT, NO_DATA, OK, WARNING, Evaluation


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
