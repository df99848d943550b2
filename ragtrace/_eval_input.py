"""Reading a JSONL file of RAG records: every record with its line, every bad line with where it is wrong.

``read_jsonl(path, fields=None, strict=False)`` returns ``JsonlRecords``: the records in file order,
the line each came from, and one ``BadLine`` per line that could not be read (not UTF-8, not JSON,
not a JSON object, not in the shape ``RagRecord.from_dict`` reads). A bad line is skipped and kept in
``skipped``; with ``strict=True`` the first one raises ``BadLineError`` (a ``ValueError``) instead.

Positions are the ones an editor shows: lines count from 1 and blank lines count, columns count
characters from 1 on the line without its line end (a byte-order mark at the start of the file is
not a character of line 1). A ``BadLine`` reads ``FILE:LINE:COLUMN: what is wrong``, the form editors
and terminals jump to. For a line that is JSON but not a record the column is where its value starts.

``fields`` renames keys before the record is built, e.g. ``{"chunks": "knowledge"}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace._record import RagRecord

__all__ = ["BadLine", "BadLineError", "JsonlRecords", "read_jsonl", "renamed"]


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line of the records file that is not a record: where (1-based line and column) and why."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class BadLineError(ValueError):
    """A bad line in strict mode; ``bad`` says where and why, and the message is ``str(bad)``."""

    def __init__(self, bad: BadLine) -> None:
        super().__init__(str(bad))
        self.bad = bad


@dataclass(frozen=True, slots=True)
class JsonlRecords:
    """What ``read_jsonl`` read: the records, the line of each (same order), and the lines skipped."""

    path: Path
    records: tuple[RagRecord, ...]
    lines: tuple[int, ...]
    skipped: tuple[BadLine, ...] = ()


def renamed(data: Mapping[str, Any], fields: Mapping[str, str] | None) -> Mapping[str, Any]:
    """``data`` with each target key of ``fields`` taking the value of its source key, when present."""
    if not fields:
        return data
    out = dict(data)
    for target, source in fields.items():
        if source in data:
            out[target] = data[source]
    return out


def _without_line_end(text: str) -> str:
    # The line end is not part of the line: left in, a value cut short at the end of the line is
    # reported by json at "line 2 column 1", i.e. past the line, instead of where the line stops.
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    return text


def _start_column(text: str) -> int:
    return len(text) - len(text.lstrip()) + 1


def _parse(raw: bytes, number: int, file: str) -> tuple[Any, int] | BadLine | None:
    """(the JSON value, the column where it starts), what is wrong with the line, or None for a blank line."""
    encoding = "utf-8-sig" if number == 1 else "utf-8"
    try:
        text = _without_line_end(raw.decode(encoding))
    except UnicodeDecodeError as err:
        column = len(raw[: err.start].decode(encoding)) + 1  # the bytes before the bad one decode
        return BadLine(file, number, column, f"not UTF-8 (byte {raw[err.start]:#04x}); save the file as UTF-8")
    if not text.strip():
        return None
    try:
        return json.loads(text), _start_column(text)
    except json.JSONDecodeError as err:
        return BadLine(file, number, err.colno, f"not valid JSON ({err.msg})")


def _record(value: Any, column: int, number: int, file: str, fields: Mapping[str, str] | None) -> RagRecord | BadLine:
    if not isinstance(value, dict):
        return BadLine(file, number, column, f"expected a JSON object, got {type(value).__name__}")
    try:
        return RagRecord.from_dict(renamed(value, fields))
    except (ValueError, TypeError) as err:
        return BadLine(file, number, column, str(err))


def read_jsonl(
    path: str | os.PathLike[str], fields: Mapping[str, str] | None = None, *, strict: bool = False
) -> JsonlRecords:
    """Read a JSONL file of records; see the module docstring.

    Raises ``FileNotFoundError`` or ``IsADirectoryError`` when ``path`` is not a file, and
    ``BadLineError`` on the first bad line when ``strict``.
    """
    file = Path(path)
    if file.is_dir():
        raise IsADirectoryError(f"records file {file} is a directory: give a JSONL file")
    if not file.is_file():
        raise FileNotFoundError(f"no such records file: {file}")
    records: list[RagRecord] = []
    lines: list[int] = []
    skipped: list[BadLine] = []
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            parsed = _parse(raw, number, str(file))
            if parsed is None:
                continue
            got = parsed if isinstance(parsed, BadLine) else _record(*parsed, number, str(file), fields)
            if isinstance(got, RagRecord):
                records.append(got)
                lines.append(number)
            elif strict:
                raise BadLineError(got)
            else:
                skipped.append(got)
    return JsonlRecords(path=file, records=tuple(records), lines=tuple(lines), skipped=tuple(skipped))
