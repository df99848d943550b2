"""How long the offline judge takes a record here, against the judge of another commit, in one run.

The same records (the first ``--records`` of a ``bench/judge_accuracy.py`` set, test split) are scored by
``Faithfulness`` through ``OfflineJudge`` in child processes, each on one core, taking turns between this
tree and a git worktree of ``--baseline-commit`` (this machine's speed drifts within a run; taking turns
gives both the same drift). Each child reads one record to warm up, then times the others on CPU time
(``time.process_time``: what the judge costs, not what the machine's neighbours take). ``--step
rate_chunks`` times ``rate_chunks`` instead (a record's question against its own chunk and the next record's).
Prints for each tree the milliseconds a record (median over rounds), the ratio this / baseline, and whether
both gave the same scores to the last digit (a change meant to be faster only must not move one).

``--without-model`` puts a logit of 0 in place of each support-model run: what is left is the judge's own
reading of the texts around the model (sentences, words, windows, the word rules), which the model's time
otherwise hides.

    python bench/offline_judge_speed.py --set summarization --records 40 --without-model
    python bench/offline_judge_speed.py --set qa --records 200 --baseline-commit a17baed
    python bench/offline_judge_speed.py --set qa --records 100 --step rate_chunks --baseline-commit 370a640
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def work(set_name: str, records: int, without_model: bool, step: str = "faithfulness") -> dict[str, object]:
    """Score the records in this process (``ragtrace`` as ``sys.path`` finds it); CPU ms a record and a
    digest of the scores. ``step``: ``faithfulness`` (the metric through the judge) or ``rate_chunks`` (the
    record's question against its own chunk and the next record's, in one call)."""
    import numpy as np
    from judge_accuracy import judge_one, load, pin_to_one_core

    from ragtrace.judges.offline import OfflineJudge
    from ragtrace.judges.offline.support import SupportModel

    pin_to_one_core()
    judge = OfflineJudge()
    judge.load()
    if without_model:
        model = judge.support_model
        assert isinstance(model, SupportModel)
        model.run = lambda encoded: np.zeros(encoded[0].shape[0])  # type: ignore[method-assign]
    examples = load(set_name, "test")[: records + 1]

    async def score_all() -> tuple[float, list[tuple[float, float | str | None]]]:
        values: list[tuple[float, float | str | None]] = []
        seconds = 0.0
        for i, example in enumerate(examples):
            start = time.process_time()
            if step == "rate_chunks":
                other = examples[(i + 1) % len(examples)].chunk
                ratings = (await judge.rate_chunks(example.question or "", [example.chunk, other])).value
                values.append((round(ratings[0], 12), round(ratings[1], 12)))
            else:
                judged = await judge_one(judge, example)  # the accuracy benchmark's own scoring of a record
                values.append((judged.faithfulness, judged.failed))
            if i:  # the first record warms up
                seconds += time.process_time() - start
        return seconds, values

    seconds, values = asyncio.run(score_all())
    digest = hashlib.sha256(json.dumps(values).encode()).hexdigest()[:16]
    return {"ms": seconds / max(len(examples) - 1, 1) * 1e3, "digest": digest, "records": len(examples) - 1}


def child(tree: Path, args: argparse.Namespace) -> dict[str, object]:
    """``work`` in a fresh process that imports ``ragtrace`` from ``tree``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--set", args.set]
    command += ["--records", str(args.records), "--step", args.step]
    command += ["--without-model"] if args.without_model else []
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tree), str(BENCH)])}
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the judge of {tree} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="summarization", help="a bench/judge_accuracy.py set")
    parser.add_argument("--records", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-commit", default="a17baed")
    parser.add_argument("--without-model", action="store_true", help="a logit of 0 for each support-model run")
    parser.add_argument(
        "--step", choices=("faithfulness", "rate_chunks"), default="faithfulness", help="what is timed a record"
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.without_model and args.step == "rate_chunks":
        parser.error("--without-model replaces the support model, which rate_chunks does not run")
    if args.worker:
        print(json.dumps(work(args.set, args.records, args.without_model, args.step)))
        return 0
    from machine import loop_ms

    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(baseline), args.baseline_commit], cwd=ROOT, check=True
        )
        try:
            print(
                f"offline judge, {args.step}, {args.set}, {args.records} records of the test split, one core, CPU "
                f"time; this tree against {args.baseline_commit}, {args.rounds} rounds taking turns"
                + ("; the support model replaced by a logit of 0" if args.without_model else "")
            )
            print(f"machine speed: a fixed Python loop {loop_ms():.0f} ms (bench/machine.py)")
            runs: dict[str, list[dict[str, object]]] = {"this tree": [], "baseline": []}
            for _ in range(args.rounds):
                runs["baseline"].append(child(baseline, args))
                runs["this tree"].append(child(ROOT, args))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, check=True)
    medians = {name: statistics.median(float(str(r["ms"])) for r in results) for name, results in runs.items()}
    for name, ms in medians.items():
        each = ", ".join(f"{float(str(r['ms'])):.1f}" for r in runs[name])
        print(f"{name:9s} {ms:7.1f} ms a record (rounds: {each})")
    print(f"ratio this tree / baseline: {medians['this tree'] / medians['baseline']:.3f}")
    digests = {str(r["digest"]) for results in runs.values() for r in results}
    print("scores: " + ("the same in every run" if len(digests) == 1 else f"DIFFERENT ({len(digests)} digests)"))
    print(f"machine speed at the end: the same loop {loop_ms():.0f} ms")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
