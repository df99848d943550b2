"""The flat keywords of ``configure()``, ``instrument()`` and ``ScoringSpanProcessor``: shorthands for the
option objects' fields (``ragtrace._options``), declared once and merged into the objects in one place.

``queue_size=5`` is ``scoring=ScoringOptions(queue_size=5)``, ``redact=f`` is
``capture=CaptureOptions(redact=f)``, ``join_max_traces=10`` is ``join=JoinOptions(max_traces=10)``; the
sampling keywords (``sample_rate=``, ``metric_rates=``, ``always=``, ``never=``, ``throttle=``,
``budget_tokens=``, ``budget_usd=``, ``prices=``) build the ``Sampler`` of ``ScoringOptions.sampler``.

The lists are ``TypedDict``s: the three signatures take ``**shorthands: Unpack[...]``, so a type checker
checks every keyword as it did when each signature spelled them out, and ``merge`` checks the same lists at
run time (an unknown keyword is the ``TypeError`` Python gives). A keyword left ``None`` is not given, as
before. A keyword given together with an option object that sets the same field raises
``ConfigurationError`` naming both: which of the two was meant cannot be told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, TypedDict, TypeVar

from ragtrace._exceptions import ConfigurationError
from ragtrace._options import CaptureOptions, JoinOptions, ScoringOptions
from ragtrace._sampling import Sampler
from ragtrace._sampling._sampler import BUDGET_TOKENS, BUDGET_USD, RATE, THROTTLE
from ragtrace._settings import Setting

if TYPE_CHECKING:
    from ragtrace._sampling import Price, Rule, SpanPredicate
    from ragtrace.judges._base import Judge
    from ragtrace.metrics._base import Metric

__all__ = ["PROCESSOR", "SETUP", "Options", "ProcessorKeywords", "SetupKeywords", "merge"]


class ScoringKeywords(TypedDict, total=False):
    """Shorthands for the fields of ``ScoringOptions``, by the same names."""

    judge: Judge | str | None
    metrics: Sequence[str | Metric] | None
    sampler: Sampler | None
    queue_size: int | None
    max_concurrency: int | None
    hold_timeout: float | None
    shutdown_timeout: float | None


class SamplingKeywords(TypedDict, total=False):
    """Shorthands for ``sampler=Sampler(...)``: the arguments of ``Sampler``, by the names in ``_SAMPLING``."""

    sample_rate: float | None
    metric_rates: Mapping[str, float] | None
    always: Iterable[Rule | SpanPredicate] | None
    never: Iterable[Rule | SpanPredicate] | None
    throttle: int | None
    budget_tokens: int | None
    budget_usd: float | None
    prices: Mapping[str, Price | tuple[float, float]] | None


class JoinKeywords(TypedDict, total=False):
    """Shorthands for the fields of ``JoinOptions``: ``recognize``, ``rag_roots``, and ``join_`` + a bound."""

    recognize: bool | None
    rag_roots: Iterable[Rule | SpanPredicate] | None
    join_max_traces: int | None
    join_max_bytes: int | None
    join_max_seconds: float | None


class CaptureKeywords(TypedDict, total=False):
    """Shorthands for the fields of ``CaptureOptions``, by the same names."""

    capture_content: bool | None
    redact: Callable[[str], str] | None
    max_attribute_length: int | None
    max_record_chunk_length: int | None
    max_record_chunks: int | None


class ProcessorKeywords(ScoringKeywords, SamplingKeywords, JoinKeywords, total=False):
    """The shorthands ``ScoringSpanProcessor`` takes."""


class SetupKeywords(ProcessorKeywords, CaptureKeywords, total=False):
    """The shorthands ``configure()`` and ``instrument()`` take: the processor's and the capture ones."""


PROCESSOR: Final = frozenset(ProcessorKeywords.__optional_keys__)
SETUP: Final = frozenset(SetupKeywords.__optional_keys__)

_SAMPLING: Final = {
    "sample_rate": "rate",
    "metric_rates": "metric_rates",
    "always": "always",
    "never": "never",
    "throttle": "throttle_per_minute",
    "budget_tokens": "budget_tokens_per_day",
    "budget_usd": "budget_usd_per_day",
    "prices": "prices",
}
"""Each sampling keyword and the ``Sampler`` argument it is."""

_SAMPLING_CHECKS: Final[Mapping[str, Setting[Any]]] = {
    "sample_rate": RATE,
    "throttle": THROTTLE,
    "budget_tokens": BUDGET_TOKENS,
    "budget_usd": BUDGET_USD,
}
"""The sampling keywords whose name differs from the ``Sampler`` argument's: checked here, so that a wrong value
names the keyword the caller wrote (``sample_rate='abc' is invalid``), not the argument it becomes (``rate=``)."""

_FIELDS: Final = {
    **{name: ("scoring", name) for name in ScoringKeywords.__optional_keys__},
    **{name: ("join", name.removeprefix("join_")) for name in JoinKeywords.__optional_keys__},
    **{name: ("capture", name) for name in CaptureKeywords.__optional_keys__},
}
"""Each keyword that is a field of an option object: (the object's keyword, the field)."""

_O = TypeVar("_O", ScoringOptions, JoinOptions, CaptureOptions)


@dataclass(frozen=True, slots=True)
class Options:
    """The option objects of one call, its shorthand keywords merged in."""

    scoring: ScoringOptions
    join: JoinOptions
    capture: CaptureOptions


def merge(
    caller: str,
    shorthands: Mapping[str, Any],
    accepted: frozenset[str],
    *,
    scoring: ScoringOptions | None = None,
    join: JoinOptions | None = None,
    capture: CaptureOptions | None = None,
) -> Options:
    """The option objects ``caller`` (``"configure()"``) was given, with its ``shorthands`` merged in.

    ``accepted``: the keywords ``caller`` takes (``SETUP``, ``PROCESSOR``); another raises ``TypeError``, as an
    unknown keyword does. A keyword also set in its option object, a sampler given with sampling keywords,
    or an option object of the wrong type raises ``ConfigurationError`` naming the fix; so does a wrong value,
    naming the keyword as the caller wrote it (``sample_rate='abc' is invalid: pass a number between 0 and 1``).
    """
    unknown = sorted(set(shorthands) - accepted)
    if unknown:
        raise TypeError(f"{caller} got an unexpected keyword argument {unknown[0]!r}")
    given = {name: value for name, value in shorthands.items() if value is not None}
    scoring = _instance("scoring", scoring, ScoringOptions)
    join = _instance("join", join, JoinOptions)
    capture = _instance("capture", capture, CaptureOptions)
    objects: dict[str, ScoringOptions | JoinOptions | CaptureOptions] = {
        "scoring": scoring,
        "join": join,
        "capture": capture,
    }
    merged: dict[str, dict[str, Any]] = {keyword: {} for keyword in objects}
    for name, value in given.items():
        if name not in _FIELDS:
            continue
        keyword, field = _FIELDS[name]
        if getattr(objects[keyword], field) is not None:
            option_type = type(objects[keyword]).__name__
            raise ConfigurationError(
                f"{caller}: {field} is given twice, as {name}= and in {keyword}={option_type}({field}=...): "
                "pass it once"
            )
        merged[keyword][field] = value
    sampling = {_SAMPLING[name]: value for name, value in given.items() if name in _SAMPLING}
    if sampling:
        if "sampler" in merged["scoring"] or scoring.sampler is not None:
            raise ConfigurationError(
                f"{caller}: pass either a sampler (sampler= or ScoringOptions(sampler=...)) or the sampling "
                f"arguments ({', '.join(_SAMPLING)}), not both: give them to Sampler(...)"
            )
        for name, value in given.items():
            if name in _SAMPLING_CHECKS:
                _SAMPLING_CHECKS[name].check(name, value)
        merged["scoring"]["sampler"] = Sampler(**sampling)
    return Options(
        scoring=_with(scoring, merged["scoring"]),
        join=_with(join, merged["join"]),
        capture=_with(capture, merged["capture"]),
    )


def _instance(keyword: str, value: _O | None, option_type: type[_O]) -> _O:
    if value is None:
        return option_type()
    if not isinstance(value, option_type):
        raise ConfigurationError(
            f"{keyword}={value!r} is not a {option_type.__name__}: pass ragtrace.{option_type.__name__}(...)"
        )
    return value


def _with(options: _O, values: dict[str, Any]) -> _O:
    # replace() builds a new object, so the shorthands are checked as the object's own fields are.
    return replace(options, **values) if values else options
