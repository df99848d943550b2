"""Small text helpers shared by the markdown and the HTML report."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

Format = Literal["markdown", "html"]
"""What ``report`` writes."""


def iso(ns: int | None) -> str:
    if ns is None:
        return "-"
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def period(first_ns: int | None, last_ns: int | None) -> str:
    """The stored period in words: "from X to Y", or, when nothing is stored in it, that (not "- to -")."""
    if first_ns is None or last_ns is None:
        return "nothing stored in this period yet"
    return f"from {iso(first_ns)} to {iso(last_ns)}"


def scored_line(records: int, scored: int, elsewhere: int) -> str:
    """ "140 records, 120 of them scored", and the spans scored in the period whose record is not in it."""
    text = f"{records} record{'s' if records != 1 else ''}, {scored} of them scored"
    if elsewhere:
        text += (
            f"; and {elsewhere} scored span{'s' if elsewhere != 1 else ''} whose record is not in this period (a late "
            "score, or a score-only export): the metrics count their scores"
        )
    return text


def num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def cut(text: str | None, n: int) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def chunk_label(chunk: dict[str, Any], *, score: bool = False) -> str:
    """The chunk's id (and, with ``score``, its retrieval score); "" for a chunk without either.

    A chunk captured from a plain string has no id (stored as null): the report shows nothing, never "None".
    """
    chunk_id = chunk.get("id")
    label = "" if chunk_id is None else str(chunk_id)
    chunk_score = chunk.get("score")
    if score and chunk_score is not None:
        label = f"{label} (score {chunk_score})".lstrip()
    return label


def md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def scope(alert: dict[str, Any]) -> str:
    return ", ".join(f"{k}={alert[k]}" for k in ("service", "route") if alert[k] is not None) or "all"
