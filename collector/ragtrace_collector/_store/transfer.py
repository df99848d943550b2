"""``copy_store``: every row of one store into another, e.g. a SQLite file into the PostgreSQL database a fleet
moves to (``ragtrace-collector copy --db FILE --store URL``).

The source is read as it is (read-only, without migrating it: a table or column an older file lacks is skipped,
and NULL in the target); the target is migrated first. Rows go in batches, each one transaction, and a row
whose key the target already has is left as the target has it (``ON CONFLICT DO NOTHING``), so a copy that was
interrupted is simply run again. The rows of the alert tables, whose ids the database assigns, are matched on
their content instead: one the target holds is skipped, another keeps its id where the target has no row of that
id and gets a new one where it has (a target already in use keeps its own alerts and gets the copied ones too),
and the target's own counters move past them so new rows get new ids. The rollups (``rollups.py``) are not copied:
the target adds up its own from the rows it took. The records go in the order of their time, as a collector
receives them, so a SQLite target's blocks of arrival (``schema.RECORD_BLOCKS``) bound them as tightly as its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragtrace_collector._store import rollups
from ragtrace_collector._store.connection import Target, connect, connect_readonly
from ragtrace_collector._store.dialect import SQLITE, AnyConnection, column_names, dialect_of, table_names
from ragtrace_collector._store.schema import RAG_RECORDS, ROLLUPS, TABLES, quoted

__all__ = ["Copied", "copy_store"]

_BATCH_ROWS = 1000
_ORDER: dict[str, str] = {RAG_RECORDS: "time_ns, span_id"}
"""The order a table's rows are copied in, where not its key's: the records by time (its index serves it)."""


@dataclass(frozen=True, slots=True)
class Copied:
    """Rows read from the source and rows the target did not have yet, by table."""

    read: dict[str, int]
    written: dict[str, int]


def copy_store(source: Target, target: Target, *, progress: Callable[[str, int], None] | None = None) -> Copied:
    """Copy every table of ``source`` into ``target`` (see the module's doc); ``progress(table, rows)`` after each
    batch."""
    read: dict[str, int] = {}
    written: dict[str, int] = {}
    src = connect_readonly(source)
    dst = connect(target, create=True)
    try:
        present = table_names(src)
        for table in TABLES:
            if table.name not in present or table.name in ROLLUPS:  # the target adds its own up
                continue
            columns = [c for c in table.columns if c in set(column_names(src, table.name))]
            names = ", ".join(map(quoted, columns))
            insert = (
                f"INSERT INTO {quoted(table.name)} ({names}) VALUES ({', '.join('?' for _ in columns)}) "
                f"ON CONFLICT ({', '.join(map(quoted, table.pk))}) DO NOTHING"
            )
            # One cursor in an order an index gives, so a large table is read a batch at a time.
            order = _ORDER.get(table.name, ", ".join(table.pk))
            cursor = src.execute(f"SELECT {names} FROM {quoted(table.name)} ORDER BY {order}")
            read[table.name] = written[table.name] = 0
            while batch := cursor.fetchmany(_BATCH_ROWS):
                with dst:
                    if table.rowid_pk:
                        written[table.name] += _insert_numbered(dst, table.name, columns, batch)
                    else:
                        # The rows the target took: the others' keys were there already.
                        written[table.name] += max(0, dst.executemany(insert, [tuple(row) for row in batch]).rowcount)
                read[table.name] += len(batch)
                if progress is not None:
                    progress(table.name, read[table.name])
            if table.rowid_pk and dialect_of(dst) is not SQLITE:
                # The identity counter past the copied ids: the next alert, silence or ack gets a new one.
                dst.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                    f"GREATEST((SELECT MAX(id) FROM {quoted(table.name)}), 1))"
                )
        if dialect_of(dst) is SQLITE:
            # PostgreSQL's triggers followed the copied rows; SQLite's rollups follow ingest's writes, so they are
            # added up again from the rows now there.
            with dst:
                rollups.backfill(dst, SQLITE)
                rollups.backfill_quality_hours(dst)
    finally:
        src.close()
        dst.close()
    return Copied(read, written)


def _insert_numbered(dst: AnyConnection, table: str, columns: list[str], rows: list[Any]) -> int:
    """Insert rows of a table whose ids the database assigns (alerts, silences, acks) into a target that may be in
    use: a row the target holds already (every column but the id equal) is skipped, so a copy run again adds
    nothing; another row keeps its id where that id is free, and gets a new one where the target's own row has
    it. The rows inserted."""
    same = "IS" if dialect_of(dst) is SQLITE else "IS NOT DISTINCT FROM"  # equal, NULL to NULL included
    content = [c for c in columns if c != "id"]
    exists = f"SELECT 1 FROM {quoted(table)} WHERE " + " AND ".join(f"{quoted(c)} {same} ?" for c in content)
    with_id = (
        f"INSERT INTO {quoted(table)} ({', '.join(map(quoted, columns))}) VALUES ({', '.join('?' for _ in columns)}) "
        "ON CONFLICT (id) DO NOTHING"
    )
    new_id = (
        f"INSERT INTO {quoted(table)} ({', '.join(map(quoted, content))}) VALUES ({', '.join('?' for _ in content)})"
    )
    inserted = 0
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        kept = [values[c] for c in content]
        if dst.execute(exists, kept).fetchone() is not None:
            continue
        if "id" not in values or dst.execute(with_id, list(row)).rowcount < 1:
            dst.execute(new_id, kept)
        inserted += 1
    return inserted
