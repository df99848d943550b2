"""The machine's speed at a moment, printed by the benchmarks beside their absolute figures.

This machine runs at speeds more than 1.8x apart (a run may meet one or several), so a figure in
milliseconds is read with the speed it was measured at; ratios measured in one run do not need it.
"""

from __future__ import annotations

import time


def loop_ms() -> float:
    """Milliseconds a fixed loop of Python takes, best of three (one million additions)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, time.perf_counter() - start)
    return best * 1e3
