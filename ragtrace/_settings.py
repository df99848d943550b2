"""One settings resolver: the argument, else its ``RAGTRACE_*`` variable, else the default; then one check.

The processor, the sampler, the judge and the collector's scorer resolve their numeric settings here, so
they agree on precedence and on how a mistake reads. A ``Setting`` describes one::

    QUEUE_SIZE = whole_number("queue_size", env.RAGTRACE_QUEUE_SIZE, default=2048, minimum=1)
    self.queue_size = QUEUE_SIZE.resolve(queue_size)   # the argument, or None when not given

``resolve(value)``: a given argument is checked and returned; ``None`` reads the variable, then checks
what it read, else returns the default. An argument that fails the check raises ``ConfigurationError``
naming the fix (``queue_size=0 is invalid: pass a whole number >= 1``); a variable that fails it (or that
does not parse) is reported once as a WARNING naming the fix and the value used instead
(``RAGTRACE_HOLD_TIMEOUT='inf' is invalid: set it to a finite number of seconds > 0; using the default
(30.0)``): the default, or for a limit on spending its safe value ("falling back to the safe value (0)"),
as OpenTelemetry does with its own variables. ``check(name, value)`` applies the same check to a value
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
    read: Callable[[str, T, T | None], object]
    """``read(variable, default, fallback)``: the variable parsed, ``default`` when unset, and when it does
    not parse ``fallback`` (else ``default``) after a warning naming the value used."""
    valid: Callable[[object], bool]
    expect: str
    convert: Callable[[object], T]
    fallback: T | None = None
    """What an invalid variable gives instead of ``default`` (the safe side of a limit); None: ``default``."""

    @property
    def _on_invalid(self) -> T:
        return self.default if self.fallback is None else self.fallback

    def resolve(self, value: T | None) -> T:
        """The argument if given, else the variable if set, else the default; checked (see the module docstring)."""
        if value is not None:
            return self.check(self.name, value)
        if self.variable is None:
            return self.default
        # A value that does not parse reads as the fallback (else the default), with a warning naming it.
        read = self.read(self.variable, self.default, self.fallback)
        if read is None:
            return self.default
        if not self.valid(read):
            said = None if self.fallback is None else env.safe_fallback(self.fallback)
            return env.invalid(self.variable, read, f"set it to {self.expect}", self._on_invalid, instead=said)
        return self.convert(read)

    def check(self, name: str, value: object) -> T:
        """``value`` converted, or ``ConfigurationError`` naming ``name`` and what a valid value is."""
        if not self.valid(value):
            raise ConfigurationError(f"{name}={value!r} is invalid: pass {self.expect}")
        return self.convert(value)


def _whole(minimum: int) -> Callable[[object], bool]:
    return lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= minimum


def _number(low: float, high: float, *, open_low: bool = False, open_high: bool = False) -> Callable[[object], bool]:
    # ``open_low``/``open_high``: the end itself is invalid (a timeout of 0 s, an infinite one).
    # NaN fails every comparison, so it is never valid.
    def valid(x: object) -> bool:
        if not isinstance(x, (int, float)) or isinstance(x, bool):
            return False
        return (low < x if open_low else low <= x) and (x < high if open_high else x <= high)

    return valid


def _read_int(minimum: int) -> Callable[[str, int | None, int | None], object]:
    # The setting's own default and fallback go to the reader, so its warning names the value used.
    return lambda variable, default, fallback: env.read_int(variable, default, minimum=minimum, fallback=fallback)


def _read_float(minimum: float, maximum: float | None = None) -> Callable[[str, float | None, float | None], object]:
    def read(variable: str, default: float | None, fallback: float | None) -> object:
        return env.read_float(variable, default, minimum=minimum, maximum=maximum, fallback=fallback)

    return read


def whole_number(name: str, variable: str | None, *, default: int, minimum: int) -> Setting[int]:
    """A whole number >= ``minimum`` (``queue_size``, ``max_concurrency``)."""
    expect = f"a whole number >= {minimum}"
    return Setting(name, variable, default, _read_int(minimum), _whole(minimum), expect, int)  # type: ignore[arg-type]


def seconds(name: str, variable: str | None, *, default: float) -> Setting[float]:
    """A finite number of seconds > 0: an infinite hold or shutdown would keep spans, and the exit, waiting."""
    valid = _number(0, math.inf, open_low=True, open_high=True)
    expect = "a finite number of seconds > 0"
    return Setting(name, variable, default, _read_float(0), valid, expect, float)  # type: ignore[arg-type]


def rate(name: str, variable: str | None, *, default: float) -> Setting[float]:
    """A sampling rate: a number between 0 and 1."""
    expect = "a number between 0 and 1"
    return Setting(name, variable, default, _read_float(0, 1), _number(0, 1), expect, float)  # type: ignore[arg-type]


def limit(name: str, variable: str | None, *, fallback: int | None = None) -> Setting[int | None]:
    """A whole number >= 0, or ``None`` (the default) for no limit; an invalid variable gives ``fallback``
    (a spending limit passes 0: a mistyped limit stops spending rather than lifting the limit)."""
    expect = "a whole number >= 0, or None for no limit"
    return Setting(name, variable, None, _read_int(0), _whole(0), expect, int, fallback)  # type: ignore[arg-type]


def dollars(name: str, variable: str | None, *, fallback: float | None = None) -> Setting[float | None]:
    """A finite number of US dollars >= 0, or ``None`` (the default) for no limit; an invalid variable
    gives ``fallback``."""
    valid = _number(0, math.inf, open_high=True)
    expect = "a number of dollars >= 0, or None for no limit"
    return Setting(name, variable, None, _read_float(0), valid, expect, float, fallback)  # type: ignore[arg-type]
