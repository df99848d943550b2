"""Where the offline judge opens its ONNX models: on the CPU, one thread, quiet; and keeps one of each.

One intra-op and one inter-op thread: the app runs beside the judge, and one pair or one small batch
at a time gains nothing from more (measured for the support model: 8.2 ms a pair alone, 9.8 ms in
batches of 16). onnxruntime is imported here, on first use, so importing ragtrace does not load it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def cpu_session(path: str) -> Any:
    """An ``onnxruntime.InferenceSession`` of the model at ``path`` on one CPU thread, warnings only."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


class ProcessWide(Generic[T]):
    """One instance of a model per process, made by ``factory`` on the first ``get()`` (thread-safe):
    the offline judges of a process share their models instead of loading each its own."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._factory()
                value = self._value
        return value
