"""Does ``ragtrace calibrate``'s cut carry over? Fitted on calibration rows, measured on the test split.

``ragtrace calibrate`` fits the OpenAI-compatible judge's ``support_threshold`` to labelled records. This
benchmark fits it the same way (``ragtrace.cli.calibrate``) on HaluEval QA dev calibration rows (0 to
``--rows``) against a served model, then applies the cut to the test-split records of a
``bench/local_llm_accuracy.py`` results file of the same model (P(yes) measured there) and prints the
balanced accuracy of the judge's verdicts at the default cut 0.5 and at the fitted cut, with a 95 %
paired bootstrap interval of the difference over rows.

    python bench/local_llm.py serve --model 0.5b &
    .venv/bin/python bench/calibrate_cut.py --rows 100 --results bench/results/local_llm_0.5b_test.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_accuracy import load
from local_llm_accuracy import read_records

from ragtrace import RagRecord
from ragtrace.cli.calibrate import score_labelled
from ragtrace.cli.calibration import DEFAULT_CUT, balanced_accuracy, fit
from ragtrace.judges.openai import OpenAIJudge


def fitted_cut(args: argparse.Namespace) -> float:
    """The cut ``ragtrace calibrate`` prints for calibration rows 0 to ``args.rows`` (it prints the fit)."""
    examples = [e for e in load("qa", "train") if e.row < args.rows]
    records = [RagRecord.of(query=e.question or "", chunks=[e.chunk], answer=e.text) for e in examples]
    judge = OpenAIJudge(model=args.model, base_url=args.base_url)
    scored = asyncio.run(score_labelled(judge, records, [e.grounded for e in examples]))
    found = fit(scored.scores, scored.labels)
    print(
        f"fitted on calibration rows 0-{args.rows - 1} ({len(scored.scores)} records, {len(scored.failures)} "
        f"failed): cut {found.cut:.2f}, balanced accuracy {found.at_default:.3f} at {DEFAULT_CUT:.2f} and "
        f"{found.at_cut:.3f} at the cut (held out on halves: {found.held_out:.3f}), AUROC {found.auroc:.3f}"
    )
    return found.cut


def measured(path: str, cut: float, rounds: int = 1000, seed: int = 5) -> None:
    """Balanced accuracy at 0.5 and at ``cut`` on the results file's records, per set, with intervals."""
    records = read_records(path)
    for name in dict.fromkeys(r["set"] for r in records):
        rows = [r for r in records if r["set"] == name]
        scores = [float(r.get("ours_p", 0.0)) for r in rows]  # one-claim records: the claim's P(yes)
        labels = [bool(r["grounded"]) for r in rows]
        base, tuned = balanced_accuracy(scores, labels, DEFAULT_CUT), balanced_accuracy(scores, labels, cut)
        low, high = _interval(rows, scores, labels, cut, rounds, seed)
        print(
            f"{name}: {len(rows)} test records: balanced accuracy {base:.3f} at {DEFAULT_CUT:.2f}, {tuned:.3f} at "
            f"{cut:.2f} ({tuned - base:+.3f} [{low:+.3f}, {high:+.3f}])"
        )


def _interval(
    rows: Sequence[dict[str, object]],
    scores: Sequence[float],
    labels: Sequence[bool],
    cut: float,
    rounds: int,
    seed: int,
) -> tuple[float, float]:
    """95 % interval of BA(cut) - BA(0.5), resampling rows (both records of a row together)."""
    by_row: dict[object, list[int]] = {}
    for i, r in enumerate(rows):
        by_row.setdefault(r["row"], []).append(i)
    groups = list(by_row.values())
    rng = random.Random(seed)
    draws = []
    for _ in range(rounds):
        picked = [i for _ in groups for i in groups[rng.randrange(len(groups))]]
        s, lab = [scores[i] for i in picked], [labels[i] for i in picked]
        if all(lab) or not any(lab):
            continue
        draws.append(balanced_accuracy(s, lab, cut) - balanced_accuracy(s, lab, DEFAULT_CUT))
    draws.sort()
    return draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--rows", type=int, default=100, help="calibration rows from 0 (two records each)")
    parser.add_argument("--results", default="bench/results/local_llm_0.5b_test.jsonl")
    parser.add_argument("--cut", type=float, help="skip the fit: measure this cut")
    args = parser.parse_args(argv)
    cut = args.cut if args.cut is not None else fitted_cut(args)
    measured(args.results, cut)
    return 0


if __name__ == "__main__":
    sys.exit(main())
