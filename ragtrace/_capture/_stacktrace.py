"""The ``exception`` event of a failed call, built so that no exception text leaves unredacted.

The SDK's ``Span.record_exception`` formats ``exception.stacktrace`` with ``traceback.format_exception``,
whose last line is ``str(exc)``, and whose chained exceptions (``__cause__``, ``__context__``), notes and
exception-group members carry their own text: with content capture off the message was blank and the
stacktrace still ended with it (a query with an SSN in it), and with ``redact=`` the message was redacted
and the stacktrace was not. ``exception_attributes`` builds the four attributes itself: the frames as
the standard library formats them (file, line, function and source line: the app's code, not its data),
and every text an exception carries (its ``str``, its notes) passed through the same ``text`` function as
``exception.message``: blank when content is off, redacted when a hook is set.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from ragtrace import semconv

_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"
_MAX_EXCEPTIONS = 64
"""Exceptions formatted at most, over the chain and groups (a cycle or a huge group stays bounded)."""


def qualified_name(exc: BaseException) -> str:
    """``module.QualName`` as the SDK writes ``exception.type`` (the bare name for builtins)."""
    cls = type(exc)
    module = cls.__module__
    return f"{module}.{cls.__qualname__}" if module and module != "builtins" else cls.__qualname__


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or "" when its ``__str__`` raises (the exception still says where it was raised)."""
    try:
        return str(exc)
    except Exception:
        return ""


def exception_attributes(exc: BaseException, text: Callable[[str], str]) -> dict[str, str]:
    """``exception.type``, ``.message``, ``.stacktrace`` and ``.escaped`` of ``exc``, every exception text
    (message, chained exceptions' messages, notes) replaced by ``text(raw)``: "" drops it."""
    message = text(safe_str(exc))
    return {
        semconv.EXCEPTION_TYPE: qualified_name(exc),
        semconv.EXCEPTION_MESSAGE: message,
        semconv.EXCEPTION_STACKTRACE: stacktrace(exc, text),
        semconv.EXCEPTION_ESCAPED: "True",
    }


def stacktrace(exc: BaseException, text: Callable[[str], str]) -> str:
    """``exc`` formatted as ``traceback.format_exception`` does (oldest chained exception first), with
    each exception's own text replaced by ``text(raw)`` (the type named alone when that is "")."""
    return "".join(_chain(exc, text, [_MAX_EXCEPTIONS]))


def _chain(exc: BaseException, text: Callable[[str], str], budget: list[int]) -> list[str]:
    # Followed newest first; printed oldest first, each followed by how the newer one was reached.
    links: list[tuple[BaseException, str]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    link = ""
    while current is not None and id(current) not in seen and budget[0] > 0:
        seen.add(id(current))
        budget[0] -= 1
        links.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, _CAUSE
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, _CONTEXT
        else:
            current = None
    lines: list[str] = []
    for item, how in reversed(links):
        lines.extend(_one(item, text, budget))
        if how:
            lines.append(how)
    return lines


def _one(exc: BaseException, text: Callable[[str], str], budget: list[int]) -> list[str]:
    lines: list[str] = []
    if exc.__traceback__ is not None:
        lines.append("Traceback (most recent call last):\n")
        lines.extend(traceback.format_tb(exc.__traceback__))
    shown = text(safe_str(exc))
    lines.append(f"{qualified_name(exc)}: {shown}\n" if shown else f"{qualified_name(exc)}\n")
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, (list, tuple)):
        for note in notes:
            shown_note = text(note) if isinstance(note, str) else ""
            if shown_note:
                lines.append(shown_note + "\n")
    # An exception group (3.11+), read by its shape so that older Pythons import this module.
    members = getattr(exc, "exceptions", None)
    if isinstance(members, tuple) and all(isinstance(m, BaseException) for m in members):
        for number, member in enumerate(members, 1):
            if budget[0] <= 0:
                lines.append("+---------------- ... ----------------\n")
                break
            lines.append(f"+---------------- {number} ----------------\n")
            # A member's lines (a frame is several) each marked as inside the group.
            member_text = "".join(_chain(member, text, budget))
            lines.extend("| " + part for part in member_text.splitlines(keepends=True))
    return lines
