"""Threshold: the mean of a metric over a window against a fixed level (``mean faithfulness < 0.5``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ragtrace_collector._drift._states import ALERT, NO_DATA, OK, WARNING, Direction, Evaluation


def threshold_state(
    values: Sequence[float],
    *,
    threshold: float,
    direction: Direction,
    warning: float | None = None,
    min_count: int = 20,
    previous: str | None = None,
) -> Evaluation:
    """Compare the mean of ``values`` with ``threshold`` on the bad side given by ``direction``.

    For a higher-is-better metric the state is ``ALERT`` when the mean is below ``threshold`` and
    ``WARNING`` when below ``warning``; for a lower-is-better metric, above. With a ``warning`` level,
    an ``ALERT`` (``previous``) holds until the mean is back past it, so a mean hovering at the
    threshold does not flap. Fewer than ``min_count`` values give ``NO_DATA``.
    """
    n = len(values)
    if n < min_count or n == 0:
        return Evaluation(NO_DATA, None, threshold, n, f"{n} scored records, need {min_count}")
    mean = math.fsum(values) / n
    if direction == "higher":
        bad, worse = mean < threshold, "below"
        warn = warning is not None and mean < warning
    else:
        bad, worse = mean > threshold, "above"
        warn = warning is not None and mean > warning
    if bad or (warn and previous == ALERT):
        return Evaluation(ALERT, mean, threshold, n, f"mean {mean:.3f} over {n} records is {worse} {threshold:g}")
    if warn:
        assert warning is not None
        return Evaluation(WARNING, mean, threshold, n, f"mean {mean:.3f} over {n} records is {worse} {warning:g}")
    return Evaluation(OK, mean, threshold, n, f"mean {mean:.3f} over {n} records")
