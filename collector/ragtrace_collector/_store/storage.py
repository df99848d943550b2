"""``Storage``: the role both engines' writers play (``Store`` on a SQLite file, ``PostgresStore`` on a database).

The rest of the collector (receivers, pipeline, joiner, scoring, retention) holds a ``Storage`` and never asks
which engine is behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ragtrace_collector._otlp import Batch

__all__ = ["Storage", "StoreError"]

T = TypeVar("T")


class StoreError(RuntimeError):
    """A write could not be committed (disk full, database locked, ...): the request must not be acknowledged."""


class Storage(Protocol):
    """A store the collector writes: each ``write`` one transaction, returning after the commit (``StoreError``
    when it could not commit, nothing of it kept)."""

    @property
    def path(self) -> Path | None:
        """The SQLite file (None on PostgreSQL)."""

    @property
    def target(self) -> str:
        """What opens the same store again, in another process: the file's path, or the URL."""

    @property
    def write_lock(self) -> Any:
        """The lock SQLite's writers in several processes share (None on PostgreSQL, and for one process)."""

    def write(self, batch: Batch) -> None: ...

    def prune(self, older_than_ns: int, batch_rows: int = ...) -> dict[str, int]: ...

    def read(self, query: Callable[..., T], *args: Any) -> T: ...

    def change(self, change: Callable[..., T], *args: Any) -> T: ...

    def rag_record(self, span_id: str) -> dict[str, Any] | None: ...

    def close(self) -> None: ...
