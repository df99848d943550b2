"""Reading a store of either engine in tests."""

from __future__ import annotations

from typing import Any

__all__ = ["dict_rows", "rows", "whole_row"]


def rows(store: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (the store's SQL: ``?`` placeholders) read through the store, as tuples."""
    return store.read(lambda conn: [tuple(row) for row in conn.execute(sql, args).fetchall()])


def dict_rows(store: Any, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of ``sql`` read through the store, as dicts by column name."""

    def read(conn: Any) -> list[dict[str, Any]]:
        cursor = conn.execute(sql, args)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    return store.read(read)


def whole_row(row: dict[str, Any], columns: dict[str, type]) -> dict[str, Any]:
    """The row with every column of its table (None where it has none), as ``write`` binds them."""
    return {column: row.get(column) for column in columns}
