"""A cache of what the offline judge reads from a text, for the texts a RAG app sends again and again.

``short_text_cache(maxsize)`` wraps a pure function of a text: texts up to ``CACHED_TEXT_CHARS`` are read once and
kept (least recently used first out, at most ``maxsize``), longer ones are read anew each time. A RAG app retrieves
the same chunks over and over, and they are short; bounding the cached texts' length bounds the cache in bytes, not
only in entries (the words of one 64 KB chunk take about 2 MB, and what is read from a text is often bigger than
it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["CACHED_TEXT_CHARS", "ShortTextCache", "short_text_cache"]

T = TypeVar("T")

CACHED_TEXT_CHARS = 8192
"""The longest text whose reading is kept."""


class ShortTextCache(Generic[T]):
    """``read`` with the readings of short texts kept; ``cache_info`` and ``cache_clear`` are the kept ones'
    (``functools.lru_cache``'s), for tests and for measuring."""

    def __init__(self, read: Callable[[str], T], maxsize: int) -> None:
        self._read = read
        self._kept = functools.lru_cache(maxsize=maxsize)(read)
        functools.update_wrapper(self, read)

    def __call__(self, text: str) -> T:
        return self._kept(text) if len(text) <= CACHED_TEXT_CHARS else self._read(text)

    def cache_info(self) -> Any:
        """How many readings are kept, and how often one was used (``functools.lru_cache``'s ``cache_info``)."""
        return self._kept.cache_info()

    def cache_clear(self) -> None:
        """Forget every kept reading."""
        self._kept.cache_clear()


def short_text_cache(maxsize: int) -> Callable[[Callable[[str], T]], ShortTextCache[T]]:
    """The decorator of a pure function of a text: ``ShortTextCache`` of it, keeping at most ``maxsize``."""

    def wrap(read: Callable[[str], T]) -> ShortTextCache[T]:
        return ShortTextCache(read, maxsize)

    return wrap
