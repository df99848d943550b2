"""Reading one TOML table of a rules file: each value checked as it is taken, leftover keys reported.

``Table`` reads a table key by key (``get``, ``require``, ``number``, ``integer``, ``string``, ``choice``,
``duration``); ``finish`` then names every key that was not read, so a misspelt key is an error, never
silently ignored. ``parse_duration`` reads ``"15m"``, ``"1h"``, ``"250ms"`` or seconds. Every mistake raises
``ConfigurationError`` that starts with ``where`` (the file, the table, the key) and says how to fix it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from ragtrace import ConfigurationError

__all__ = ["NS_PER_S", "Table", "parse_duration"]

NS_PER_S: Final = 1_000_000_000
_UNITS: Final = {"ms": 1_000_000, "s": NS_PER_S, "m": 60 * NS_PER_S, "h": 3600 * NS_PER_S, "d": 86400 * NS_PER_S}
_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")


def parse_duration(value: object, *, where: str, allow_zero: bool = False) -> int:
    """Parse ``"15m"``, ``"1h"``, ``"30s"``, ``"7d"``, ``"250ms"`` or a number of seconds into nanoseconds.

    A duration is positive; with ``allow_zero`` (the keys where 0 means "off") it may also be 0.
    """
    if isinstance(value, bool):
        raise ConfigurationError(f'{where}: a duration, not a boolean; write e.g. "15m", "1h" or 900')
    if isinstance(value, int | float):
        seconds = float(value)
        if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
            raise ConfigurationError(f'{where}: {value!r} must be a positive duration; write e.g. "15m" or 900')
        return int(seconds * NS_PER_S)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and (float(match.group(1)) > 0 or allow_zero):
            return int(float(match.group(1)) * _UNITS[match.group(2)])
    raise ConfigurationError(
        f'{where}: {value!r} is not a duration; write a number and a unit (ms, s, m, h, d), e.g. "15m", or seconds'
    )


class Table:
    """A TOML table read key by key, so that leftover (unknown, misspelt) keys can be reported."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{where}: expected a table, got {type(data).__name__}")
        self.data: dict[str, Any] = dict(data)
        self.where = where
        self.used: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        return self.data.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.data

    def require(self, key: str, hint: str) -> Any:
        self.used.add(key)
        if key not in self.data:
            raise ConfigurationError(f"{self.where}: missing `{key}`; {hint}")
        return self.data[key]

    def number(self, key: str, default: float | None, *, low: float | None = None, high: float | None = None) -> Any:
        value = self.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigurationError(f"{self.where}: `{key}` must be a number, got {value!r}")
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"between {low:g} and {high:g}" if low is not None and high is not None else f">= {low:g}"
            raise ConfigurationError(f"{self.where}: `{key}` = {value!r} is out of range; use a value {span}")
        return float(value)

    def integer(self, key: str, default: int, *, low: int = 0) -> int:
        value = self.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigurationError(f"{self.where}: `{key}` must be an integer >= {low}, got {value!r}")
        return value

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key, default)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigurationError(f"{self.where}: `{key}` must be a non-empty string, got {value!r}")
        return value

    def choice(self, key: str, default: str | None, allowed: tuple[str, ...]) -> Any:
        value = self.get(key, default)
        if value not in allowed:
            raise ConfigurationError(f"{self.where}: `{key}` = {value!r}; use one of {', '.join(allowed)}")
        return value

    def duration(self, key: str, default: int, *, allow_zero: bool = False) -> int:
        if not self.has(key):
            self.used.add(key)
            return default
        return parse_duration(self.get(key), where=f"{self.where}: `{key}`", allow_zero=allow_zero)

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise ConfigurationError(
                f"{self.where}: unknown key(s) {', '.join(unknown)}; allowed here: {', '.join(sorted(self.used))}"
            )
