"""How the pages write a time."""

from __future__ import annotations

import time

__all__ = ["fmt_time"]


def fmt_time(time_ns: int | None) -> str:
    """``2026-11-24 10:03:04 UTC`` for ns since the epoch (as the report writes it); "" for None."""
    if time_ns is None:
        return ""
    # gmtime and a plain format: half of datetime's strftime, and a chart writes a time for each of its points.
    t = time.gmtime(time_ns // 1_000_000_000)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC"
