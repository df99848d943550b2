"""Reading a store of either engine in tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragtrace_collector._store import is_postgres, reading

__all__ = ["count", "dict_rows", "rows", "store_args", "tables_in", "target_of", "whole_row"]


def target_of(where: Any) -> Any:
    """What opens the store ``where`` names: a running collector's store (its ``config.target``), a store, or
    the target itself (a SQLite file's path or a ``postgresql://`` URL)."""
    config = getattr(where, "config", None)
    return config.target if config is not None else where


def _read(where: Any, read: Callable[[Any], Any]) -> Any:
    """``read(conn)`` on ``where``: through an open store's own ``read``, else on a read-only connection of its
    own to the target (a collector's, a path, a URL), closed after."""
    if hasattr(where, "read"):
        return where.read(read)
    target = target_of(where)
    assert isinstance(target, str | os.PathLike), f"not a store or a target: {where!r}"
    with reading(target) as conn:
        return read(conn)


def rows(where: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (the store's SQL: ``?`` placeholders) read from ``where`` (an open store, a running
    collector, a SQLite path or a PostgreSQL URL), as tuples."""
    return _read(where, lambda conn: [tuple(row) for row in conn.execute(sql, args).fetchall()])


def dict_rows(where: Any, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of ``sql`` read from ``where`` (as ``rows``), as dicts by column name."""

    def read(conn: Any) -> list[dict[str, Any]]:
        cursor = conn.execute(sql, args)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    return _read(where, read)


def count(where: Any, table: str) -> int:
    """Rows in ``table`` of the store ``where`` names (as ``rows``)."""
    ((n,),) = rows(where, f"SELECT count(*) FROM {table}")
    return int(n)


def store_args(target: Any) -> list[str]:
    """The command-line options that give ``serve``, ``report`` or ``prune`` the store ``target``: ``--db FILE`` or
    ``--store URL``."""
    text = str(target)
    return ["--store", text] if is_postgres(text) else ["--db", text]


def tables_in(target: Any) -> list[str]:
    """The tables the store ``target`` holds ([] for a SQLite file that does not exist, or an empty database)."""
    text = str(target)
    if not is_postgres(text) and not Path(text).exists():
        return []
    return sorted(name for (name,) in rows(text, _TABLES[is_postgres(text)]))


_TABLES = {
    False: "SELECT name FROM sqlite_master WHERE type = 'table'",
    True: "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
}


def whole_row(row: dict[str, Any], columns: dict[str, type]) -> dict[str, Any]:
    """The row with every column of its table (None where it has none), as ``write`` binds them."""
    return {column: row.get(column) for column in columns}
