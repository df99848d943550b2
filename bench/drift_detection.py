"""Drift-detection benchmark: how fast the spike detector sees a hallucination spike, how often it cries wolf.

Synthetic streams of scored records, each "hallucinated" (hallucination > 0) with some probability:

* delay: 200 runs; a history of stable records (5 %) teaches the baseline, then 500 more stable
  records, then the rate jumps to 20 % at a known record. The delay is the number of scored records
  after the jump until the detector is in ALERT. Goal: median <= 60.
* false alarms: long stable streams at 5 %, each with its own learnt baseline; every entry into ALERT
  is a false alarm. Goal: < 1 per 10,000 records.

The detector is ``ragtrace_collector._drift.BernoulliCusum`` with the default rule's parameters (the
same design and hysteresis the watcher applies). Side by side, in the same run, a naive detector a
dashboard would use: "bad rate over the last 100 records >= 2x baseline", with the same hysteresis
(it resolves below 1.5x). The script prints both and their ratios.

Run: ``.venv/bin/python bench/drift_detection.py [--runs 200] [--stable 2000000] [--seed 7]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ragtrace_collector._drift import ALERT, BernoulliCusum, CusumDesign, learn_rate
from ragtrace_collector._rule_types import DEFAULT_SPIKE

P_STABLE = 0.05
P_SPIKE = 0.20
HISTORY = 2000  # stable records the baseline is learnt from (a few hours of traffic at a 10 % sample)
PRE_CHANGE = 500
MAX_AFTER = 5000


class Detector:
    """What both detectors offer the benchmark: one event in, is it in ALERT."""

    def update(self, bad: bool) -> bool:
        raise NotImplementedError


class Cusum(Detector):
    shift = DEFAULT_SPIKE.shift
    h = DEFAULT_SPIKE.h
    warning_h = DEFAULT_SPIKE.warning_h

    def __init__(self, baseline_rate: float) -> None:
        design = CusumDesign.from_baseline(
            baseline_rate, shift=self.shift, h=self.h, warning_h=self.warning_h, min_rate=DEFAULT_SPIKE.min_rate
        )
        self._chart = BernoulliCusum(design)

    def update(self, bad: bool) -> bool:
        return self._chart.update(bad) == ALERT


class WindowRate(Detector):
    """Bad rate over the last ``window`` records against ``factor`` x the baseline."""

    def __init__(self, baseline_rate: float, window: int = 100, factor: float = 2.0, resolve: float = 1.5) -> None:
        self._events: deque[bool] = deque(maxlen=window)
        self._bad = 0
        self._alert_at = factor * baseline_rate * window
        self._resolve_at = resolve * baseline_rate * window
        self._in_alert = False

    def update(self, bad: bool) -> bool:
        if len(self._events) == self._events.maxlen and self._events[0]:
            self._bad -= 1
        self._events.append(bad)
        self._bad += bad
        full = len(self._events) == self._events.maxlen
        if full and self._bad >= self._alert_at:
            self._in_alert = True
        elif self._bad < self._resolve_at:
            self._in_alert = False
        return self._in_alert


@dataclass
class Figures:
    median_delay: float
    p90_delay: float
    missed: int
    early_alarms: int
    false_alarms_per_10k: float


def _baseline(rng: random.Random) -> float:
    return learn_rate([rng.random() < P_STABLE for _ in range(HISTORY)])


def measure(make: Callable[[float], Detector], runs: int, stable_records: int, seed: int) -> Figures:
    rng = random.Random(seed)
    delays: list[int] = []
    missed = early = 0
    for _ in range(runs):
        detector = make(_baseline(rng))
        was_alert = False
        for _ in range(PRE_CHANGE):
            alert = detector.update(rng.random() < P_STABLE)
            early += alert and not was_alert
            was_alert = alert
        for k in range(1, MAX_AFTER + 1):
            if detector.update(rng.random() < P_SPIKE):
                delays.append(k)
                break
        else:
            missed += 1
    alarms = 0
    streams = 20
    per_stream = stable_records // streams
    for _ in range(streams):
        detector = make(_baseline(rng))
        was_alert = False
        for _ in range(per_stream):
            alert = detector.update(rng.random() < P_STABLE)
            alarms += alert and not was_alert
            was_alert = alert
    delays.sort()
    return Figures(
        median_delay=statistics.median(delays) if delays else float("inf"),
        p90_delay=delays[int(0.9 * (len(delays) - 1))] if delays else float("inf"),
        missed=missed,
        early_alarms=early,
        false_alarms_per_10k=alarms / (streams * per_stream) * 10_000,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--stable", type=int, default=2_000_000, help="stable records for the false-alarm rate")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--h", type=float, default=DEFAULT_SPIKE.h, help="CUSUM alert level (tuning sweeps)")
    parser.add_argument("--shift", type=float, default=DEFAULT_SPIKE.shift, help="rate increase tuned for")
    args = parser.parse_args(argv)
    Cusum.h, Cusum.shift, Cusum.warning_h = args.h, args.shift, min(DEFAULT_SPIKE.warning_h, args.h)

    print(
        f"hallucination rate {P_STABLE:.0%} -> {P_SPIKE:.0%}; baseline learnt from {HISTORY} records; "
        f"{args.runs} runs; {args.stable:,} stable records"
    )
    print(
        f"CUSUM design: shift {Cusum.shift:g}x baseline, h {Cusum.h:g}, "
        f"warning {Cusum.warning_h:g}, rate floor {DEFAULT_SPIKE.min_rate:g} (default spike rule unless overridden)"
    )
    results = {}
    for name, make in (("cusum", Cusum), ("window100x2", WindowRate)):
        started = time.perf_counter()
        results[name] = figures = measure(make, args.runs, args.stable, args.seed)
        print(
            f"{name:>12}: median delay {figures.median_delay:.0f} records (p90 {figures.p90_delay}), "
            f"missed {figures.missed}/{args.runs}, alarms before the jump {figures.early_alarms}, "
            f"false alarms {figures.false_alarms_per_10k:.3f} per 10,000 records "
            f"[{time.perf_counter() - started:.1f} s]"
        )
    cusum, naive = results["cusum"], results["window100x2"]
    print(
        f"ratio cusum/window100x2: delay {cusum.median_delay / naive.median_delay:.2f}x, "
        f"false alarms {cusum.false_alarms_per_10k / max(naive.false_alarms_per_10k, 1e-9):.3f}x"
    )
    ok = cusum.median_delay <= 60 and cusum.false_alarms_per_10k < 1.0 and cusum.missed == 0
    print(
        f"goals (median delay <= 60, < 1 false alarm per 10,000): "
        f"{'met' if ok else 'NOT met'} (delay {cusum.median_delay:.0f}, false alarms {cusum.false_alarms_per_10k:.3f})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
