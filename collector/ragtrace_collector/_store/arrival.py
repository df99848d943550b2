"""The order rows arrived in, on either engine: where a reader of new rows stands (``Arrival``) and the reads
that never skip a row committed late.

Two readers follow a table as it grows and must see every row once: the Phoenix annotator (``scores``) and the
pages' live updates (``rag_records``). Each keeps a cursor and asks for the rows after it.

* SQLite has one writer at a time and gives a new row the largest rowid plus one, so rows become visible in
  rowid order: a reader that has seen rowid n has seen every committed row below it. The cursor is the rowid.
* PostgreSQL's writers run at once, and an identity column is assigned when a row is inserted, not when it is
  committed: replica A may insert rowid 10, replica B rowid 11 and commit first; a reader at 11 would never see
  10. So each row also records the transaction that wrote it (``xact``, ``pg_current_xact_id()``, a 64-bit id
  that never wraps), and readers take only rows whose transaction is older than every transaction still running
  (below ``pg_snapshot_xmin`` of the current snapshot), in ``(xact, rowid)`` order. Every transaction below
  that horizon has ended, so no row can appear there later: the cursor ``(xact, rowid)`` never passes a row
  that commits afterwards. A row becomes readable once every transaction that began before it ended, which
  delays it by the longest transaction running at the time (a batch is milliseconds; a session left idle in a
  transaction holds every reader back, which ``idle_in_transaction_session_timeout`` bounds).

A row updated in place keeps its place (its rowid, and its ``xact``): it is not read again.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from ragtrace_collector._store.dialect import SQLITE, AnyConnection, Dialect, dialect_of
from ragtrace_collector._store.schema import XACT, quoted

__all__ = ["START", "Arrival", "newest", "order", "position", "within"]


class Arrival(NamedTuple):
    """A row's place in the order rows arrived: the writing transaction (PostgreSQL; always 0 on SQLite) and
    the rowid. Tuples compare in that order; a cursor ``c`` means every row at or before ``c`` was read."""

    xact: int
    row: int

    def before(self) -> Arrival:
        """The cursor just before this row: a read after it starts at this row."""
        return Arrival(self.xact, self.row - 1)

    def text(self) -> str:
        """The cursor as a page carries it: the rowid alone on SQLite (``"42"``), ``"xact.rowid"`` else."""
        return str(self.row) if self.xact == 0 else f"{self.xact}.{self.row}"

    @classmethod
    def parse(cls, text: str) -> Arrival:
        """The cursor ``text()`` wrote; ``ValueError`` for anything else (digits only, ASCII)."""
        parts = text.split(".")
        if len(parts) > 2 or not all(part.isascii() and part.isdigit() for part in parts):
            raise ValueError(f"not a cursor: {text!r}")
        return cls(int(parts[0]), int(parts[1])) if len(parts) == 2 else cls(0, int(parts[0]))


START: Final = Arrival(0, 0)
"""Before every row."""


_HORIZON: Final = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
"""PostgreSQL: the oldest transaction still running when the statement began; every one below it has ended."""


def position(dialect: Dialect, alias: str) -> str:
    """The two columns of a row's ``Arrival`` in a select list (``0`` for SQLite's transaction)."""
    return f"0, {alias}.rowid" if dialect is SQLITE else f"{alias}.{quoted(XACT)}, {alias}.rowid"


def order(dialect: Dialect, alias: str) -> str:
    """``ORDER BY`` the order rows arrived in."""
    return f"{alias}.rowid" if dialect is SQLITE else f"{alias}.{quoted(XACT)}, {alias}.rowid"


def within(dialect: Dialect, alias: str, after: Arrival, upto: Arrival) -> tuple[str, list[Any]]:
    """A condition selecting the rows after ``after`` up to ``upto`` (from ``newest``), and its arguments.

    SQLite compares rowids alone, which its rowid lookup serves; PostgreSQL compares the pair, which the
    ``(xact, rowid)`` index serves."""
    if dialect is SQLITE:
        return f"{alias}.rowid > ? AND {alias}.rowid <= ?", [after.row, upto.row]
    pair = f"({alias}.{quoted(XACT)}, {alias}.rowid)"
    return f"{pair} > (?, ?) AND {pair} <= (?, ?)", [after.xact, after.row, upto.xact, upto.row]


def newest(conn: AnyConnection, table: str) -> Arrival:
    """The newest row of ``table`` a reader may take now (``START`` for none): a read up to it, after a cursor,
    takes every row committed in between, and no row can commit at or below it later."""
    dialect = dialect_of(conn)
    if dialect is SQLITE:
        (last,) = conn.execute(f"SELECT max(rowid) FROM {quoted(table)}").fetchone()
        return START if last is None else Arrival(0, int(last))
    found = conn.execute(
        f"SELECT {quoted(XACT)}, rowid FROM {quoted(table)} WHERE {quoted(XACT)} < {_HORIZON} "
        f"ORDER BY {quoted(XACT)} DESC, rowid DESC LIMIT 1"
    ).fetchone()
    return START if found is None else Arrival(int(found[0]), int(found[1]))
