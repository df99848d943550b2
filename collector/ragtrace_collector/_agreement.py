"""How well the judge agrees with the people who reviewed its records: AUROC (does it rank what people call
grounded above what they call wrong?) and balanced accuracy at its cut (does its verdict match theirs?), each with
a 95 % bootstrap interval, per judge and service, over all reviews and week by week.

The statistics are ragtrace's own (``ragtrace.cli.calibration``, what ``ragtrace calibrate`` prints), so the
collector's figure and the command's agree on the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from ragtrace.cli.calibration import balanced_accuracy, rank_auc
from ragtrace_collector import _drift
from ragtrace_collector._rule_types import AgreementParams
from ragtrace_collector._store.reviews import Agreeing

__all__ = ["CUT", "Agreement", "agreement", "agreement_state", "weekly"]

CUT: Final = 0.5
"""The judge's cut: faithfulness at or above it is its "grounded" (the metrics' labels sit there)."""
_WEEK_NS: Final = 7 * 86_400 * 1_000_000_000
_RESAMPLES: Final = 1000


@dataclass(frozen=True, slots=True)
class Agreement:
    """The judge's agreement with people over ``records`` reviewed records (``grounded`` of them said right by
    the person). AUROC and balanced accuracy need both kinds among the records: None without them. Intervals are
    the 2.5 and 97.5 percentiles of 1,000 bootstrap resamples (None with fewer than 2 records of a kind)."""

    judge: str
    service: str
    records: int
    grounded: int
    auroc: float | None
    auroc_interval: tuple[float, float] | None
    balanced_accuracy: float | None
    balanced_interval: tuple[float, float] | None


def _interval(
    statistic: Callable[[Sequence[float], Sequence[bool]], float], scores: np.ndarray, labels: np.ndarray, seed: int
) -> tuple[float, float] | None:
    if labels.sum() < 2 or (~labels).sum() < 2:
        return None
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(_RESAMPLES):
        pick = rng.integers(0, len(scores), len(scores))
        if labels[pick].all() or not labels[pick].any():
            continue  # a resample of one kind has no AUROC: left out, as the usual bootstrap of AUROC does
        values.append(statistic(scores[pick].tolist(), labels[pick].tolist()))
    if not values:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _of(judge: str, service: str, rows: Sequence[Agreeing], seed: int) -> Agreement:
    scores = np.asarray([r.score for r in rows], dtype=float)
    labels = np.asarray([r.grounded for r in rows], dtype=bool)
    both = bool(labels.any() and not labels.all())

    def balanced(s: Sequence[float], g: Sequence[bool]) -> float:
        return balanced_accuracy(s, g, CUT)

    return Agreement(
        judge,
        service,
        len(rows),
        int(labels.sum()),
        rank_auc(scores.tolist(), labels.tolist()) if both else None,
        _interval(rank_auc, scores, labels, seed) if both else None,
        balanced(scores.tolist(), labels.tolist()) if both else None,
        _interval(balanced, scores, labels, seed) if both else None,
    )


def agreement(rows: Sequence[Agreeing], seed: int = 0) -> list[Agreement]:
    """The agreement over every row (judge and service "all"), then per judge and service, most reviewed first."""
    groups: dict[tuple[str, str], list[Agreeing]] = {}
    for row in rows:
        groups.setdefault((row.judge, row.service), []).append(row)
    per_group = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return [_of("all", "all", rows, seed), *(_of(judge, service, group, seed) for (judge, service), group in per_group)]


def weekly(rows: Sequence[Agreeing], seed: int = 0) -> list[tuple[int, Agreement]]:
    """The agreement over all judges and services, week by week (each week's start, ns since the epoch)."""
    weeks: dict[int, list[Agreeing]] = {}
    for row in rows:
        weeks.setdefault(row.time_ns // _WEEK_NS * _WEEK_NS, []).append(row)
    return [(week, _of("all", "all", group, seed)) for week, group in sorted(weeks.items())]


def agreement_state(
    rows: Sequence[Agreeing], params: AgreementParams, previous: str | None = None
) -> _drift.Evaluation:
    """An ``agreement`` rule's detector (pure): the judge's ``params.statistic`` over the reviews ``rows`` (one
    group's, in the rule's window) against ``params.threshold``. NO_DATA with fewer than ``params.min_reviews``
    reviews, or with reviews of one kind only (the statistic needs answers said right and answers said wrong).
    An ALERT holds until the statistic is back at ``warning`` (the threshold without one), so agreement
    hovering at the threshold does not flap."""
    n = len(rows)
    name = "balanced accuracy" if params.statistic == "balanced_accuracy" else "AUROC"
    if n < params.min_reviews:
        return _drift.Evaluation(_drift.NO_DATA, None, params.threshold, n, f"{n} reviews, need {params.min_reviews}")
    scores = [r.score for r in rows]
    labels = [r.grounded for r in rows]
    if all(labels) or not any(labels):
        said = "right" if labels[0] else "wrong"
        return _drift.Evaluation(
            _drift.NO_DATA, None, params.threshold, n,
            f"all {n} reviews say the answer is {said}: agreement needs answers of both kinds",
        )  # fmt: skip
    value = (
        balanced_accuracy(scores, labels, CUT) if params.statistic == "balanced_accuracy" else rank_auc(scores, labels)
    )
    warning = params.warning
    out = params.threshold if warning is None else warning
    if value < params.threshold or (previous == _drift.ALERT and value < out):
        state: _drift.State = _drift.ALERT
        words = f"is below {params.threshold:g}" if value < params.threshold else f"is not back at {out:g} yet"
    elif warning is not None and value < warning:
        state, words = _drift.WARNING, f"is below {warning:g}"
    else:
        state, words = _drift.OK, f"is at or above {params.threshold:g}"
    return _drift.Evaluation(state, value, params.threshold, n, f"judge {name} {value:.3f} over {n} reviews {words}")
