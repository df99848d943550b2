"""Drift detection over score streams: pure functions, no I/O, no clock.

Three detectors, each turning windows of scores into an ``Evaluation`` with a state:

* threshold: the mean of a metric over a window against a fixed level (``mean faithfulness < 0.5``);
* spike: a Bernoulli CUSUM on "bad" records (e.g. ``hallucination > 0.5``) against a baseline rate
  learnt from history; it answers "has the rate gone up?" within a few dozen records while staying
  quiet on a stable stream (see ``bench/drift_detection.py`` for the measured delay and false alarms);
* drift: the distribution of a metric in a recent window against a baseline window, by the
  population stability index (PSI) or the two-sample Kolmogorov-Smirnov test.

States are ``OK``, ``WARNING``, ``ALERT`` and ``NO_DATA``. A window with too few scored records is
``NO_DATA``, never ``OK``: "not measured" must not read as "fine".

The parts: ``_states.py`` (states, directions, ``Evaluation``), ``_threshold.py``, ``_spike.py`` and
``_distribution.py`` (one detector each).
"""

from __future__ import annotations

from ragtrace_collector._drift._distribution import DriftMethod, drift_state, ks_2samp, psi
from ragtrace_collector._drift._spike import (
    BernoulliCusum,
    CusumDesign,
    bad_events,
    classify,
    cusum_statistic,
    learn_rate,
    learn_rate_from_counts,
    spike_state,
)
from ragtrace_collector._drift._states import (
    ALERT,
    NO_DATA,
    OK,
    STATES,
    WARNING,
    Direction,
    Evaluation,
    State,
    goodness,
    metric_direction,
)
from ragtrace_collector._drift._threshold import threshold_state

__all__ = [
    "ALERT",
    "NO_DATA",
    "OK",
    "STATES",
    "WARNING",
    "BernoulliCusum",
    "CusumDesign",
    "Direction",
    "DriftMethod",
    "Evaluation",
    "State",
    "bad_events",
    "classify",
    "cusum_statistic",
    "drift_state",
    "goodness",
    "ks_2samp",
    "learn_rate",
    "learn_rate_from_counts",
    "metric_direction",
    "psi",
    "spike_state",
    "threshold_state",
]
