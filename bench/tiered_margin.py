"""Fit the tiered judge's doubt band (``TieredJudge(margin=)``) on the calibration split, offline only.

The tiered judge sends a record to its LLM tier when some claim's offline support probability lies
within ``margin`` of the offline threshold, or the record falls in the audit share. Its goal is the
LLM judge's AUROC at <= 0.3x its calls, so the band is as wide as that budget allows. What a margin
costs can be measured without any LLM: the share of records it routes. This prints, for the
calibration split (the first 80 % of the dev rows, bench/judge_accuracy.py's ``train``) of QA and of
the length-controlled set built from it, the share routed at each margin, and the widest margin whose
share stays within ``--budget`` (default 0.25: the goal's 0.3x with room for the sampling noise of a
held-out set) on every set. ``ragtrace.judges.tiered.DEFAULT_MARGIN`` is that number.

    python bench/tiered_margin.py            # all calibration rows (about 40 s on one core)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_accuracy import LENGTH_CONTROLLED, SUMMARY_QUERY, load

from ragtrace.judges.offline import OfflineJudge
from ragtrace.judges.tiered.routing import DEFAULT_AUDIT_SHARE, needs_llm, offline_threshold, record_key

MARGINS = tuple(round(0.01 * i, 2) for i in range(0, 36))


async def best_probabilities(judge: OfflineJudge, name: str, limit: int) -> list[tuple[list[float], str]]:
    """Per record of the set's calibration split: each claim's best offline support, and its routing key."""
    examples = load(name, "train")
    if limit:
        examples = examples[: limit * 2]
    out: list[tuple[list[float], str]] = []
    for example in examples:
        claims = (await judge.extract_claims(example.text, question=example.question or SUMMARY_QUERY)).value
        if not claims:
            continue
        support = (await judge.support(claims, [example.chunk])).value
        out.append(([max(row) for row in support], record_key(claims, [example.chunk])))
    return out


def routed_share(records: Sequence[tuple[list[float], str]], threshold: float, margin: float) -> float:
    """Share of records ``needs_llm`` sends to the LLM tier (audit share included)."""
    hits = sum(needs_llm(best, key, threshold=threshold, margin=margin) for best, key in records)
    return hits / len(records)


async def run(args: argparse.Namespace) -> int:
    judge = OfflineJudge()
    judge.load()
    threshold = offline_threshold(judge)
    sets = {name: await best_probabilities(judge, name, args.limit) for name in ("qa", LENGTH_CONTROLLED)}
    print(f"offline threshold {threshold:.3f}; audit share {DEFAULT_AUDIT_SHARE:.0%}; budget {args.budget:.2f}")
    print(f"{'margin':>7}" + "".join(f"{name + f' ({len(r)})':>28}" for name, r in sets.items()))
    fitted = 0.0
    for margin in MARGINS:
        shares = [routed_share(records, threshold, margin) for records in sets.values()]
        print(f"{margin:>7.2f}" + "".join(f"{share:>28.3f}" for share in shares))
        if all(share <= args.budget for share in shares):
            fitted = margin
    print(f"widest margin within the budget on every set: {fitted:.2f}")
    await judge.aclose()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=0.25, help="largest share of records routed to the LLM")
    parser.add_argument("--limit", type=int, default=0, help="at most this many rows per set (0: all)")
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
