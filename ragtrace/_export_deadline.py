"""The exporters ``configure()`` builds, held to the shutdown budget, and what they dropped said once.

The OTLP exporters retry a dead endpoint with backoff for up to their timeout (10 s by default), once
for the spans and once more for the metrics, and the SDK's flush and shutdown wait for them: an app
whose collector was down took 15 s to exit. Their retry wait ends when the exporter is shut down, so
``ExportDeadline`` keeps one idle thread, started with ``configure()`` (no thread can start once the
interpreter is exiting), that shuts the exporters down when a shutdown's budget runs out. The spans
still waiting are dropped then, and ``CountingSpanExporter`` counts every span that was not exported,
so one WARNING can say how many were lost and where they were going.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

_log = logging.getLogger("ragtrace")


class CountingSpanExporter(SpanExporter):
    """``inner``, counting the spans it was given that were not exported (a failure or an exception)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.dropped = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        finally:
            if result is not SpanExportResult.SUCCESS:
                with self._lock:
                    self.dropped += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class ExportDeadline:
    """Shuts ``exporters`` down when the deadline given to ``arm`` passes (the earliest one wins).

    ``spans`` is the span exporter whose losses are reported; ``target`` names where it exports.
    ``close()`` ends the thread; ``report()`` logs, once, how many spans were not exported (the
    processor calls it when its shutdown is done, so the count includes what the cut dropped).
    """

    def __init__(self, spans: CountingSpanExporter, exporters: Sequence[Any], target: str) -> None:
        self._spans = spans
        self._exporters = list(exporters)
        self._target = target
        self._condition = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self._reported = False
        self.cut = False
        self._thread = threading.Thread(target=self._run, name="ragtrace-export-deadline", daemon=True)
        self._thread.start()

    def arm(self, deadline: float) -> None:
        """Shut the exporters down at ``deadline`` (``time.monotonic()``) unless ``close()`` comes first."""
        with self._condition:
            if self._deadline is None or deadline < self._deadline:
                self._deadline = deadline
                self._condition.notify()

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
        _log.warning("ragtrace: %d spans could not be exported to %s and were dropped%s", dropped, self._target, why)

    def _run(self) -> None:
        with self._condition:
            while not self._closed:
                if self._deadline is None:
                    self._condition.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left <= 0:
                    break
                self._condition.wait(left)
            if self._closed:
                return
            self.cut = True
        for exporter in self._exporters:
            with contextlib.suppress(Exception):
                exporter.shutdown()
