"""What ``ragtrace eval``'s flags choose: the judge (``--judge``, ``--base-url``, ``--model``, ...) and the
metrics (``--metrics``, ``--criteria``). Both raise ``ConfigurationError`` naming the flag to fix, before
any judge call; the user-facing rules are in ``ragtrace.cli``'s docstring.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from typing import TYPE_CHECKING

from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import Judge

if TYPE_CHECKING:
    from ragtrace.metrics._suite import Suite

__all__ = ["CRITERIA_METRIC"]


_OPENAI_FLAGS = {
    "base_url": "--base-url",
    "model": "--model",
    "embedding_model": "--embedding-model",
    "api_key": "--api-key",
}


def _judge_from_args(args: argparse.Namespace) -> Judge | None:
    """The judge the flags ask for; None leaves the choice to ``RAGTRACE_JUDGE`` (see ``ragtrace.cli``'s docstring)."""
    given = [flag for name, flag in _OPENAI_FLAGS.items() if getattr(args, name) is not None]
    if args.judge not in (None, "auto", "openai", "tiered") and given:
        raise ConfigurationError(
            f"--judge {args.judge} does not use {', '.join(given)}: drop them, or use --judge openai"
        )
    if given or args.judge in ("openai", "tiered"):
        from ragtrace.judges.openai import OpenAIJudge

        llm = OpenAIJudge(
            model=args.model, embedding_model=args.embedding_model, base_url=args.base_url, api_key=args.api_key
        )
        if args.judge != "tiered":
            return llm
        from ragtrace.judges.tiered import TieredJudge

        return TieredJudge(llm=llm)
    if args.judge in (None, "auto"):
        return None  # evaluate() picks the default judge and closes it
    if args.judge == "offline":
        from ragtrace.judges.offline import OfflineJudge

        return OfflineJudge()
    module, sep, attr = args.judge.partition(":")
    if not sep:
        raise ConfigurationError(f"--judge {args.judge!r}: use auto, openai, offline, tiered or module:factory")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ConfigurationError(f"--judge {args.judge!r}: cannot load it ({err})") from None
    if not callable(factory):
        raise ConfigurationError(f"--judge {args.judge!r}: {attr} is not callable; name a function returning a Judge")
    try:
        judge = factory()
    except ConfigurationError:
        raise
    except Exception as err:  # the user's code: its failure is reported, not a traceback
        raise ConfigurationError(f"--judge {args.judge!r}: the factory raised {type(err).__name__}: {err}") from None
    if inspect.iscoroutine(judge):
        judge.close()  # never awaited: closed so that it leaves no warning behind
        raise ConfigurationError(f"--judge {args.judge!r} is async: give a plain function returning a Judge")
    if not isinstance(judge, Judge):
        raise ConfigurationError(
            f"--judge {args.judge!r} returned {type(judge).__name__}, not a judge: "
            "the factory must return a ragtrace.judges.Judge (e.g. OpenAIJudge(...))"
        )
    return judge


CRITERIA_METRIC = "geval"
"""The name of the G-Eval metric ``--criteria`` adds: its column in the report, ``--fail-under geval=...``."""


def _suite_from_args(args: argparse.Namespace) -> Suite:
    """``--metrics`` (default: the production suite), with ``--criteria`` as the G-Eval metric ``geval``.

    With ``--criteria`` and no ``--metrics`` only the criteria is scored: choosing what to measure
    replaces the default suite, as ``--metrics`` does. ``geval`` may be named in ``--metrics`` to place
    it; it then needs ``--criteria``.
    """
    from ragtrace.metrics import GEval
    from ragtrace.metrics._registry import build_suite

    names = [m for m in (part.strip() for part in (args.metrics or "").split(",")) if m]
    if args.criteria is None:
        if CRITERIA_METRIC in names:
            raise ConfigurationError(f'--metrics {CRITERIA_METRIC} needs its criteria: add --criteria "..."')
        return build_suite(args.metrics)
    if not args.criteria.strip():
        raise ConfigurationError('--criteria is empty: say what a good answer does, e.g. --criteria "polite"')
    if CRITERIA_METRIC not in names:
        names.append(CRITERIA_METRIC)
    geval = GEval(name=CRITERIA_METRIC, criteria=args.criteria)
    return build_suite([geval if name == CRITERIA_METRIC else name for name in names])
