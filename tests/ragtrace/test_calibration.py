"""Fitting the judge's cut: balanced accuracy, the best cut, the held-out figure, the AUROC."""

from __future__ import annotations

import pytest

from ragtrace.cli.calibration import balanced_accuracy, best_cut, fit, rank_auc

LEANS_TO_NO = [0.45, 0.40, 0.35, 0.30, 0.10, 0.08, 0.05, 0.02]  # ranks right, says "no" to everything
LABELS = [True, True, True, True, False, False, False, False]


def test_balanced_accuracy_weighs_both_kinds_alike() -> None:
    assert balanced_accuracy(LEANS_TO_NO, LABELS, 0.5) == 0.5  # every record called not grounded
    assert balanced_accuracy(LEANS_TO_NO, LABELS, 0.2) == 1.0
    assert balanced_accuracy([0.9, 0.9, 0.9, 0.1], [True, True, True, False], 0.5) == 1.0


def test_the_best_cut_separates_and_is_the_one_nearest_the_default_on_ties() -> None:
    cut = best_cut(LEANS_TO_NO, LABELS)
    assert 0.15 <= cut <= 0.25 and cut == round(cut, 2)  # the middle of the cuts that separate (0.11-0.30)
    assert best_cut([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == 0.5  # the default already separates


def test_fit_reports_the_default_the_fitted_cut_and_a_held_out_figure() -> None:
    found = fit(LEANS_TO_NO, LABELS)
    assert (found.at_default, found.at_cut, found.held_out, found.auroc) == (0.5, 1.0, 1.0, 1.0)
    # Records that rank wrong cost the held-out figure more than the figure on the records the cut fits.
    noisy = fit([0.45, 0.09, 0.35, 0.30, 0.10, 0.40, 0.05, 0.02], LABELS)
    assert (noisy.at_cut, noisy.held_out) == (0.75, 0.625)


def test_rank_auc_counts_ties_half() -> None:
    assert rank_auc([0.3, 0.3], [True, False]) == 0.5
    assert rank_auc([0.1, 0.9], [True, False]) == 0.0


@pytest.mark.parametrize("labels", [[True, True, True, False], [True] * 4, []])
def test_fit_needs_two_records_of_each_kind(labels: list[bool]) -> None:
    with pytest.raises(ValueError, match="at least 2 grounded and 2 not grounded"):
        fit([0.5] * len(labels), labels)


def test_every_figure_is_the_one_of_the_cut_as_printed() -> None:
    found = fit([0.2451, 0.2449, 0.2499, 0.2501], [False, False, True, True])
    assert found.cut == 0.25  # two decimals, as a setting is written...
    assert found.at_cut == balanced_accuracy([0.2451, 0.2449, 0.2499, 0.2501], [False, False, True, True], 0.25)
    assert found.at_cut == 0.75  # ...and measured there, not at the unrounded 0.2475 that separates
