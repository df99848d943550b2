"""The two text functions every captured value goes through: ``prepare_text`` (redact, cut to what is
kept) then ``export_text`` (cut to the export bound, marked), so the bounds and redaction apply in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ragtrace import semconv

if TYPE_CHECKING:
    from ragtrace._capture._capture_settings import CaptureSettings

_log = logging.getLogger("ragtrace")

REDACT_MARGIN = 1024
"""Characters kept beyond the capture bound before the ``redact`` hook runs, then cut again.

A long text is cut before redaction so a 10 MB chunk costs a bounded amount of work; the margin
lets a pattern that straddles the bound (a card number, an e-mail) still be seen whole by the hook
and not leak as a fragment. A pattern cut by that first cut ends up in the last ``REDACT_MARGIN``
characters of the hook's result, which are never kept (see ``prepare_text``)."""

REDACTION_FAILED = "[ragtrace: redaction failed]"
"""Replaces a text when the ``redact`` hook raised or did not return a str: unredacted text is never kept."""


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
