"""The pages' shared scope: a time range and a service, kept in the URL (``?range=24h&service=shop``, or
``?since=&until=`` for a fixed period) and carried by every link of the navigation, so the overview, the records,
the costs, the review queue and the agreement show the same slice and a link to one of them is a link to that view.

``range=`` is a period ending now (``1h``, ``24h``, ``7d``, ``30d``): a bookmark of it stays "the last day". It
wins over ``since=``, which it replaces; ``until=`` still ends a range. No range and no ``since`` is all time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from ragtrace_collector._triage._time import fmt_time

__all__ = ["RANGES", "SCOPE_KEYS", "Scope", "parse_scope"]

_HOUR_NS = 3600 * 1_000_000_000
RANGES: dict[str, int] = {"1h": _HOUR_NS, "24h": 24 * _HOUR_NS, "7d": 7 * 24 * _HOUR_NS, "30d": 30 * 24 * _HOUR_NS}
"""The time ranges the picker offers, each a period ending now (ns)."""
SCOPE_KEYS = ("range", "since", "until", "service")
"""The URL parameters of the scope: the ones every page's links carry."""


@dataclass(frozen=True, slots=True)
class Scope:
    """A time range (``range``, a key of ``RANGES``, or ``since_ns``/``until_ns``) and a service; None is any."""

    range: str | None = None
    since_ns: int | None = None
    """The range's start, resolved (for ``range``: ``now`` less its length); None is all time."""
    until_ns: int | None = None
    service: str | None = None

    def params(self) -> list[tuple[str, str]]:
        """The URL parameters that give this scope again (``range`` rather than the ``since`` it resolved to)."""
        out: list[tuple[str, str]] = []
        if self.range is not None:
            out.append(("range", self.range))
        elif self.since_ns is not None:
            out.append(("since", str(self.since_ns)))
        if self.until_ns is not None:
            out.append(("until", str(self.until_ns)))
        if self.service:
            out.append(("service", self.service))
        return out

    def query(self) -> str:
        """``params`` as a URL query ("" for all time and every service)."""
        return urlencode(self.params())

    def link(self, path: str) -> str:
        """``path`` with this scope's query."""
        query = self.query()
        return f"{path}?{query}" if query else path

    def describe(self) -> str:
        """The scope in words, for a page's heading: "the last 24h, service shop"."""
        if self.range is not None:
            when = f"the last {self.range}"
        elif self.since_ns is not None or self.until_ns is not None:
            when = f"{fmt_time(self.since_ns) or 'the start'} to {fmt_time(self.until_ns) or 'now'}"
        else:
            when = "all time"
        return when + (f", service {self.service}" if self.service else ", every service")


def parse_scope(params: Mapping[str, str] | object, now_ns: int | None = None) -> Scope:
    """The scope of a page's URL query (a Starlette ``QueryParams`` or a mapping); ``now_ns`` ends a ``range``
    (default: the clock). Raises ``_filters.FilterError`` naming a value that does not parse."""
    from ragtrace_collector._triage._filters import FilterError, parse_filter

    f = parse_filter(params, now_ns=now_ns)
    if f.range is not None and f.range not in RANGES:  # parse_filter checked it; kept for the type checker
        raise FilterError(f"range={f.range!r}: use one of {', '.join(RANGES)}")
    return f.scope
