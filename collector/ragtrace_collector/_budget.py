"""The in-flight byte budget: how many request bytes the receivers hold at once, all requests together.

``--max-body-bytes`` bounds one request; this bounds their sum, so a burst of large exports from many senders
cannot take the collector's memory. Each request takes a ``Hold``: it takes bytes as they arrive (over HTTP each
chunk of the body as it is received, and for gzip the inflated bytes too) and gives them all back when it is
done, however it ends (reply, refusal, error, a sender that went away). What a sender only declares is checked,
not taken (``Hold.check``): a sender that declares a large body and sends nothing holds nothing. A request that
would take the budget past its limit is refused with ``OverBudget``, which the receivers answer in the retryable
terms OTLP exporters honour: HTTP 429 with ``Retry-After``, gRPC ``RESOURCE_EXHAUSTED`` with a ``RetryInfo``.
Nothing of a refused request is stored, so its retry duplicates nothing.

A request alone in flight is never refused: with nothing else held, refusing it would free nothing, and a
gzip body (its bytes as received plus as inflated) may rightly need more than one ``--max-body-bytes``.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from ragtrace_collector._memory import give_back

_log = logging.getLogger("ragtrace_collector")

DEFAULT_MAX_INFLIGHT_BYTES = 192 * 1024 * 1024
"""Default budget of request bytes held at once (192 MiB: three times the default 64 MiB body limit). Requests
hold what their bodies decode to (``_decoded``), and what the budget cannot see (buffers, the allocator's slack)
comes on top: three body limits keep the collector's growth under four, the bound it documents."""

_TRIM_AFTER_BYTES = 4 * 1024 * 1024
"""A request that held at least this much asks for the freed memory to be returned to the system."""

RETRY_AFTER_SECONDS = 2
"""The delay a refused sender is asked to wait: held bytes are given back as soon as requests finish."""


class OverBudget(Exception):
    """Taking these bytes would hold more than the budget allows; the request is refused, to be retried."""


class ByteBudget:
    """The bytes held by every request in flight, against ``limit``. Thread-safe (the receivers share one)."""

    def __init__(self, limit: int = DEFAULT_MAX_INFLIGHT_BYTES) -> None:
        self.limit = limit
        self._held = 0
        self._refusing = False
        self._refused = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        """Bytes held right now."""
        return self._held

    def hold(self) -> Hold:
        """A new request's share, empty; use it as a context manager so that it is always given back."""
        return Hold(self)

    def _take(self, hold: Hold, size: int, *, keep: bool = True) -> None:
        with self._lock:
            held = self._held
            alone = held == hold.held  # no other request holds anything
            admitted = alone or held + size <= self.limit
            if admitted:
                if keep:
                    self._held = held + size
                    hold.held += size
                refused, self._refused, self._refusing = self._refused, 0, False
            else:
                self._refused += 1
                first_refusal, self._refusing = not self._refusing, True
        # Logged outside the lock; one line when refusals start and one when they stop, not one per request.
        if admitted:
            if refused:
                _log.info("in-flight budget: admitting requests again (%d refused meanwhile)", refused)
            return
        if first_refusal:
            _log.warning(
                "in-flight budget full: %d bytes held, %d more would pass the %d-byte limit "
                "(--max-inflight-bytes); refusing requests with a retry delay until some finish",
                held,
                size,
                self.limit,
            )
        raise OverBudget(
            f"the collector holds {held} bytes of requests in flight and {size} more would pass its "
            f"{self.limit}-byte budget: retry in {RETRY_AFTER_SECONDS} s"
        )

    def _give_back(self, hold: Hold) -> None:
        with self._lock:
            released, self._held = hold.held, self._held - hold.held
            hold.held = 0
        if released >= _TRIM_AFTER_BYTES:
            # A large request's buffers were freed in pieces: have the allocator return them (_memory).
            give_back()


class Hold:
    """One request's bytes of a ``ByteBudget``: ``take`` as they arrive; all given back on leaving the ``with``."""

    def __init__(self, budget: ByteBudget) -> None:
        self.budget = budget
        self.held = 0
        """Bytes this request holds."""

    def take(self, size: int) -> None:
        """Hold ``size`` more bytes, or raise ``OverBudget`` (holding nothing more)."""
        if size > 0:
            self.budget._take(self, size)

    def check(self, size: int) -> None:
        """Raise ``OverBudget`` if ``size`` more bytes would be refused now; take nothing either way.

        For a size only announced (an HTTP ``Content-Length``): a request that cannot fit is refused before its
        body is sent, and one that can holds nothing until its bytes arrive.
        """
        if size > 0:
            self.budget._take(self, size, keep=False)

    def release(self) -> None:
        """Give back every byte this request holds (idempotent)."""
        self.budget._give_back(self)

    def __enter__(self) -> Hold:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()
