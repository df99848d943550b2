"""Where the offline judge opens its ONNX models: on the CPU, one thread, quiet; and keeps one of each.

One intra-op and one inter-op thread: the app runs beside the judge, and one pair or one small batch
at a time gains nothing from more (measured for the support model: 8.2 ms a pair alone, 9.8 ms in
batches of 16). onnxruntime is imported here, on first use, so importing ragtrace does not load it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from tokenizers import Tokenizer

T = TypeVar("T")
TOKENIZER_ASSET = "all-MiniLM-L6-v2.tokenizer.json"
"""MiniLM's tokenizer, shipped in ``_assets/`` (all four models use it)."""


def cpu_session(path: str) -> Any:
    """An ``onnxruntime.InferenceSession`` of the model at ``path`` on one CPU thread, warnings only."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def shipped_path(asset: str) -> str:
    """The path of a model file ragtrace ships in ``ragtrace/judges/_assets/``."""
    return str(resources.files("ragtrace.judges").joinpath("_assets", asset))


def read_tokenizer() -> Tokenizer:
    """A fresh copy of MiniLM's tokenizer from the package (its caller sets truncation and padding)."""
    from tokenizers import Tokenizer

    asset = resources.files("ragtrace.judges").joinpath("_assets", TOKENIZER_ASSET)
    return Tokenizer.from_str(asset.read_text(encoding="utf-8"))


class LazyModel:
    """An ONNX session and its tokenizer, made on the first ``get()``, once, under a lock; thread-safe.

    ``path`` and ``tokenizer`` are called then (a path inside a package is looked up only when needed)."""

    def __init__(self, path: Callable[[], str], tokenizer: Callable[[], Tokenizer]) -> None:
        self._path = path
        self._make_tokenizer = tokenizer
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Tokenizer] | None = None
        self.loads = 0
        """How many times the model was loaded (1 after first use; tests check it)."""

    def get(self) -> tuple[Any, Tokenizer]:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    tokenizer = self._make_tokenizer()
                    self._loaded = (cpu_session(self._path()), tokenizer)
                    self.loads += 1
                loaded = self._loaded
        return loaded


class LoadsLazily:
    """What each of the offline judge's models offers about its loading, for a class that keeps its
    ``LazyModel`` in ``_model``: how many times it loaded, and loading it now."""

    _model: LazyModel

    @property
    def loads(self) -> int:
        """How many times the model was loaded (1 after first use)."""
        return self._model.loads

    def _load(self) -> tuple[Any, Tokenizer]:
        return self._model.get()

    def load(self) -> None:
        """Load the model now (otherwise its first use does)."""
        self._load()


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
