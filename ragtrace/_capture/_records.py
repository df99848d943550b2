"""``RECORDS``: the bounded hand-off of each ended RAG span's ``RagRecord`` to the scoring processor."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ragtrace._exceptions import ConfigurationError
from ragtrace._fork import at_fork_in_child
from ragtrace._record import RagRecord


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


@at_fork_in_child
def _renew_lock_in_child() -> None:
    # A lock another thread held when the app forked would stay held forever in the child.
    RECORDS._lock = threading.Lock()
