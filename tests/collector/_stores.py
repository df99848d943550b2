"""Reading a store of either engine in tests."""

from __future__ import annotations

from typing import Any

__all__ = ["rows"]


def rows(store: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (the store's SQL: ``?`` placeholders) read through the store, as tuples."""
    return store.read(lambda conn: [tuple(row) for row in conn.execute(sql, args).fetchall()])
