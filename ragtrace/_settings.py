"""One settings resolver: the argument, else its ``RAGTRACE_*`` variable, else the default; then one check.

The processor, the sampler, the judge and the collector's scorer resolve their numeric settings here, so
they agree on precedence and on how a mistake reads. A ``Setting`` describes one::

    QUEUE_SIZE = whole_number("queue_size", env.RAGTRACE_QUEUE_SIZE, default=2048, minimum=1)
    self.queue_size = QUEUE_SIZE.resolve(queue_size)   # the argument, or None when not given

``resolve(value)``: a given argument is checked and returned; ``None`` reads the variable (a malformed
one raises from its ``environment_variables.read_*`` parser), then checks what it read, else returns the
default. A value that fails the check raises ``ConfigurationError`` naming the fix: ``queue_size=0 is
invalid: pass a whole number >= 1`` for an argument, ``RAGTRACE_HOLD_TIMEOUT='inf' is invalid: set it to
a finite number of seconds > 0`` for a variable. ``check(name, value)`` applies the same check to a value
that has no variable of its own (``metric_rates['faithfulness']``).

The constructors cover the kinds in use: ``whole_number``, ``seconds``, ``rate``, ``limit`` (a whole
number or ``None`` for no limit) and ``dollars``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ragtrace import environment_variables as env
from ragtrace._exceptions import ConfigurationError

__all__ = ["Setting", "dollars", "limit", "rate", "seconds", "whole_number"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    """One setting: ``name`` (the argument), ``variable`` (or None), how to ``read`` it, the ``default``,
    and ``valid``, with ``expect`` saying in words what a valid value is. ``convert`` normalises a valid
    value (``float(2)`` for seconds)."""

    name: str
    variable: str | None
    default: T
    read: Callable[[str], object]
    valid: Callable[[object], bool]
    expect: str
    convert: Callable[[object], T]

    def resolve(self, value: T | None) -> T:
        """The argument if given, else the variable if set, else the default; checked (see the module docstring)."""
        if value is not None:
            return self.check(self.name, value)
        if self.variable is None:
            return self.default
        read = self.read(self.variable)
        if read is None:
            return self.default
        if not self.valid(read):
            raise ConfigurationError(f"{self.variable}={read!r} is invalid: set it to {self.expect}")
        return self.convert(read)

    def check(self, name: str, value: object) -> T:
        """``value`` converted, or ``ConfigurationError`` naming ``name`` and what a valid value is."""
        if not self.valid(value):
            raise ConfigurationError(f"{name}={value!r} is invalid: pass {self.expect}")
        return self.convert(value)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def whole_number(name: str, variable: str | None, *, default: int, minimum: int) -> Setting[int]:
    """A whole number >= ``minimum`` (``queue_size``, ``max_concurrency``)."""
    return Setting(
        name,
        variable,
        default,
        read=lambda v: env.read_int(v, None, minimum=minimum),
        valid=lambda x: _is_whole(x) and x >= minimum,  # type: ignore[operator]
        expect=f"a whole number >= {minimum}",
        convert=int,  # type: ignore[arg-type]
    )


def seconds(name: str, variable: str | None, *, default: float) -> Setting[float]:
    """A finite number of seconds > 0: an infinite hold or shutdown would keep spans, and the exit, waiting."""
    return Setting(
        name,
        variable,
        default,
        read=lambda v: env.read_float(v, None, minimum=0),
        valid=lambda x: _is_number(x) and 0 < x < math.inf,  # type: ignore[operator]
        expect="a finite number of seconds > 0",
        convert=float,  # type: ignore[arg-type]
    )


def rate(name: str, variable: str | None, *, default: float) -> Setting[float]:
    """A sampling rate: a number between 0 and 1."""
    return Setting(
        name,
        variable,
        default,
        read=lambda v: env.read_float(v, None, minimum=0, maximum=1),
        valid=lambda x: _is_number(x) and 0.0 <= x <= 1.0,  # type: ignore[operator]
        expect="a number between 0 and 1",
        convert=float,  # type: ignore[arg-type]
    )


def limit(name: str, variable: str | None) -> Setting[int | None]:
    """A whole number >= 0, or ``None`` (the default) for no limit."""
    return Setting(
        name,
        variable,
        None,
        read=lambda v: env.read_int(v, None),
        valid=lambda x: _is_whole(x) and x >= 0,  # type: ignore[operator]
        expect="a whole number >= 0, or None for no limit",
        convert=int,  # type: ignore[arg-type]
    )


def dollars(name: str, variable: str | None) -> Setting[float | None]:
    """A finite number of US dollars >= 0, or ``None`` (the default) for no limit."""
    return Setting(
        name,
        variable,
        None,
        read=lambda v: env.read_float(v, None, minimum=0),
        valid=lambda x: _is_number(x) and 0 <= x < math.inf,  # type: ignore[operator]
        expect="a number of dollars >= 0, or None for no limit",
        convert=float,  # type: ignore[arg-type]
    )
