"""The offline judge's last few readings of a record, so asking ``support`` (the tiered judge routes on it)
and then ``verify`` of the same claims and chunks reads them once."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Readings"]

T = TypeVar("T")


class Readings(Generic[T]):
    """A small thread-safe LRU of readings keyed by ``(claims, chunks)``; two threads reading the same
    record at once may both compute it (the result is the same), never block on each other's model run."""

    def __init__(self, kept: int = 16) -> None:
        self._kept = kept
        self._items: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, claims: Sequence[str], chunks: Sequence[str], read: Callable[[], T]) -> tuple[T, bool]:
        """The remembered reading of ``claims`` x ``chunks``, else ``read()``, remembered; and whether
        ``read`` ran (a remembered reading costs no model run, and is not counted as one)."""
        key = (tuple(claims), tuple(chunks))
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key], False
        value = read()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._kept:
                self._items.popitem(last=False)
        return value, True
