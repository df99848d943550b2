"""The pure detectors: threshold, Bernoulli CUSUM spike, PSI / KS drift, and NO_DATA on thin windows."""

from __future__ import annotations

import math
import random

import pytest
from ragtrace_collector._drift import (
    ALERT,
    NO_DATA,
    OK,
    WARNING,
    BernoulliCusum,
    CusumDesign,
    bad_events,
    classify,
    cusum_statistic,
    drift_state,
    goodness,
    ks_2samp,
    learn_rate,
    metric_direction,
    psi,
    spike_state,
    threshold_state,
)


def test_the_direction_table_agrees_with_the_metrics_registry() -> None:
    from ragtrace.metrics import METRIC_NAMES, metric_by_name

    for name in METRIC_NAMES:
        if name != "geval":  # G-Eval needs options; user-named G-Eval metrics are higher-is-better
            assert metric_direction(name) == metric_by_name(name).direction, name


def test_directions_and_goodness() -> None:
    assert metric_direction("faithfulness") == "higher"
    assert metric_direction("hallucination") == "lower"
    assert metric_direction("context_contradiction") == "lower"
    assert goodness("hallucination", 0.25) == 0.75
    assert goodness("faithfulness", 0.25) == 0.25


# -- threshold ------------------------------------------------------------------------------------


def test_threshold_alerts_below_for_a_higher_is_better_metric() -> None:
    evaluation = threshold_state([0.6] * 30, threshold=0.7, warning=0.75, direction="higher", min_count=20)
    assert evaluation.state == ALERT
    assert evaluation.value == pytest.approx(0.6)
    assert evaluation.threshold == 0.7
    assert evaluation.count == 30
    assert "below 0.7" in evaluation.message


def test_threshold_warning_and_ok() -> None:
    assert threshold_state([0.72] * 20, threshold=0.7, warning=0.75, direction="higher").state == WARNING
    assert threshold_state([0.9] * 20, threshold=0.7, warning=0.75, direction="higher").state == OK
    assert threshold_state([0.9] * 20, threshold=0.7, direction="higher").state == OK


def test_threshold_alert_holds_until_the_mean_is_back_past_the_warning_level() -> None:
    hovering = [0.72] * 20  # between the threshold (0.7) and the warning level (0.75)
    assert threshold_state(hovering, threshold=0.7, warning=0.75, direction="higher", previous=ALERT).state == ALERT
    assert threshold_state(hovering, threshold=0.7, warning=0.75, direction="higher", previous=OK).state == WARNING
    recovered = [0.8] * 20
    assert threshold_state(recovered, threshold=0.7, warning=0.75, direction="higher", previous=ALERT).state == OK


def test_threshold_alerts_above_for_a_lower_is_better_metric() -> None:
    assert threshold_state([0.5] * 20, threshold=0.3, direction="lower").state == ALERT
    assert threshold_state([0.1] * 20, threshold=0.3, direction="lower").state == OK


def test_threshold_thin_window_is_no_data_not_ok() -> None:
    evaluation = threshold_state([0.1] * 5, threshold=0.7, direction="higher", min_count=20)
    assert evaluation.state == NO_DATA
    assert evaluation.value is None
    assert "5 scored records, need 20" in evaluation.message
    assert threshold_state([], threshold=0.7, direction="higher", min_count=0).state == NO_DATA


# -- CUSUM ----------------------------------------------------------------------------------------


def test_cusum_increments_are_the_log_likelihood_ratios() -> None:
    design = CusumDesign(p0=0.05, p1=0.2, h=8.0, warning_h=4.0)
    assert design.up == pytest.approx(math.log(4.0))
    assert design.down == pytest.approx(math.log(0.8 / 0.95))
    # Two bad records: 2 ln 4; then good records pull it down, never below 0.
    assert cusum_statistic([True, True], design) == pytest.approx(2 * math.log(4.0))
    assert cusum_statistic([True, True, False], design) == pytest.approx(2 * math.log(4.0) + math.log(0.8 / 0.95))
    assert cusum_statistic([False] * 50, design) == 0.0
    assert cusum_statistic([False] * 50 + [True], design) == pytest.approx(math.log(4.0))


def test_cusum_design_from_baseline_floors_and_caps() -> None:
    design = CusumDesign.from_baseline(0.0, shift=4.0, min_rate=0.01)
    assert design.p0 == 0.01
    assert design.p1 == pytest.approx(0.04)
    assert design.warning_h == design.h / 2
    high = CusumDesign.from_baseline(0.4, shift=4.0)
    assert high.p0 < high.p1 < 1.0


def test_cusum_design_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="p0 < p1"):
        CusumDesign(p0=0.2, p1=0.1, h=8.0, warning_h=4.0)
    with pytest.raises(ValueError, match="warning_h"):
        CusumDesign(p0=0.05, p1=0.2, h=8.0, warning_h=9.0)


def test_classify_has_hysteresis() -> None:
    assert classify(9.0, alert=8.0, warning=4.0, previous=None) == ALERT
    assert classify(5.0, alert=8.0, warning=4.0, previous=None) == WARNING
    assert classify(5.0, alert=8.0, warning=4.0, previous=ALERT) == ALERT
    assert classify(3.0, alert=8.0, warning=4.0, previous=ALERT) == OK


def test_learn_rate_never_estimates_zero() -> None:
    assert learn_rate([False] * 99) == pytest.approx(0.5 / 100)
    assert learn_rate([True] * 10 + [False] * 89) == pytest.approx(10.5 / 100)


def test_sequential_cusum_sees_a_spike_and_stays_quiet_on_a_stable_stream() -> None:
    rng = random.Random(3)
    chart = BernoulliCusum(CusumDesign.from_baseline(0.05))
    stable = [chart.update(rng.random() < 0.05) for _ in range(3000)]
    assert ALERT not in stable
    delay = next(k for k in range(1, 1000) if chart.update(rng.random() < 0.5) == ALERT)
    assert delay < 40


def test_bad_events_follow_the_direction() -> None:
    assert bad_events([0.0, 0.1, 0.0], direction="lower", cutoff=0.0) == [False, True, False]
    assert bad_events([1.0, 0.4, 0.9], direction="higher", cutoff=0.5) == [False, True, False]


def test_spike_state_alerts_on_a_raised_rate() -> None:
    baseline = [i % 20 == 0 for i in range(1000)]  # 5 %
    recent = [i % 4 == 0 for i in range(200)]  # 25 %
    evaluation = spike_state(recent, baseline=baseline)
    assert evaluation.state == ALERT
    assert evaluation.value is not None and evaluation.value >= 8.0
    assert evaluation.baseline_count == 1000
    assert "25.0%" in evaluation.message


def test_spike_state_is_ok_at_the_baseline_rate() -> None:
    baseline = [i % 20 == 0 for i in range(1000)]
    recent = [i % 20 == 0 for i in range(400)]
    assert spike_state(recent, baseline=baseline).state == OK


def test_spike_state_no_data_without_enough_history_or_records() -> None:
    few = spike_state([True] * 50, baseline=[False] * 10, min_baseline=200)
    assert few.state == NO_DATA
    assert "baseline has 10" in few.message
    thin = spike_state([True] * 5, baseline_counts=(10, 1000), min_count=20)
    assert thin.state == NO_DATA
    # A fixed baseline rate needs no history.
    assert spike_state([True] * 30, baseline_rate=0.05).state == ALERT


# -- distribution drift ---------------------------------------------------------------------------


def test_psi_of_a_hand_computed_example() -> None:
    recent = [0.05] * 50 + [0.95] * 50
    baseline = [0.05] * 90 + [0.95] * 10
    expected = (0.5 - 0.9) * math.log(0.5 / 0.9) + (0.5 - 0.1) * math.log(0.5 / 0.1)
    assert psi(recent, baseline, bins=2) == pytest.approx(expected)
    assert psi(baseline, baseline) == pytest.approx(0.0)


def test_psi_handles_empty_bins_and_negative_values() -> None:
    value = psi([1.0] * 10, [0.0] * 10)
    assert math.isfinite(value) and value > 1.0
    assert math.isfinite(psi([-0.2, 0.5], [0.5, 0.6]))
    with pytest.raises(ValueError):
        psi([], [0.5])


def test_ks_statistic_and_p_value() -> None:
    same = [i / 100 for i in range(100)]
    assert ks_2samp(same, same) == (0.0, 1.0)
    d, p = ks_2samp([0.1] * 60, [0.9] * 60)
    assert d == 1.0 and p < 1e-10
    # D = 0.2 with n = m = 100: the two-sided p-value is about 0.03.
    d, p = ks_2samp([float(i) for i in range(100)], [float(i + 20) for i in range(100)])
    assert d == pytest.approx(0.2)
    assert 0.02 < p < 0.05


def test_drift_state_psi_levels_and_no_data() -> None:
    baseline = [1.0] * 80 + [0.5] * 20
    assert drift_state(baseline, baseline).state == OK
    shifted = [1.0] * 30 + [0.5] * 40 + [0.0] * 30
    drifted = drift_state(shifted, baseline)
    assert drifted.state == ALERT
    assert drifted.threshold == 0.25
    assert "PSI" in drifted.message
    assert drift_state(shifted[:10], baseline, min_count=50).state == NO_DATA


def test_drift_state_ks() -> None:
    baseline = [i / 200 for i in range(200)]
    assert drift_state(baseline, baseline, method="ks").state == OK
    shifted = [min(1.0, v + 0.3) for v in baseline]
    evaluation = drift_state(shifted, baseline, method="ks")
    assert evaluation.state == ALERT
    assert evaluation.value is not None and evaluation.value < 0.001
