"""The records list's filters: parsed from a page's URL query, and written back into links, so a link
keeps the reader's filters.

``?range=`` (a period ending now: ``_scope.RANGES``), ``?since=&until=`` (ISO 8601 or ns since the epoch),
``service=``, ``route=``, ``decision=``, ``score=`` (repeatable or comma-separated: ``hallucination>0.5``,
``faithfulness<=0.3``), ``meta=`` (the same: ``key:value``, the record's OpenInference ``metadata`` or a span
attribute of that name), ``q=`` (text in the query or the answer), ``sort=`` (``_sorting``: newest first by
default), ``before=`` / ``cursor=`` (the paging cursors: ``before`` is ``<time_ns>:<span_id>`` of the last record
shown newest first, ``cursor`` the opaque key of the last record shown in another order) and ``limit=``. A value
that does not parse is a ``FilterError`` with a message for the reader that names the parameter, never a silent
default and never an error further down (a time past what SQLite's integers hold, a digit that is not ASCII).

What one request may ask is bounded here, before any query runs: at most ``MAX_FILTERS`` ``score=`` and
``meta=`` conditions together (each is a subquery: 400 of them took 49 s on a 5,000-record store), ``q=`` at
most ``MAX_TEXT_LENGTH`` characters and every other value at most ``MAX_VALUE_LENGTH``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from urllib.parse import urlencode

from ragtrace import semconv
from ragtrace_collector._triage._scope import RANGES, Scope
from ragtrace_collector._triage._sorting import NEWEST, Sort, parse_after, parse_sort

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_FILTERS",
    "MAX_LIMIT",
    "MAX_TEXT_LENGTH",
    "MAX_VALUE_LENGTH",
    "FilterError",
    "RecordFilter",
    "ScoreBound",
    "parse_filter",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_FILTERS = 20
"""Most ``score=`` and ``meta=`` conditions in one request, together."""
MAX_TEXT_LENGTH = 200
"""Longest ``q=`` (characters): text searched for in every record's query and answer."""
MAX_VALUE_LENGTH = 1000
"""Longest value of any other parameter (characters)."""
MAX_TIME_NS = 2**63 - 1
"""Latest time a filter can name: the largest integer SQLite stores (year 2262)."""
_SCORE = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(<=|>=|<|>)\s*(-?[0-9.]+)\s*$")


class FilterError(ValueError):
    """A filter the page cannot read; the message says which and how to write it."""


@dataclass(frozen=True, slots=True)
class ScoreBound:
    """``metric op value``: records whose score of ``metric`` satisfies it (a record without that score does not)."""

    metric: str
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """What the records list shows: every field narrows it; the empty filter shows every record."""

    since_ns: int | None = None
    until_ns: int | None = None
    service: str | None = None
    route: str | None = None
    decision: str | None = None
    scores: tuple[ScoreBound, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    text: str | None = None
    before: tuple[int, str] | None = None
    """Keyset paging newest first: records strictly older than this ``(time_ns, span_id)``."""
    limit: int = DEFAULT_LIMIT
    range: str | None = None
    """The scope's period ending now (a key of ``_scope.RANGES``); ``since_ns`` is its start, resolved."""
    sort: Sort = NEWEST
    """The list's order (``_sorting``); newest first by default."""
    after: tuple[object, ...] | None = None
    """Keyset paging in another order than newest first: the sort key of the last record shown, then its span id."""

    @property
    def scope(self) -> Scope:
        """The time range and service of this filter: what the pages' links carry to one another."""
        return Scope(self.range, self.since_ns, self.until_ns, self.service)

    def params(self, *, paging: bool = False) -> list[tuple[str, str]]:
        """The URL query of this filter (without the cursor unless ``paging``)."""
        out: list[tuple[str, str]] = list(self.scope.params())
        for key, value in (
            ("route", self.route),
            ("decision", self.decision),
            ("q", self.text),
        ):
            if value:
                out.append((key, value))
        out += [("score", str(bound)) for bound in self.scores]
        out += [("meta", f"{key}:{value}") for key, value in self.meta]
        if not self.sort.default:
            out.append(("sort", str(self.sort)))
        if self.limit != DEFAULT_LIMIT:
            out.append(("limit", str(self.limit)))
        if paging and self.before is not None:
            out.append(("before", f"{self.before[0]}:{self.before[1]}"))
        if paging and self.after is not None:
            out.append(("cursor", self.sort.cursor(self.after)))
        return out

    def query(self, *, paging: bool = False) -> str:
        """``params`` as a URL query string (empty when nothing is filtered)."""
        return urlencode(self.params(paging=paging))

    def page_after(self, record: Mapping[str, object]) -> RecordFilter:
        """The same filter, one page further: past ``record`` (the last shown) in the list's order."""
        if self.sort.default:
            return replace(self, before=(int(record["time_ns"]), str(record["span_id"])))  # type: ignore[call-overload]
        return replace(self, after=self.sort.key_of(record))


def parse_filter(params: Mapping[str, str] | object, *, now_ns: int | None = None) -> RecordFilter:
    """A ``RecordFilter`` from a URL query (a Starlette ``QueryParams`` or a plain mapping); ``now_ns`` ends a
    ``range=`` (default: the clock)."""
    many = getattr(params, "getlist", None)

    def values(key: str) -> list[str]:
        if callable(many):
            return [str(v) for v in many(key)]
        value = params.get(key) if isinstance(params, Mapping) else None
        return [str(value)] if value is not None else []

    def one(key: str) -> str | None:
        found = [v.strip() for v in values(key) if v.strip()]
        if not found:
            return None
        longest = MAX_TEXT_LENGTH if key == "q" else MAX_VALUE_LENGTH
        if len(found[-1]) > longest:
            raise FilterError(f"{key}=: at most {longest} characters (got {len(found[-1])})")
        return found[-1]

    decision = one("decision")
    if decision is not None and decision not in semconv.DECISIONS:
        raise FilterError(f"decision={decision!r}: use one of {', '.join(semconv.DECISIONS)}")
    limit = one("limit")
    try:
        count = int(limit) if limit is not None else DEFAULT_LIMIT
    except ValueError:
        raise FilterError(f"limit={limit!r}: give a whole number from 1 to {MAX_LIMIT}") from None
    if not 1 <= count <= MAX_LIMIT:
        raise FilterError(f"limit={limit!r}: give a whole number from 1 to {MAX_LIMIT}")
    scores, meta = _items(values("score"), "score"), _items(values("meta"), "meta")
    if len(scores) + len(meta) > MAX_FILTERS:
        raise FilterError(
            f"score= and meta=: at most {MAX_FILTERS} conditions together (got {len(scores) + len(meta)})"
        )
    period = one("range")
    since_ns = _time(one("since"), "since")
    if period is not None:
        if period not in RANGES:
            raise FilterError(f"range={period!r}: use one of {', '.join(RANGES)}, or since= and until=")
        since_ns = max(0, (time.time_ns() if now_ns is None else now_ns) - RANGES[period])
    sort = parse_sort(one("sort"))
    after = one("cursor")
    if after is not None and sort.default:
        raise FilterError("cursor= pages a list in another order than newest first: give its sort= too")
    return RecordFilter(
        range=period,
        sort=sort,
        after=parse_after(sort, after) if after is not None else None,
        since_ns=since_ns,
        until_ns=_time(one("until"), "until"),
        service=one("service"),
        route=one("route"),
        decision=decision,
        scores=tuple(_score(v) for v in scores),
        meta=tuple(_meta(v) for v in meta),
        text=one("q"),
        before=_cursor(one("before")),
        limit=count,
    )


def _items(values: list[str], key: str) -> list[str]:
    """Repeated parameters, each possibly a comma-separated list (the form's one field holds several)."""
    items = [part.strip() for value in values for part in value.split(",") if part.strip()]
    for item in items:
        if len(item) > MAX_VALUE_LENGTH:
            raise FilterError(f"{key}=: at most {MAX_VALUE_LENGTH} characters a condition (got {len(item)})")
    return items


def _digits(value: str) -> bool:
    """Whether ``value`` is a whole number in ASCII digits (``str.isdigit`` accepts "²", which ``int`` refuses)."""
    return value.isascii() and value.isdigit()


def _time(value: str | None, key: str) -> int | None:
    if value is None:
        return None
    hint = f"{key}={value!r}: give an ISO 8601 time (2026-11-24T10:00Z) or ns since the epoch, up to year 2262"
    if _digits(value):
        ns = int(value)
    else:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            ns = int(moment.timestamp() * 1_000_000_000)
        except (ValueError, OverflowError):
            raise FilterError(hint) from None
    if not 0 <= ns <= MAX_TIME_NS:
        raise FilterError(hint)
    return ns


def _score(value: str) -> ScoreBound:
    match = _SCORE.match(value)
    if match is None:
        raise FilterError(f"score={value!r}: write it as metric<value, e.g. hallucination>0.5 or faithfulness<=0.3")
    # Any identifier: G-Eval metrics carry the user's own names. An unknown name matches no record.
    metric, op, number = match.groups()
    try:
        bound = float(number)
    except ValueError:
        raise FilterError(f"score={value!r}: {number!r} is not a number") from None
    return ScoreBound(metric, op, bound)


def _meta(value: str) -> tuple[str, str]:
    key, sep, wanted = value.partition(":")
    if not sep or not key.strip():
        raise FilterError(f"meta={value!r}: write it as key:value, e.g. user:alice")
    return key.strip(), wanted.strip()


def _cursor(value: str | None) -> tuple[int, str] | None:
    if value is None:
        return None
    time_ns, sep, span_id = value.partition(":")
    if not sep or not _digits(time_ns) or int(time_ns) > MAX_TIME_NS or not span_id:
        raise FilterError(f"before={value!r}: a paging cursor is <time_ns>:<span_id>; follow the page's links")
    return int(time_ns), span_id
