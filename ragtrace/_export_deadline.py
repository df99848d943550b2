"""The exporters ``configure()`` builds, held to the shutdown budget, and what they dropped said once.

The OTLP exporters retry a dead endpoint with backoff for up to their timeout (10 s by default), once
for the spans and once more for the metrics, and the SDK's flush and shutdown wait for them: an app
whose collector was down took 15 s to exit. Their retry wait ends when the exporter is shut down, so
``ExportDeadline`` keeps one idle thread, started with ``configure()`` (no thread can start once the
interpreter is exiting), that shuts the exporters down when a shutdown's export phase outlives its
share of the budget *and* the span exporter is stuck: an export call running for ``STUCK_SECONDS`` or
more, or one that failed during this phase. A healthy endpoint that is merely busy is never cut, and
outside an armed phase (``armed``) nothing is. ``CountingSpanExporter`` counts every span that was not
exported, so one WARNING can say how many were lost, where they were going and (``fix``, from
``_export_failure``) what to do about it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragtrace._fork import at_fork_in_child_of

_log = logging.getLogger("ragtrace")

STUCK_SECONDS = 1.0
"""An export call running this long past the deadline is retrying (a healthy one returns sooner)."""
_POLL_SECONDS = 0.1


class CountingSpanExporter(SpanExporter):
    """``inner``, counting the spans it was given that were not exported (a failure or an exception),
    the failed calls, and since when the current call runs."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.dropped = 0
        self.failures = 0
        self.busy_since: float | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        self.busy_since = time.monotonic()
        try:
            result = self.inner.export(spans)
        finally:
            self.busy_since = None
            if result is not SpanExportResult.SUCCESS:
                with self._lock:
                    self.dropped += len(spans)
                    self.failures += 1
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class ExportDeadline:
    """Shuts ``exporters`` down when an ``armed`` phase outlives its deadline with ``spans`` stuck.

    ``target`` names where ``spans`` exports, for the message; ``fix``, when given, says why they were not
    exported and what to do (``_export_failure.fix_for``), asked when the message is written. ``report()``
    logs, once, how many spans were not exported; ``close()`` ends the thread (the processor calls both at
    shutdown).
    """

    def __init__(
        self,
        spans: CountingSpanExporter,
        exporters: Sequence[Any],
        target: str,
        fix: Callable[[], str] | None = None,
    ) -> None:
        self._spans = spans
        self._exporters = list(exporters)
        self._target = target
        self._fix = fix
        self._reported = False
        self.cut = False
        self._start()
        at_fork_in_child_of(self, ExportDeadline._start)

    def _start(self) -> None:
        # Also the fork hook: a child has no copy of the thread, and the lock may have been held.
        self._condition = threading.Condition()
        self._deadline: float | None = None
        self._failures_at_arm = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ragtrace-export-deadline", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def armed(self, deadline: float) -> Iterator[None]:
        """Within this block, cut the exporters if they are stuck once ``deadline`` (``time.monotonic()``)
        has passed; after it, never."""
        with self._condition:
            self._deadline = deadline
            self._failures_at_arm = self._spans.failures
            self._condition.notify()
        try:
            yield
        finally:
            with self._condition:
                self._deadline = None

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify()

    def report(self) -> None:
        """One WARNING, the first time spans were found not exported."""
        dropped = self._spans.dropped
        with self._condition:
            if self._reported or not dropped:
                return
            self._reported = True
        why = " (the shutdown budget ran out while the exporter was still retrying)" if self.cut else ""
        if self._fix is not None:
            why += f"; {self._fix()}"
        _log.warning("ragtrace: %d spans could not be exported to %s and were dropped%s", dropped, self._target, why)

    def _stuck(self, now: float) -> bool:
        busy_since = self._spans.busy_since
        if busy_since is None:
            return False
        return now - busy_since >= STUCK_SECONDS or self._spans.failures > self._failures_at_arm

    def _run(self) -> None:
        with self._condition:
            while not self._closed:
                now = time.monotonic()
                if self._deadline is None:
                    self._condition.wait()
                elif now < self._deadline:
                    self._condition.wait(self._deadline - now)
                elif self._stuck(now):
                    break
                else:
                    self._condition.wait(_POLL_SECONDS)
            if self._closed:
                return
            self.cut = True
        for exporter in self._exporters:
            with contextlib.suppress(Exception):
                exporter.shutdown()
