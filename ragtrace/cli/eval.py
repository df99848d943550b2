"""The ``ragtrace eval`` subcommand: ``add_eval`` adds its parser to the ``ragtrace`` subparsers (it is in
``ragtrace.cli.COMMANDS``) and sets ``run`` to its run, which takes the parsed arguments and returns the
exit status. What the command does for its user (the judge and metrics the flags choose, skipped lines,
the checks made before any judge call, a dead judge, the exit statuses) is stated in ``ragtrace.cli``'s
docstring, the command's documentation.

The run raises ``ConfigurationError``, ``ValueError`` or ``OSError`` for a usage, configuration or data
error (``ragtrace.cli.main`` prints it and exits 2), before any judge call when the flags or the file
are wrong; every other outcome is its return value (0, 1 or 3) with the report on stdout and each error
on stderr. Reading the input is ``ragtrace._eval_input``, writing ``--out`` files ``output``, the
``--fail-under`` gates ``gates``, the judge and metrics the flags choose ``choice``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtrace._exceptions import ConfigurationError
from ragtrace.cli.judge_choice import CRITERIA_METRIC, _judge_from_args, _suite_from_args

if TYPE_CHECKING:
    from ragtrace._eval_input import JsonlRecords
    from ragtrace._evaluation_result import EvaluationResult
    from ragtrace.cli.gates import Gate

__all__ = ["CRITERIA_METRIC", "add_eval"]


def _fields(text: str) -> tuple[str, str]:
    target, sep, source = text.partition("=")
    if not sep or not target.strip() or not source.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write FIELD=KEY, e.g. answer=hallucinated_answer")
    return target.strip(), source.strip()


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number >= 0")
    return value


def _gate(text: str) -> Gate:
    from ragtrace.cli.gates import parse_gate

    try:
        return parse_gate(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (links included); resolved paths when one does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is missing (or unreadable): compare where the paths lead
        return a.resolve() == b.resolve()


def _check_writable(path: Path) -> None:
    """Raise ``ConfigurationError`` unless ``path`` can be written; leaves no file behind."""
    if path.is_dir():
        raise ConfigurationError(f"--out {path}: is a directory; give a file path")
    existed = path.exists()
    try:
        # Append mode writes nothing and keeps an existing file as it is.
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as err:
        raise ConfigurationError(
            f"--out {path}: cannot write it ({err.strerror or err}); give a writable path"
        ) from None
    if not existed:
        path.unlink(missing_ok=True)


def _read_input(args: argparse.Namespace) -> JsonlRecords:
    """The records file, read before any judge is built; each skipped line is named on stderr at once."""
    from ragtrace._eval_input import read_jsonl
    from ragtrace._evaluation_result import SKIPPED_SHOWN

    loaded = read_jsonl(args.file, dict(args.field or []), strict=args.strict)
    for bad in loaded.skipped[:SKIPPED_SHOWN]:
        print(f"ragtrace: warning: {bad}; line skipped (--strict makes this an error)", file=sys.stderr)
    if len(loaded.skipped) > SKIPPED_SHOWN:
        print(f"ragtrace: warning: {len(loaded.skipped) - SKIPPED_SHOWN} more lines skipped", file=sys.stderr)
    if loaded.skipped and not loaded.records:
        # Nothing to score: most likely the wrong file or the wrong --field names, not a bad line or two.
        raise ValueError(f"{loaded.path}: no line is a record ({len(loaded.skipped)} skipped); is it the right file?")
    if not loaded.records:
        # One rule with the line above: no record to score is a usage error, never a report of 0 records that
        # a script or a CI gate would take for a pass (an export that wrote nothing, the wrong path).
        raise ValueError(
            f"{loaded.path}: the file has no records (it is empty or blank); give a JSONL file with one record "
            'per line, e.g. {"query": ..., "chunks": [...], "answer": ...}'
        )
    return loaded


def _write_outs(result: EvaluationResult, outs: list[Path], args: argparse.Namespace) -> bool:
    """Write each ``--out`` file in the format its extension names; False (said on stderr) if one failed."""
    from ragtrace.cli.output import output_format, render

    written = True
    for out in outs:
        kind = output_format(out)
        try:
            # newline="": the csv module writes the CSV line ends itself; text files get "\n" as written.
            out.write_text(render(result, kind, args.worst, args.threshold), encoding="utf-8", newline="")
        except OSError as err:
            print(
                f"ragtrace: error: the report is on stdout but --out {out} could not be written: {err}", file=sys.stderr
            )
            written = False
    return written


def _run_eval(args: argparse.Namespace) -> int:
    from ragtrace._evaluate import aevaluate
    from ragtrace.cli.gates import check_metrics, failures

    outs = [Path(out) for out in args.out or []]
    for out in outs:
        if _same_file(out, Path(args.file)):
            raise ConfigurationError(
                f"--out {out} is the input file {args.file}: it would be overwritten; give another path"
            )
        _check_writable(out)  # before any judge call: a typo must not waste the run
    suite = _suite_from_args(args)
    gates = args.fail_under or []
    check_metrics(gates, suite.names)
    loaded = _read_input(args)
    judge = _judge_from_args(args)

    async def run() -> EvaluationResult:
        # One event loop for scoring and closing: the judge's HTTP client belongs to it.
        try:
            return await aevaluate(
                loaded,
                metrics=suite,
                judge=judge,
                concurrency=args.concurrency,
                progress=not args.no_progress,
                max_connection_errors=args.max_connection_errors or None,
            )
        finally:
            if judge is not None:
                await judge.aclose()

    result = asyncio.run(run())
    report = result.to_markdown(worst=args.worst, threshold=args.threshold)
    # stdout first: the paid-for report is never lost to a file that could not be written.
    sys.stdout.write(report)
    sys.stdout.flush()
    status = 0 if _write_outs(result, outs, args) else 1
    if result.stopped:
        print(
            f"ragtrace: error: stopped early: {result.stopped}; {result.not_scored} of "
            f"{result.count + result.not_scored} records were not scored. Is the judge running, and are "
            "--base-url and --api-key right? (--max-connection-errors 0 never stops)",
            file=sys.stderr,
        )
        status = 1
    elif result.judge_failed:
        # Every score is absent because the judge failed (a dead endpoint, a wrong key or model): this
        # must not pass for a run in a script or CI. A partial failure stays 0; the report counts it.
        kinds = ", ".join(f"{kind}: {n}" for kind, n in result.errors.items())
        print(
            f"ragtrace: error: no record could be scored (judge errors: {kinds}); check the judge: "
            "is its endpoint up, are --base-url, --api-key and --model right?",
            file=sys.stderr,
        )
        status = 1
    # A gate is about quality; with no score at all (above) the run failed, which says more.
    failed = [] if result.stopped or result.judge_failed else failures(gates, result)
    for why in failed:
        print(f"ragtrace: error: quality gate failed: {why}", file=sys.stderr)
    partial = _partial_input(result, args) if gates and not (result.stopped or result.judge_failed) else None
    if partial:
        print(f"ragtrace: error: {partial}", file=sys.stderr)
    if (failed or partial) and status == 0:
        status = 3
    return status


def _partial_input(result: EvaluationResult, args: argparse.Namespace) -> str | None:
    """Why ``--fail-under`` cannot pass on a file with skipped lines, or None (none, or ``--allow-bad-lines``).

    A gate in CI vouches for the file: passing on the records that happened to parse would let a
    truncated or half-corrupt golden set through.
    """
    skipped = len(result.skipped)
    if not skipped or args.allow_bad_lines:
        return None
    lines = "1 line of" if skipped == 1 else f"{skipped} lines of"
    were, them = ("is not a record and was", "it") if skipped == 1 else ("are not records and were", "them")
    return (
        f"--fail-under: {lines} {args.file} {were} not scored (named above and in the report), so the gates "
        f"did not see the whole file; fix {them}, pass --allow-bad-lines to gate on the records read, or "
        "--strict to stop at the first bad line"
    )


_EVAL_EPILOG = """\
--out FILE, by the extension of FILE:
  .jsonl, .ndjson  one JSON object per record scored: line, index, query,
                   answer, overall, scores (value, label, status, reason,
                   error_type, explanation of each metric)
  .csv             the same, one row per record, a column per metric and field
  anything else    the markdown report printed on stdout

exit status:
  0  the report was printed and every --fail-under gate passed
  1  the run failed: the judge could not be reached (stopped early), no record
     could be scored, or an --out file could not be written
  2  usage, configuration or data error, or no record to score (an empty
     file, or no line a record); the message names the fix
  3  a --fail-under gate failed
     (with --fail-under, a skipped line fails too: see --allow-bad-lines)
"""


def add_eval(commands: Any) -> None:
    p = commands.add_parser(
        "eval",
        help="score a JSONL file of RAG records and print a markdown report",
        description="Score a JSONL file of RAG records (query, chunks, answer, optional reference)\n"
        "with a metric suite and print a markdown report. Lines that are not records\n"
        "are skipped and named (--strict stops at the first one).",
        epilog=_EVAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the epilog's lists keep their lines
    )
    p.add_argument("file", help="JSONL file, one record per line")
    p.add_argument("--metrics", help="comma-separated metric names (default: the production suite)")
    p.add_argument("--judge", help="auto (default), openai, offline, tiered, or module:factory returning a Judge")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="judge chat model (default RAGTRACE_JUDGE_MODEL or gpt-4o-mini)")
    p.add_argument("--embedding-model", help="judge embeddings model")
    p.add_argument("--api-key", help="API key of the endpoint (default RAGTRACE_JUDGE_API_KEY / OPENAI_API_KEY)")
    p.add_argument(
        "--field",
        action="append",
        type=_fields,
        metavar="FIELD=KEY",
        help="read a record field from another key, e.g. --field chunks=knowledge (repeatable)",
    )
    p.add_argument("--concurrency", type=int, default=8, help="records scored at once (default 8)")
    p.add_argument(
        "--max-connection-errors",
        type=_count,
        default=5,
        metavar="N",
        help="stop (exit 1) after N records in a row could not reach the judge (default 5; 0: never stop)",
    )
    p.add_argument(
        "--criteria",
        help='score G-Eval with this criterion as the metric geval, e.g. --criteria "The answer is polite" '
        "(with no --metrics, it is the only metric; the judge must answer G-Eval, the offline judge cannot)",
    )
    p.add_argument("--threshold", type=float, default=0.6, help="a metric below this is a problem (default 0.6)")
    p.add_argument("--worst", type=int, default=10, help="worst records listed (default 10)")
    p.add_argument(
        "--out",
        action="append",
        metavar="FILE",
        help="also write to FILE (repeatable; checked before scoring, never the input file): every record's "
        "scores, labels, reasons and explanations, with its line in the input, when FILE ends in .jsonl or .csv; "
        "else the report",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first line that is not a record (exit 2, naming FILE:LINE:COLUMN); "
        "by default such lines are skipped, named on stderr and listed in the report",
    )
    p.add_argument(
        "--allow-bad-lines",
        action="store_true",
        help="let --fail-under pass on the records read when lines were skipped; by default skipped lines "
        "fail the gates (exit 3): they did not see the whole file",
    )
    p.add_argument(
        "--fail-under",
        action="append",
        type=_gate,
        metavar="METRIC=VALUE",
        help="exit 3 when METRIC's mean is worse than VALUE: below it, or above it for a lower-is-better "
        "metric such as hallucination (repeatable)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_eval)
