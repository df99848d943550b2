"""The ``ragtrace`` command. Subcommands register themselves in ``COMMANDS``.

``ragtrace eval FILE.jsonl [--metrics a,b] [--base-url URL --model M] [--out report.md]`` scores a
JSONL file of RAG records and prints the markdown summary. Without ``--base-url``/``--model``/
``--judge``, the judge is chosen by ``RAGTRACE_JUDGE`` (the OpenAI-compatible judge when a key or base
URL is configured, else the offline judge).

Exit status: 0 on success, 2 on a usage or configuration error (the message names the fix).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges._base import Judge

__all__ = ["COMMANDS", "build_parser", "main"]


def _fields(text: str) -> tuple[str, str]:
    target, sep, source = text.partition("=")
    if not sep or not target.strip() or not source.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write FIELD=KEY, e.g. answer=hallucinated_answer")
    return target.strip(), source.strip()


def _judge_from_args(args: argparse.Namespace) -> Judge | None:
    if args.base_url or args.model or args.api_key or args.judge == "openai":
        from ragtrace.judges.openai import OpenAIJudge

        return OpenAIJudge(
            model=args.model, embedding_model=args.embedding_model, base_url=args.base_url, api_key=args.api_key
        )
    if args.judge in (None, "auto"):
        return None  # evaluate() picks the default judge and closes it
    if args.judge == "offline":
        from ragtrace.judges.offline import OfflineJudge

        return OfflineJudge()
    module, sep, attr = args.judge.partition(":")
    if not sep:
        raise ConfigurationError(f"--judge {args.judge!r}: use auto, openai, offline or module:factory")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigurationError(f"--judge {args.judge!r}: cannot load it ({err})") from None
    judge: Judge = factory()
    return judge


def _run_eval(args: argparse.Namespace) -> int:
    from ragtrace._evaluate import EvaluationResult, aevaluate

    judge = _judge_from_args(args)

    async def run() -> EvaluationResult:
        # One event loop for scoring and closing: the judge's HTTP client belongs to it.
        try:
            return await aevaluate(
                args.file,
                metrics=args.metrics,
                judge=judge,
                concurrency=args.concurrency,
                progress=not args.no_progress,
                fields=dict(args.field or []),
            )
        finally:
            if judge is not None:
                await judge.aclose()

    result = asyncio.run(run())
    report = result.to_markdown(worst=args.worst, threshold=args.threshold)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    sys.stdout.write(report)
    return 0


def _add_eval(commands: Any) -> None:
    p = commands.add_parser(
        "eval",
        help="score a JSONL file of RAG records and print a markdown report",
        description="Score a JSONL file of RAG records (query, chunks, answer, optional reference) with a metric "
        "suite and print a markdown summary.",
    )
    p.add_argument("file", help="JSONL file, one record per line")
    p.add_argument("--metrics", help="comma-separated metric names (default: the production suite)")
    p.add_argument("--judge", help="auto (default), openai, offline, or module:factory returning a Judge")
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
    p.add_argument("--threshold", type=float, default=0.6, help="a metric below this is a problem (default 0.6)")
    p.add_argument("--worst", type=int, default=10, help="worst records listed (default 10)")
    p.add_argument("--out", help="also write the report to this file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=_run_eval)


COMMANDS: list[Callable[[Any], None]] = [_add_eval]
"""Each entry adds one subcommand to the subparsers it is given and sets ``run`` (args -> exit status)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``ragtrace`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="ragtrace", description="Score RAG traces with LLM-judge metrics.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except (ConfigurationError, ValueError, FileNotFoundError) as err:
        print(f"ragtrace: error: {err}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
