"""Command line: ``python -m examples.support_bot ask|serve [options]`` from the repository root.

``ask`` asks N shipped questions and prints each answer (or a progress bar with ``--quiet``);
``serve`` runs the FastAPI app. Both trace with ragtrace, exporting OTLP to ``--endpoint`` (or the
standard ``OTEL_EXPORTER_OTLP_*`` variables), scoring ``--sample-rate`` of the calls with ``--judge``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

import ragtrace

from ._bot import DegradeSwitch
from ._factory import build_bot
from ._runner import Answer, run_questions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m examples.support_bot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="ask N shipped questions and print the answers")
    ask.add_argument("--questions", type=int, default=20, help="how many questions (default 20)")
    ask.add_argument("--quiet", action="store_true", help="a progress bar instead of every answer")
    serve = sub.add_parser("serve", help="serve POST /ask (streamed answers) with uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    for command in (ask, serve):
        command.add_argument("--endpoint", help="OTLP endpoint, e.g. http://127.0.0.1:4318 (default: OTEL_* variables)")
        command.add_argument("--protocol", choices=("http/protobuf", "grpc"), default=None)
        command.add_argument("--service-name", default="support-bot")
        command.add_argument("--sample-rate", type=float, default=None, help="share of calls scored (0 to 1)")
        command.add_argument("--judge", choices=("auto", "offline"), default="auto", help="who scores (default auto)")
        command.add_argument("--degrade-after", type=int, default=None, metavar="N", help="hallucinate from question N")
        command.add_argument("--degrade-rate", type=float, default=0.8, help="share of answers degraded (default 0.8)")
        command.add_argument("--top-k", type=int, default=3, help="chunks retrieved per question (default 3)")
        command.add_argument(
            "--no-metrics",
            action="store_true",
            help="export no OTel metrics (the ragtrace collector takes traces only)",
        )
    return parser


def configure_tracing(args: argparse.Namespace) -> Any:
    """``ragtrace.configure`` from the command line options; returns its handle (call ``shutdown()``)."""
    options: dict[str, Any] = {"service_name": args.service_name}
    if args.endpoint:
        options["endpoint"] = args.endpoint
    if args.protocol:
        options["protocol"] = args.protocol
    if args.sample_rate is not None:
        options["sample_rate"] = args.sample_rate
    if args.no_metrics:
        options["export_metrics"] = False
    if args.judge == "offline":
        from ragtrace.judges.offline import OfflineJudge

        options["judge"] = OfflineJudge()
    return ragtrace.configure(**options)


def _print_answer(answer: Answer) -> None:
    mark = "degraded" if answer.degraded else ("ok" if answer.correct else "miss")
    print(f"[{answer.index:>4}] {answer.question}\n       -> {answer.answer.strip()}  ({mark})", flush=True)


async def _ask(args: argparse.Namespace) -> int:
    bot = build_bot(degrade=DegradeSwitch(after=args.degrade_after, rate=args.degrade_rate), top_k=args.top_k)
    if args.quiet:
        from tqdm import tqdm

        with tqdm(total=args.questions, unit="q", desc="questions") as bar:
            answers = await run_questions(bot, args.questions, on_answer=lambda _: bar.update())
    else:
        answers = await run_questions(bot, args.questions, on_answer=_print_answer)
    healthy = [a for a in answers if not a.degraded]
    if healthy:
        correct = sum(a.correct for a in healthy)
        degraded = len(answers) - len(healthy)
        print(f"{correct}/{len(healthy)} healthy answers contain the known answer; {degraded} degraded")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    handle = configure_tracing(args)
    try:
        if args.command == "ask":
            return asyncio.run(_ask(args))
        import uvicorn

        from ._app import create_app

        bot = build_bot(degrade=DegradeSwitch(after=args.degrade_after, rate=args.degrade_rate), top_k=args.top_k)
        uvicorn.run(create_app(bot), host=args.host, port=args.port, log_level="warning")
        return 0
    finally:
        handle.shutdown()


if __name__ == "__main__":
    sys.exit(main())
