"""What the collector's join tests (``test_join_*.py``) share: settling limits moved by the test's own clock,
reading the store, and settling a collector at a given time. Their judge comes from the ``offline_judge``
fixture (``conftest.py``)."""

from __future__ import annotations

from typing import Final

from ragtrace_collector._join import JoinLimits
from ragtrace_collector._server import Collector

NS: Final = 1_000_000_000
HOUR: Final = 3600 * NS

LIMITS: Final = JoinLimits(settle_seconds=3600, max_seconds=7200)
"""A trace settles an hour after its last span (two at most after its first): never on its own during a test,
only when the test settles at a time it chose (``settle(collector, time.time_ns() + 2 * HOUR)``)."""


def settle(collector: Collector, at_ns: int) -> list[str]:
    """Settle what is quiet at ``at_ns`` and wait until its records are scored; the roots written (span ids)."""
    assert collector.settler is not None and collector.scorer is not None
    written = collector.settler.settle_once(at_ns)
    assert collector.scorer.wait_idle(120)
    return written
