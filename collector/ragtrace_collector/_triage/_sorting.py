"""The records list's orders (``?sort=``) and their paging cursors (``?cursor=``).

``sort=`` is ``-time`` (newest first, the default), ``time`` (oldest first), ``service`` (by service name, newest
first within one; records without a service last), or a metric's name: ``faithfulness`` lowest first, ``-faithfulness``
highest first (records without that score are not in a list sorted by it).

Paging is by keyset in every order, never ``OFFSET``: a page's "next" link carries the sort key of its last record
(``cursor=``, opaque: URL-safe base64 of a JSON list ending in the span id), and the next page starts strictly past
it, so records arriving meanwhile neither repeat nor skip a row. Newest first keeps its own cursor (``before=``,
as links written before sorting existed say it).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["NEWEST", "SORTS", "Sort", "parse_after", "parse_sort"]

SORTS = ("-time", "time", "service")
"""The orders that are not a metric's (a metric's name, or ``-`` and it, sorts by that score)."""
_METRIC = re.compile(r"^[a-z_][a-z0-9_]*$")
_MAX_CURSOR = 2000


@dataclass(frozen=True, slots=True)
class Sort:
    """One order of the records list: ``by`` time, service or a metric's score (``metric``), ``descending`` or not."""

    by: Literal["time", "service", "score"] = "time"
    descending: bool = True
    metric: str | None = None

    @property
    def default(self) -> bool:
        """Newest first: the list's order without ``sort=``."""
        return self.by == "time" and self.descending

    def __str__(self) -> str:
        name = self.metric if self.by == "score" else self.by
        return f"-{name}" if self.descending and self.by != "service" else str(name)

    def key_of(self, record: Mapping[str, object]) -> tuple[object, ...]:
        """The keyset cursor of ``record`` in this order (the sorted score is ``record["sort_value"]``)."""
        if self.by == "service":
            return (record["service"], record["time_ns"], record["span_id"])
        if self.by == "score":
            return (record["sort_value"], record["span_id"])
        return (record["time_ns"], record["span_id"])

    def cursor(self, key: tuple[object, ...]) -> str:
        """``key`` as the ``cursor=`` value."""
        return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode().rstrip("=")


NEWEST = Sort()
"""Newest first: the list's order without ``sort=``."""


def parse_sort(value: str | None) -> Sort:
    """The ``Sort`` of a ``sort=`` value; ``FilterError`` naming the choices when it is none of them."""
    from ragtrace_collector._triage._filters import FilterError

    if value is None or value == "-time":
        return Sort()
    if value == "time":
        return Sort("time", descending=False)
    if value == "service":
        return Sort("service", descending=False)
    descending = value.startswith("-")
    metric = value[1:] if descending else value
    if metric in ("service",) or not _METRIC.match(metric):
        raise FilterError(
            f"sort={value!r}: use -time (newest first), time, service, or a metric's name (lowest first; "
            "-name highest first)"
        )
    return Sort("score", descending=descending, metric=metric)


def parse_after(sort: Sort, value: str) -> tuple[object, ...]:
    """The keyset cursor a ``cursor=`` value holds, checked against ``sort``'s key; ``FilterError`` otherwise."""
    from ragtrace_collector._triage._filters import FilterError

    hint = f"cursor={value[:60]!r}: a paging cursor of this order; follow the page's links"
    if len(value) > _MAX_CURSOR:
        raise FilterError(hint)
    try:
        key = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (ValueError, binascii.Error):
        raise FilterError(hint) from None
    if not isinstance(key, list) or not key or not isinstance(key[-1], str) or not key[-1]:
        raise FilterError(hint)
    if sort.by == "service":
        ok = len(key) == 3 and isinstance(key[0], str | None) and _whole(key[1])
    elif sort.by == "score":
        ok = len(key) == 2 and isinstance(key[0], int | float) and not isinstance(key[0], bool)
    else:
        ok = len(key) == 2 and _whole(key[0])
    if not ok:
        raise FilterError(hint)
    return tuple(key)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
