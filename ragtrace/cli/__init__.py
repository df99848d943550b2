"""The ``ragtrace`` command. Its folder: this dispatcher; ``eval.py`` (``ragtrace eval``) with ``judge_choice.py``
(the judge and metrics its flags choose), ``gates.py`` (``--fail-under``) and ``output.py`` (``--out`` files);
``calibrate.py`` (``ragtrace calibrate``) with ``calibration.py`` (the fit). Subcommands register themselves in
``COMMANDS``; ``--version`` prints the
package version, and every help text is printed plain (RST markup stripped, see ``_plain``).

``ragtrace calibrate FILE.jsonl [--label FIELD]`` fits the LLM judge's ``support_threshold`` to labelled
records (``calibrate``, whose docstring is its contract).

``ragtrace eval FILE.jsonl [--metrics a,b] [--criteria TEXT] [--base-url URL --model M] [--out F ...]
[--fail-under METRIC=VALUE ...]`` scores a JSONL file of RAG records and prints the markdown report;
its parser and run are ``eval``, and what follows is its contract.

The judge: any of ``--base-url``, ``--model``, ``--embedding-model`` or ``--api-key`` (or ``--judge
openai``) builds the OpenAI-compatible judge from those flags (the rest from ``RAGTRACE_JUDGE_*``);
``--judge tiered`` builds the tiered judge: the offline judge first, that OpenAI-compatible judge for
the doubtful records. With none of them and no ``--judge``, the judge is chosen by ``RAGTRACE_JUDGE``
(the OpenAI-compatible judge when a key or base URL is configured, else the offline judge). ``--judge
offline`` or ``module:factory`` with one of those flags is a usage error.

The metrics: ``--metrics`` (default: the production suite); ``--criteria TEXT`` adds the G-Eval metric
``geval`` with that criterion, alone when ``--metrics`` is not given.

The input (``ragtrace._eval_input``): a line that is not a record is skipped, named as ``FILE:LINE:COLUMN:
why`` on stderr before scoring and listed in the report; ``--strict`` makes the first one an error.
With ``--fail-under``, a skipped line fails the run (exit 3) unless ``--allow-bad-lines`` is given.
Records keep their line in the file (blank lines counted): the report's worst records and the
``--out`` rows are numbered by it.

Before any judge call: every ``--out`` is checked for writability (and refused when it is the input
file, however spelled or linked), ``--fail-under`` names are checked against the suite, and the file
is read, so a typo costs nothing. The report always goes to stdout first; each ``--out`` is then
written by its extension (``output``: ``.jsonl``/``.csv`` every record's scores, else the
report); if one still fails, the error goes to stderr.

A dead judge: after ``--max-connection-errors`` (default 5) records in a row could not reach the
judge, the records left are not scored and stderr says so with the judge's message, naming its URL.

Exit status: 0 when the report was printed and every ``--fail-under`` gate passed (also when some
scores are absent: the report's "absent" column names why, e.g. ``judge_error: 3 (connection)``); 1
when the run failed: it stopped early on a dead judge, no record could be scored because every
metric failed with a judge error (stderr names the error types, e.g. ``connection: 12``), or an
``--out`` file could not be written; 2 on a usage, configuration or data error (the message names the
fix), which includes a file with no record to score: empty, blank, or no line a record (a report of 0
records would pass for a run); 3 when a ``--fail-under`` gate failed (``gates``; stderr says which
and by how much), or when lines were skipped and ``--fail-under`` was given without ``--allow-bad-lines``:
a gate passing on part of the file would vouch for the rest.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ragtrace._exceptions import ConfigurationError
from ragtrace.cli.calibrate import add_calibrate
from ragtrace.cli.eval import add_eval
from ragtrace.cli.judge_choice import _judge_from_args as _judge_from_args  # still importable from here (tests)

__all__ = ["COMMANDS", "build_parser", "main"]


COMMANDS: list[Callable[[Any], None]] = [add_eval, add_calibrate]
"""Each entry adds one subcommand to the subparsers it is given and sets ``run`` (args -> exit status)."""


_RST_ROLE = re.compile(r":[\w:-]+:`([^`]+)`")
_RST_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def _plain(text: str) -> str:
    """``text`` without reStructuredText markup: ``x`` and `x` become x, :role:`x` becomes x."""
    text = _RST_ROLE.sub(r"\1", text)
    return _RST_LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


class _PlainHelp(argparse.HelpFormatter):
    """Mixed into a subcommand's formatter: help as a terminal shows it, without RST markup (help may be
    written like the docstrings it sits beside)."""

    def _format_text(self, text: str) -> str:
        return super()._format_text(_plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return _plain(super()._expand_help(action))


def _plain_help(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """``formatter`` (the one a parser chose, e.g. to keep its epilog's line breaks) printing plain help."""
    if issubclass(formatter, _PlainHelp):
        return formatter
    return type(f"Plain{formatter.__name__}", (_PlainHelp, formatter), {})


def _version() -> str:
    try:
        return importlib.metadata.version("ragtrace")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        from ragtrace import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The ``ragtrace`` argument parser with every registered subcommand; its help is plain text."""
    parser = argparse.ArgumentParser(
        prog="ragtrace",
        description="Score RAG traces with LLM-judge metrics.",
        formatter_class=_plain_help(argparse.HelpFormatter),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    for command in commands.choices.values():
        chosen = command.formatter_class
        if isinstance(chosen, type) and issubclass(chosen, argparse.HelpFormatter):  # not a factory function
            command.formatter_class = _plain_help(chosen)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except (ConfigurationError, ValueError, OSError) as err:
        print(f"ragtrace: error: {err}", file=sys.stderr)
        return 2
    return status
