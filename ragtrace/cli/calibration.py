"""Fitting the OpenAI-compatible judge's ``support_threshold`` to labelled records: pure arithmetic.

A record is grounded when every claim of its answer is supported, so its score is the smallest P(yes)
of its claims, and a cut says "grounded" when that score reaches it. ``fit`` picks the cut with the best
balanced accuracy and measures it held out (each half of the records cut at the other half's best), so
the figure a user reads is not the one the cut was chosen on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_CUT", "Fit", "balanced_accuracy", "best_cut", "fit", "rank_auc"]

DEFAULT_CUT = 0.5
"""The judge's cut when none is set."""


@dataclass(frozen=True, slots=True)
class Fit:
    """What ``fit`` found: the cut, balanced accuracy at the default cut and at the fitted one (on every
    record, and held out), and how well the scores rank grounded above not grounded (AUROC)."""

    cut: float
    at_default: float
    at_cut: float
    held_out: float
    auroc: float


def balanced_accuracy(scores: Sequence[float], labels: Sequence[bool], cut: float) -> float:
    """The mean of the recall of grounded records (score >= ``cut``) and of the others (score < ``cut``)."""
    grounded = np.asarray(labels, dtype=bool)
    said = np.asarray(scores, dtype=float) >= cut
    return float((said[grounded].mean() + (~said[~grounded]).mean()) / 2)


def best_cut(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The cut with the best balanced accuracy among cuts of two decimals (as a setting is written): the
    default when it is among the best (the least change to what the judge says), else the middle of the
    widest run of best cuts, which keeps it away from both kinds' edges for records it has not seen."""
    grid = [round(i / 100, 2) for i in range(101)]
    accuracies = [balanced_accuracy(scores, labels, c) for c in grid]
    best = max(accuracies)
    if balanced_accuracy(scores, labels, DEFAULT_CUT) == best:
        return DEFAULT_CUT
    runs: list[list[float]] = [[]]
    for cut, accuracy in zip(grid, accuracies, strict=True):
        if accuracy == best:
            runs[-1].append(cut)
        elif runs[-1]:
            runs.append([])
    widest = max(runs, key=lambda run: (run[-1] - run[0]) if run else -1.0)
    return round((widest[0] + widest[-1]) / 2, 2)


def rank_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """P(a grounded record scores above a not grounded one), ties counted half."""
    grounded = np.asarray(labels, dtype=bool)
    values = np.asarray(scores, dtype=float)
    above = values[grounded][:, None] - values[~grounded][None, :]
    return float(((above > 0).sum() + 0.5 * (above == 0).sum()) / above.size)


def fit(scores: Sequence[float], labels: Sequence[bool]) -> Fit:
    """Fit the cut on every record (two decimals, as a setting is written) and measure it held
    out. Needs two records of each kind at least (``ValueError`` otherwise): a held-out half must hold both."""
    positives = sum(bool(label) for label in labels)
    if len(scores) != len(labels) or min(positives, len(labels) - positives) < 2:
        raise ValueError(
            f"calibration needs at least 2 grounded and 2 not grounded records with claims; got {positives} "
            f"and {len(labels) - positives}"
        )
    # Halves by position, alternating, each holding both kinds.
    grounded = [i for i, label in enumerate(labels) if label]
    other = [i for i, label in enumerate(labels) if not label]
    halves = [grounded[0::2] + other[0::2], grounded[1::2] + other[1::2]]
    said = np.zeros(len(scores), dtype=bool)
    for fitted_on, applied_to in ((0, 1), (1, 0)):
        cut = best_cut([scores[i] for i in halves[fitted_on]], [labels[i] for i in halves[fitted_on]])
        for i in halves[applied_to]:
            said[i] = scores[i] >= cut
    truth = np.asarray(labels, dtype=bool)
    held_out = float((said[truth].mean() + (~said[~truth]).mean()) / 2)
    cut = best_cut(scores, labels)  # two decimals, as printed: every figure is the one of that cut
    return Fit(
        cut=cut,
        at_default=balanced_accuracy(scores, labels, DEFAULT_CUT),
        at_cut=balanced_accuracy(scores, labels, cut),
        held_out=held_out,
        auroc=rank_auc(scores, labels),
    )
