"""Option objects: the settings of ``configure()``, ``instrument()`` and ``ScoringSpanProcessor`` as values.

One frozen dataclass per part of ragtrace a setting belongs to:

* ``ScoringOptions``: who judges, which metrics, who is scored (the ``Sampler``) and the worker's bounds;
* ``CaptureOptions``: what the decorators export and keep (``configure()`` and ``instrument()``: the
  processor itself captures nothing);
* ``JoinOptions``: the RAG calls other instrumentations traced (``ragtrace._foreign``).

Fields are keyword-only (new ones may come in any order); a field left ``None`` is not given. ``resolve()``
takes each field given, else its ``RAGTRACE_*`` variable, else the default, as ``ragtrace._settings`` does
for every setting, and returns the settings in force (``ScoringSettings``, ``CaptureSettings``,
``JoinSettings``). A value given is checked when the object is built, with the ``ConfigurationError`` its
keyword gives (``queue_size=0 is invalid: pass a whole number >= 1``); the judge and the metrics are checked
when the options are resolved, since checking them builds them. A wrong variable warns once and its default
is used, as everywhere.

The flat keywords (``queue_size=``, ``redact=``, ``join_max_traces=``, ...) are shorthands for these
fields, merged into them in one place: ``ragtrace._shorthands``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ragtrace import _settings as settings
from ragtrace import environment_variables as env
from ragtrace._capture import CaptureSettings
from ragtrace._foreign import JoinSettings
from ragtrace._foreign._join_settings import MAX_BYTES, MAX_SECONDS, MAX_TRACES
from ragtrace._sampling import Rule, Sampler, SpanPredicate

if TYPE_CHECKING:
    from ragtrace.judges._base import Judge
    from ragtrace.metrics._base import Metric
    from ragtrace.metrics._suite import Suite

__all__ = ["CaptureOptions", "JoinOptions", "ScoringOptions", "ScoringSettings"]

QUEUE_SIZE: Final = settings.whole_number("queue_size", env.RAGTRACE_QUEUE_SIZE, default=2048, minimum=1)
MAX_CONCURRENCY: Final = settings.whole_number("max_concurrency", env.RAGTRACE_MAX_CONCURRENCY, default=8, minimum=1)
HOLD_TIMEOUT: Final = settings.seconds("hold_timeout", env.RAGTRACE_HOLD_TIMEOUT, default=30.0)
SHUTDOWN_TIMEOUT: Final = settings.seconds("shutdown_timeout", env.RAGTRACE_SHUTDOWN_TIMEOUT, default=30.0)
_BOUNDS: Final = (QUEUE_SIZE, MAX_CONCURRENCY, HOLD_TIMEOUT, SHUTDOWN_TIMEOUT)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringOptions:
    """How the scoring processor scores; every field optional (``None``: the variable, else the default).

    ``judge``: a ``ragtrace.judges.Judge``, or ``"auto"``, ``"openai"``, ``"offline"`` or ``"tiered"`` (the
    ``RAGTRACE_JUDGE`` values, any case); default ``default_judge()``. The processor owns the judge and closes
    it at shutdown. ``metrics``: metric names and/or ``Metric`` objects (``RAGTRACE_METRICS``, else the
    production suite). ``sampler``: who is scored (default ``Sampler()``, which reads ``RAGTRACE_SAMPLE_*``);
    a sampler keeps its budget and throttle counts, so options shared by two processors share them.
    ``queue_size``, ``max_concurrency``, ``hold_timeout``, ``shutdown_timeout``: the worker's bounds
    (``RAGTRACE_QUEUE_SIZE``, ...; see docs/configuration.md).
    """

    judge: Judge | str | None = None
    metrics: Sequence[str | Metric] | None = None
    sampler: Sampler | None = None
    queue_size: int | None = None
    max_concurrency: int | None = None
    hold_timeout: float | None = None
    shutdown_timeout: float | None = None

    def __post_init__(self) -> None:
        for setting in _BOUNDS:
            value = getattr(self, setting.name)
            if value is not None:
                object.__setattr__(self, setting.name, setting.check(setting.name, value))
        if isinstance(self.metrics, list):
            # A value: the caller's list changing afterwards must not change the options.
            object.__setattr__(self, "metrics", tuple(self.metrics))

    def resolve(self) -> ScoringSettings:
        """The settings in force: each field given, else its variable, else the default; the suite and the
        judge built. Raises ``ConfigurationError`` naming the fix for an unknown metric, a judge that cannot
        be built, or a dollar budget the judge's model has no price for."""
        from ragtrace.judges._default import as_judge
        from ragtrace.metrics._registry import configured_suite

        sampler = self.sampler if self.sampler is not None else Sampler()
        queue_size = QUEUE_SIZE.resolve(self.queue_size)
        max_concurrency = MAX_CONCURRENCY.resolve(self.max_concurrency)
        hold_timeout = HOLD_TIMEOUT.resolve(self.hold_timeout)
        shutdown_timeout = SHUTDOWN_TIMEOUT.resolve(self.shutdown_timeout)
        suite = configured_suite(self.metrics)  # fails now, not in the worker, on an unknown metric
        # The judge last of what can fail on a setting: it may open connections that nothing would close.
        judge = as_judge(self.judge)
        sampler.check_judge(judge.name)
        return ScoringSettings(judge, suite, sampler, queue_size, max_concurrency, hold_timeout, shutdown_timeout)


@dataclass(frozen=True, slots=True)
class ScoringSettings:
    """``ScoringOptions`` resolved: every value in force and checked, the judge and the suite built."""

    judge: Judge
    suite: Suite
    sampler: Sampler
    queue_size: int
    max_concurrency: int
    hold_timeout: float
    shutdown_timeout: float

    def options(self) -> ScoringOptions:
        """These settings as options with every field given, which resolve to the same judge, metrics and
        sampler, reading no variable. ``configure()`` resolves early, so that a mistake raises before anything
        starts, and hands the processor these: the judge is built once."""
        return ScoringOptions(
            judge=self.judge,
            metrics=self.suite.metrics,
            sampler=self.sampler,
            queue_size=self.queue_size,
            max_concurrency=self.max_concurrency,
            hold_timeout=self.hold_timeout,
            shutdown_timeout=self.shutdown_timeout,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CaptureOptions:
    """What the decorators export and keep; every field optional (``None``: the variable, else the default).

    ``capture_content`` (``RAGTRACE_CAPTURE_CONTENT``, default True): False exports no query, chunk or answer
    text. ``redact``: a ``str -> str`` hook run on every text before export and scoring (default none).
    ``max_attribute_length`` (8192), ``max_record_chunk_length`` (65536), ``max_record_chunks`` (256): the
    bounds of what is exported and kept (``RAGTRACE_MAX_*``). See ``ragtrace._capture.CaptureSettings``.
    """

    capture_content: bool | None = None
    redact: Callable[[str], str] | None = None
    max_attribute_length: int | None = None
    max_record_chunk_length: int | None = None
    max_record_chunks: int | None = None

    def __post_init__(self) -> None:
        CaptureSettings(**self._given())  # the defaults stand in for the rest: no variable is read here

    def _given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def resolve(self) -> CaptureSettings:
        """The capture settings in force: each field given, else its variable, else the default."""
        return CaptureSettings.from_env(**self._given())


_JOIN_DEFAULTS: Final = JoinSettings()


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinOptions:
    """How the processor joins the RAG calls other instrumentations traced (OpenInference, OpenLLMetry, GenAI
    conventions); every field optional (``None``: the variable, else the default).

    ``recognize`` (``RAGTRACE_RECOGNIZE``, default True): False scores only ragtrace's own RAG spans.
    ``rag_roots`` (``RAGTRACE_RAG_ROOTS``): rules naming the spans that are RAG roots, ``Rule`` objects or
    ``span -> bool`` callables; kept as a tuple of ``Rule``. ``max_traces`` (1024), ``max_bytes`` (64 MiB),
    ``max_seconds`` (300): the bounds of what is gathered at once (``RAGTRACE_JOIN_MAX_*``). See
    docs/integrations.md.
    """

    recognize: bool | None = None
    rag_roots: Iterable[Rule | SpanPredicate] | None = None
    max_traces: int | None = None
    max_bytes: int | None = None
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        # Checked with the defaults standing in for what is not given, so no variable is read here.
        checked = JoinSettings.resolve(
            recognize=_or(self.recognize, _JOIN_DEFAULTS.recognize),
            rag_roots=_or(self.rag_roots, ()),
            max_traces=_or(self.max_traces, MAX_TRACES.default),
            max_bytes=_or(self.max_bytes, MAX_BYTES.default),
            max_seconds=_or(self.max_seconds, MAX_SECONDS.default),
        )
        if self.rag_roots is not None:
            # Rules, in a tuple: a generator given would be used up by the first resolve.
            object.__setattr__(self, "rag_roots", checked.roots)
        if self.max_seconds is not None:
            object.__setattr__(self, "max_seconds", checked.max_seconds)

    def resolve(self) -> JoinSettings:
        """The join settings in force: each field given, else its variable, else the default."""
        return JoinSettings.resolve(
            recognize=self.recognize,
            rag_roots=self.rag_roots,
            max_traces=self.max_traces,
            max_bytes=self.max_bytes,
            max_seconds=self.max_seconds,
        )


def _or(value: _T | None, default: _T) -> _T:
    return default if value is None else value
