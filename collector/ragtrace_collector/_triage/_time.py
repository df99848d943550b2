"""How the pages write a time."""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["fmt_time"]


def fmt_time(time_ns: int | None) -> str:
    """``2026-11-24 10:03:04 UTC`` for ns since the epoch (as the report writes it); "" for None."""
    if time_ns is None:
        return ""
    return datetime.fromtimestamp(time_ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
