"""Quality gates for CI (``ragtrace eval --fail-under METRIC=VALUE``), read along each metric's direction.

A gate fails when the metric's mean (over the records where it was measured) is worse than VALUE:
below it for a higher-is-better metric, above it for a lower-is-better one such as hallucination.
The direction is the metric class's own ``direction``, carried by ``MetricSummary``, so a new metric
(G-Eval ones included) needs no entry here. A metric measured on no record fails its gate: nothing
showed it good enough.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragtrace._evaluation_result import EvaluationResult, MetricSummary
from ragtrace._exceptions import ConfigurationError

__all__ = ["Gate", "check_metrics", "failures", "parse_gate"]


@dataclass(frozen=True, slots=True)
class Gate:
    """``metric`` must have a mean no worse than ``bound``."""

    metric: str
    bound: float

    def __str__(self) -> str:
        return f"--fail-under {self.metric}={self.bound:g}"

    def failure(self, summary: MetricSummary) -> str | None:
        """Why the gate fails on ``summary``, or None when it passes."""
        if summary.mean is None:
            why = ", ".join(f"{reason}: {n}" for reason, n in sorted(summary.absent.items())) or "no records"
            return f"{self.metric} was measured on no record ({why}) ({self})"
        if summary.direction == "lower":
            if summary.mean > self.bound:
                return f"{self.metric} mean {summary.mean:.6g} is above {self.bound:g}, lower is better ({self})"
        elif summary.mean < self.bound:
            return f"{self.metric} mean {summary.mean:.6g} is below {self.bound:g} ({self})"
        return None


def parse_gate(text: str) -> Gate:
    """``"faithfulness=0.8"`` -> ``Gate("faithfulness", 0.8)``; ``ValueError`` naming the fix otherwise."""
    metric, sep, value = text.partition("=")
    try:
        bound = float(value)
    except ValueError:
        bound = math.nan
    if not sep or not metric.strip() or not math.isfinite(bound):
        raise ValueError(f"{text!r}: write METRIC=VALUE, e.g. faithfulness=0.8 or hallucination=0.2")
    return Gate(metric.strip(), bound)


def check_metrics(gates: Iterable[Gate], metrics: Sequence[str]) -> None:
    """Raise ``ConfigurationError`` when a gate names a metric the suite does not score."""
    for gate in gates:
        if gate.metric not in metrics:
            raise ConfigurationError(f"{gate}: {gate.metric!r} is not scored in this run; scored: {', '.join(metrics)}")


def failures(gates: Iterable[Gate], result: EvaluationResult) -> list[str]:
    """Why each failing gate fails, in the order given; empty when every gate passes."""
    return [why for gate in gates if (why := gate.failure(result.summary[gate.metric])) is not None]
