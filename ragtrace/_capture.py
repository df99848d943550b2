"""Capture plumbing shared by the decorators and the scoring processor.

Three things live here, each a contract other modules code against:

* ``CaptureSettings`` and ``set_settings`` / ``get_settings``: what the decorators may export and how
  much they keep (privacy switch, redaction hook, size bounds).
* ``RECORDS``: the bounded hand-off of each ended RAG span's ``RagRecord`` to the scoring processor.
* ``set_tracer_provider`` / ``get_tracer``: which TracerProvider the decorators use, without touching
  the global one (``configure()`` and tests inject theirs here).

It also holds the two text functions every captured value goes through (``prepare_text`` then
``export_text``), so the export bound, the record bound and redaction are applied in one place.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from opentelemetry import trace

from ragtrace import semconv
from ragtrace._record import RagRecord
from ragtrace.environment_variables import (
    RAGTRACE_CAPTURE_CONTENT,
    RAGTRACE_MAX_ATTRIBUTE_LENGTH,
    RAGTRACE_MAX_RECORD_CHUNK_LENGTH,
    RAGTRACE_MAX_RECORD_CHUNKS,
    ConfigurationError,
    read_bool,
    read_int,
)

__all__ = [
    "RECORDS",
    "REDACTION_FAILED",
    "REDACT_MARGIN",
    "CaptureSettings",
    "RecordStore",
    "export_text",
    "get_settings",
    "get_tracer",
    "get_tracer_provider",
    "prepare_text",
    "set_settings",
    "set_tracer_provider",
]

_log = logging.getLogger("ragtrace")

REDACT_MARGIN = 1024
"""Characters kept beyond the capture bound before the ``redact`` hook runs, then cut again.

A long text is cut before redaction so a 10 MB chunk costs a bounded amount of work; the margin
lets a pattern that straddles the bound (a card number, an e-mail) still be seen whole by the hook
and not leak as a fragment. A pattern cut by that first cut ends up in the last ``REDACT_MARGIN``
characters of the hook's result, which are never kept (see ``prepare_text``)."""

REDACTION_FAILED = "[ragtrace: redaction failed]"
"""Replaces a text when the ``redact`` hook raised or did not return a str: unredacted text is never kept."""


# --------------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    """What the decorators export and keep.

    ``capture_content``: when False, no query, chunk, answer or reference text (and no chunk metadata)
    is exported on spans; the ``RagRecord`` handed to scoring still holds the (redacted) text.
    ``redact``: a ``str -> str`` hook run on every query, chunk, answer and reference before both export
    and the record; if it raises, the text is replaced by ``REDACTION_FAILED``.
    ``max_attribute_length``: exported text attributes are cut at this many characters and marked with
    ``semconv.TRUNCATION_MARKER``. ``max_record_chunk_length``: each text kept in the record is cut
    here. ``max_record_chunks``: at most this many chunks per span are kept and exported (the count of
    all chunks still goes out as ``ragtrace.chunks.count``).

    Invalid values raise ``ConfigurationError`` at construction.
    """

    capture_content: bool = True
    redact: Callable[[str], str] | None = None
    max_attribute_length: int = 8192
    max_record_chunk_length: int = 65536
    max_record_chunks: int = 256
    keep_length: int = field(init=False, repr=False, compare=False)
    """Characters of a text kept in memory: enough for both the export and the record bound."""
    read_length: int = field(init=False, repr=False, compare=False)
    """Characters of a text read before ``prepare_text``: the keep length, the redaction margin when a
    hook is set, and one more so a text that was cut can be told from one that fits."""

    def __post_init__(self) -> None:
        if not isinstance(self.capture_content, bool):
            raise ConfigurationError(f"capture_content={self.capture_content!r} is not a bool: pass True or False")
        if self.redact is not None and not callable(self.redact):
            raise ConfigurationError(f"redact={self.redact!r} is not callable: pass a function str -> str, or None")
        for name, minimum in (
            ("max_attribute_length", 1),
            ("max_record_chunk_length", 1),
            ("max_record_chunks", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise ConfigurationError(f"{name}={value!r} is invalid: pass a whole number >= {minimum}")
        # Derived once here: they are read for every captured text on the request path.
        keep = max(self.max_attribute_length, self.max_record_chunk_length)
        object.__setattr__(self, "keep_length", keep)
        object.__setattr__(self, "read_length", keep + (REDACT_MARGIN if self.redact is not None else 0) + 1)

    @classmethod
    def from_env(cls, **overrides: Any) -> CaptureSettings:
        """Settings from the ``RAGTRACE_*`` capture variables; keyword arguments win over variables.

        Raises ``ConfigurationError`` for an unknown keyword or a malformed variable.
        """
        known = {f.name for f in fields(cls) if f.init}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigurationError(f"unknown capture setting(s) {unknown}: use one of {sorted(known)}")
        defaults = cls()
        values: dict[str, Any] = {
            "capture_content": read_bool(RAGTRACE_CAPTURE_CONTENT, defaults.capture_content),
            "max_attribute_length": read_int(RAGTRACE_MAX_ATTRIBUTE_LENGTH, defaults.max_attribute_length, minimum=1),
            "max_record_chunk_length": read_int(
                RAGTRACE_MAX_RECORD_CHUNK_LENGTH, defaults.max_record_chunk_length, minimum=1
            ),
            "max_record_chunks": read_int(RAGTRACE_MAX_RECORD_CHUNKS, defaults.max_record_chunks, minimum=0),
        }
        values.update(overrides)
        return replace(defaults, **values)


_settings: CaptureSettings | None = None
_settings_lock = threading.Lock()


def set_settings(settings: CaptureSettings | None) -> None:
    """Make ``settings`` the capture settings of every decorator (``None``: back to the environment).

    Takes effect for calls that start afterwards; a call in flight keeps the settings it began with.
    """
    global _settings
    if settings is not None and not isinstance(settings, CaptureSettings):
        raise ConfigurationError(f"set_settings() takes a CaptureSettings, not {type(settings).__name__}")
    with _settings_lock:
        _settings = settings


def get_settings() -> CaptureSettings:
    """The current capture settings; read once from the environment when none were set.

    Raises ``ConfigurationError`` when a ``RAGTRACE_*`` capture variable is malformed (the decorators
    call this when they decorate, so the mistake surfaces at import, not inside a request).
    """
    global _settings
    current = _settings
    if current is not None:
        return current
    with _settings_lock:
        if _settings is None:
            _settings = CaptureSettings.from_env()
        return _settings


# --------------------------------------------------------------------------------------------------
# Text: redaction and the two bounds
# --------------------------------------------------------------------------------------------------


def _redact(hook: Callable[[str], str], text: str) -> str:
    try:
        result = hook(text)
    except Exception:
        _log.warning("ragtrace: the redact hook raised; the text is replaced", exc_info=True)
        return REDACTION_FAILED
    if not isinstance(result, str):
        _log.warning("ragtrace: the redact hook returned %s, not str; the text is replaced", type(result).__name__)
        return REDACTION_FAILED
    return result


def prepare_text(text: str, settings: CaptureSettings) -> tuple[str, bool]:
    """Redact and cut ``text`` to ``settings.keep_length``; return it and whether anything was cut.

    This is the one form a captured text is kept in: the record takes a prefix of it, the export
    another (see ``export_text``). Cost is bounded by the keep length, whatever the input size.

    With a hook, a text longer than the keep length plus ``REDACT_MARGIN`` is cut there, redacted, and
    the last ``REDACT_MARGIN`` characters of the hook's result are dropped: a pattern (of at most
    ``REDACT_MARGIN`` characters) cut in two by that first cut is never kept, even when the hook
    shortened the text before it. The text kept is then shorter than the keep length by as much as the
    hook shortened it.
    """
    keep = settings.keep_length
    hook = settings.redact
    cut = False
    if hook is not None:
        window = keep + REDACT_MARGIN
        if len(text) > window:
            text, cut = _redact(hook, text[:window]), True
            if text is not REDACTION_FAILED:
                # A pattern straddling the window's end reached the hook as a fragment it could not
                # match, and stays unredacted at the very end of its result. When the hook shortened
                # the text, that fragment would slide inside ``keep``: nothing of the result's last
                # REDACT_MARGIN characters is kept, so it cannot (the text is shorter than ``keep``).
                safe = max(len(text) - REDACT_MARGIN, 0)
                return text[: min(keep, safe)], True
        else:
            text = _redact(hook, text)
    if len(text) > keep:
        text, cut = text[:keep], True
    return text, cut


def export_text(text: str, cut: bool, limit: int) -> tuple[str, bool]:
    """The exported form of a prepared text: cut at ``limit`` and marked when anything is missing."""
    if len(text) > limit:
        return text[:limit] + semconv.TRUNCATION_MARKER, True
    if cut:
        return text + semconv.TRUNCATION_MARKER, True
    return text, False


# --------------------------------------------------------------------------------------------------
# The hand-off of records to the scoring processor
# --------------------------------------------------------------------------------------------------


class RecordStore:
    """A bounded, thread-safe map ``(trace_id, span_id) -> RagRecord``.

    The RAG decorator ``put``s a record just before it ends the span; the scoring processor ``take``s it
    in ``on_end``. Nothing is stored while no processor holds the store (``acquire``/``release``), so an
    app without a processor never accumulates memory. When full, the oldest record is evicted and
    counted in ``evicted``: a record nobody took (a span dropped before the processor) cannot leak.
    """

    def __init__(self, maxsize: int = 4096) -> None:
        self._check(maxsize)
        self._maxsize = maxsize
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[int, int], RagRecord] = OrderedDict()
        self._holders = 0
        self._evicted = 0

    @staticmethod
    def _check(maxsize: int) -> None:
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
            raise ConfigurationError(f"RecordStore maxsize={maxsize!r} is invalid: pass a whole number >= 1")

    @property
    def maxsize(self) -> int:
        """Most records held at once."""
        return self._maxsize

    @property
    def evicted(self) -> int:
        """Records evicted (oldest first) because the store was full, since creation."""
        return self._evicted

    @property
    def holders(self) -> int:
        """How many processors currently hold the store."""
        return self._holders

    @property
    def active(self) -> bool:
        """True while at least one processor holds the store (``put`` stores only then)."""
        return self._holders > 0

    def __len__(self) -> int:
        return len(self._items)

    def resize(self, maxsize: int) -> None:
        """Change the bound; evicts the oldest records when shrinking below the current size."""
        self._check(maxsize)
        with self._lock:
            self._maxsize = maxsize
            self._evict_over_bound()

    def acquire(self) -> None:
        """Register a consumer (a processor calls this when it is constructed)."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """Unregister a consumer (on processor shutdown). The last one out empties the store."""
        with self._lock:
            if self._holders > 0:
                self._holders -= 1
            if self._holders == 0:
                self._items.clear()

    def put(self, trace_id: int, span_id: int, record: RagRecord) -> None:
        """Keep ``record`` for the span; a no-op while nobody holds the store."""
        if self._holders == 0:  # racy read on purpose: a put that loses the race is dropped harmlessly
            return
        with self._lock:
            if self._holders == 0:
                return
            key = (trace_id, span_id)
            self._items[key] = record
            self._items.move_to_end(key)
            self._evict_over_bound()

    def take(self, trace_id: int, span_id: int) -> RagRecord | None:
        """Remove and return the span's record, or ``None`` when there is none (see docs/decorators.md)."""
        with self._lock:
            return self._items.pop((trace_id, span_id), None)

    def _evict_over_bound(self) -> None:
        while len(self._items) > self._maxsize:
            self._items.popitem(last=False)
            self._evicted += 1


RECORDS = RecordStore()
"""The process-wide record store the RAG decorator fills and the scoring processor drains."""


# --------------------------------------------------------------------------------------------------
# Which TracerProvider the decorators use
# --------------------------------------------------------------------------------------------------


class _TracerState:
    __slots__ = ("provider", "tracer")

    def __init__(self) -> None:
        self.provider: trace.TracerProvider | None = None
        self.tracer: trace.Tracer | None = None


_tracer_state = _TracerState()
_tracer_lock = threading.Lock()


def tracer_from(provider: trace.TracerProvider | None) -> trace.Tracer:
    """A ragtrace tracer from ``provider``, or from the global provider when ``None``.

    With the global provider this is the OTel API's proxy tracer, which follows a provider set later.
    """
    if provider is None:
        return trace.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    return provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)


def set_tracer_provider(provider: trace.TracerProvider | None) -> None:
    """Point every decorator without its own ``tracer_provider=`` at ``provider``; ``None``: the global one.

    Does not touch the OpenTelemetry global provider, so ``configure()`` and tests can inject theirs.
    """
    if provider is not None and not isinstance(provider, trace.TracerProvider):
        raise ConfigurationError(
            f"set_tracer_provider() takes an opentelemetry TracerProvider, not {type(provider).__name__}"
        )
    tracer = tracer_from(provider)
    with _tracer_lock:
        _tracer_state.provider = provider
        _tracer_state.tracer = tracer


def get_tracer_provider() -> trace.TracerProvider | None:
    """The provider set with ``set_tracer_provider``, or ``None`` when the decorators use the global one."""
    return _tracer_state.provider


def get_tracer() -> trace.Tracer:
    """The tracer of the decorators that have no ``tracer_provider=`` of their own."""
    tracer = _tracer_state.tracer
    if tracer is None:
        with _tracer_lock:
            if _tracer_state.tracer is None:
                _tracer_state.tracer = tracer_from(None)
            tracer = _tracer_state.tracer
    return tracer


def _after_fork_in_child() -> None:
    # A lock another thread held when the app forked stays held forever in the child, where that
    # thread does not exist: the child starts with fresh locks (the sampler and worker do the same).
    global _settings_lock, _tracer_lock
    _settings_lock = threading.Lock()
    _tracer_lock = threading.Lock()
    RECORDS._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
