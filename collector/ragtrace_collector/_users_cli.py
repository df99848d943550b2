"""``ragtrace-collector users add NAME --file FILE``: put a person in a users file (``serve --users-file``), with a
scrypt hash of the password (``_http._users``). It creates the file (readable by its owner only) or sets the
person's line in it, keeping the others.

The password is read with ``getpass`` (asked twice) on a terminal, else from the first line of standard input
(``printf '%s\\n' "$PASSWORD" | ragtrace-collector users add ana --file users.txt``); never from an argument, which
``ps`` and the shell's history would show. It is neither printed nor logged. A mistake is one line on standard
error and exit status 2.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ragtrace import ConfigurationError
from ragtrace_collector._http._users import NAME_PATTERN, hash_password, read_users, users_text

__all__ = ["add_users_commands", "run_users_command"]

_MIN_PASSWORD = 8


def add_users_commands(commands: Any) -> None:
    """Add ``users`` and its subcommand to the command line's subparsers."""
    users = commands.add_parser(
        "users",
        help="add a person who signs in to the pages by name and password (serve --users-file)",
        description="Manage the users file of serve --users-file: one person a line, NAME:HASH (scrypt).",
    )
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser(
        "add",
        help="add a person, or set their password (read from the terminal, else from standard input's first line)",
    )
    add.add_argument("name", help="the person's name, as acknowledgements, silences and reviews record it")
    add.add_argument("--file", type=Path, required=True, help="the users file (created when missing)")


def run_users_command(args: argparse.Namespace, stdin: TextIO | None = None) -> int:
    """Run ``users add``; the exit status."""
    try:
        _add(args.name, args.file, stdin if stdin is not None else sys.stdin)
    except ConfigurationError as why:
        print(f"ragtrace-collector users: {why}", file=sys.stderr)
        return 2
    print(f"{args.name} can sign in with that password once serve --users-file {args.file} (re)starts")
    return 0


def _add(name: str, path: Path, stdin: TextIO) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigurationError(f"{name!r}: a name is 1 to 64 characters without spaces, colons or control characters")
    existing = ""
    if path.exists():
        try:
            existing = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"--file {path}: cannot read it ({type(exc).__name__})") from None
        if any(line.strip() and not line.strip().startswith("#") for line in existing.splitlines()):
            read_users(path, "--file")  # a wrong line already there: said (naming it) before anything is written
    password = _password(stdin)
    text = users_text(existing, name, hash_password(password))
    # Written beside it and renamed: a reader (a collector starting) sees the old file or the new, never half.
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(partial, path)


def _password(stdin: TextIO) -> str:
    if stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            raise ConfigurationError("the two passwords differ; nothing written")
    else:
        first = stdin.readline().rstrip("\r\n")
    if len(first) < _MIN_PASSWORD:
        raise ConfigurationError(f"the password is shorter than {_MIN_PASSWORD} characters; nothing written")
    return first
