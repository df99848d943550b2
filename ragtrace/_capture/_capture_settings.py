"""Capture settings: what the decorators may export and how much they keep, and the current ones.

``CaptureSettings`` is checked at construction; ``set_settings``/``get_settings`` hold the settings in
force (``configure()`` and tests set them; otherwise they are read once from ``RAGTRACE_*``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ragtrace._capture._text import REDACT_MARGIN
from ragtrace._fork import at_fork_in_child
from ragtrace.environment_variables import (
    RAGTRACE_CAPTURE_CONTENT,
    RAGTRACE_MAX_ATTRIBUTE_LENGTH,
    RAGTRACE_MAX_RECORD_CHUNK_LENGTH,
    RAGTRACE_MAX_RECORD_CHUNKS,
    ConfigurationError,
    read_bool,
    read_int,
)


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
            # A value that does not parse turns capture off: exporting text someone meant to keep in is
            # the mistake that cannot be taken back.
            "capture_content": read_bool(RAGTRACE_CAPTURE_CONTENT, defaults.capture_content, fallback=False),
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


@at_fork_in_child
def _renew_lock_in_child() -> None:
    # A lock another thread held when the app forked would stay held forever in the child.
    global _settings_lock
    _settings_lock = threading.Lock()
