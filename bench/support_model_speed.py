"""How long the offline judge's support model takes a pair, against another export of it, in one run.

Reads the support model ragtrace ships (``ragtrace/judges/_assets``) and a baseline file (by default the
same asset as it was at ``--baseline-commit``, taken from git) on the same pairs: the claims of HaluEval
QA calibration rows against their knowledge, encoded once, one pair a model run as the judge runs them.
The two models take turns pair by pair (this machine's speed drifts within a run; taking turns gives
both the same drift). Prints, on one core:
- milliseconds a pair of each and the ratio shipped / baseline,
- how far the logits of the two stray (largest and mean absolute difference) and the share of pairs
  whose decision at logit 0 differs,
- whether their quantized tensors (int8 weights, scales, zero points) are the same (by content: a re-export
  keeps them, a retraining not),
- the machine's speed before and after (``machine.loop_ms``).

    python bench/support_model_speed.py                          # against the asset at 01c0dec
    python bench/support_model_speed.py --baseline other.onnx --rounds 5
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from judge_accuracy import load, pin_to_one_core
from machine import loop_ms

from ragtrace.judges.offline import support, text

ROOT = Path(__file__).resolve().parents[1]
ASSET = ROOT / "ragtrace" / "judges" / "_assets" / support.MODEL_ASSET


def baseline_file(commit: str, directory: str) -> Path:
    """The shipped asset as it was at ``commit`` (``git show``), written into ``directory``."""
    relative = ASSET.relative_to(ROOT).as_posix()
    blob = subprocess.run(["git", "show", f"{commit}:{relative}"], cwd=ROOT, capture_output=True, check=True)
    path = Path(directory) / f"baseline-{commit}.onnx"
    path.write_bytes(blob.stdout)
    return path


def pairs_of(rows: int) -> list[tuple[str, str]]:
    """(claim, first window) of the claims of the first ``rows`` QA calibration rows, both answers."""
    out: list[tuple[str, str]] = []
    for example in load("qa", "train")[: 2 * rows]:
        windows = support.chunk_windows(example.chunk)
        out.extend((claim, windows[0]) for claim in text.extract_claims(example.text, example.question))
    return out


def weight_digests(path: Path) -> Counter[str] | None:
    """Content digests of the quantized tensors of an ONNX file, each counted as often as it occurs (``None``
    without the onnx package)."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        return None
    digests: Counter[str] = Counter()
    for tensor in onnx.load(str(path)).graph.initializer:
        if tensor.name.endswith(("_quantized", "_scale", "_zero_point")):
            array = np.ascontiguousarray(numpy_helper.to_array(tensor))
            digests[hashlib.sha256(array.tobytes() + str(array.shape).encode()).hexdigest()] += 1
    return digests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="an ONNX file to compare with (else --baseline-commit's asset)")
    parser.add_argument("--baseline-commit", default="01c0dec", help="git commit whose shipped asset is the baseline")
    parser.add_argument("--rows", type=int, default=100, help="QA calibration rows (two records each)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the pairs")
    args = parser.parse_args(argv)
    # Every thread started from here on (onnxruntime's among them) stays on this core: run the benchmark in a
    # process of its own (its test does).
    pin_to_one_core()
    return measure(args)


def measure(args: argparse.Namespace) -> int:
    """Print the figures of the module's docstring for ``args``."""
    with tempfile.TemporaryDirectory() as tmp:
        baseline = args.baseline or baseline_file(args.baseline_commit, tmp)
        models = {"shipped": support.SupportModel(str(ASSET)), "baseline": support.SupportModel(str(baseline))}
        for model in models.values():
            model.load()
        pairs = pairs_of(args.rows)
        tokenizer = support.load_tokenizer()
        encoded = [support.encode_pairs(tokenizer, [pair]) for pair in pairs]
        tokens = np.mean([e[0].shape[1] for e in encoded])
        print(
            f"support model, one core: {len(pairs)} pairs of {args.rows} QA calibration rows (mean {tokens:.0f} "
            f"word pieces), {args.rounds} rounds, models taking turns pair by pair; baseline "
            f"{args.baseline or f'{ASSET.name} at {args.baseline_commit}'}"
        )
        print(f"machine speed: a fixed Python loop {loop_ms():.0f} ms (bench/machine.py)")
        seconds = dict.fromkeys(models, 0.0)
        logits = {name: np.empty(len(pairs)) for name in models}
        for _ in range(args.rounds):
            for i, pair in enumerate(encoded):
                for name, model in models.items():
                    start = time.perf_counter()
                    logits[name][i] = model.run(pair)[0]
                    seconds[name] += time.perf_counter() - start
        runs = args.rounds * len(pairs)
        for name in models:
            print(f"{name:9s} {seconds[name] / runs * 1e3:6.2f} ms a pair")
        print(f"ratio shipped / baseline: {seconds['shipped'] / seconds['baseline']:.3f}")
        gap = np.abs(logits["shipped"] - logits["baseline"])
        flipped = np.mean((logits["shipped"] >= 0) != (logits["baseline"] >= 0))
        print(f"logits: max |difference| {gap.max():.3f}, mean {gap.mean():.4f}; decisions at 0 changed {flipped:.2%}")
        ours, theirs = weight_digests(ASSET), weight_digests(baseline)
        if ours is None or theirs is None:
            print("int8 weights: not compared (the onnx package is not installed; it is in .venv-train)")
        else:
            same, total = (ours & theirs).total(), ours.total()
            print(
                f"quantized tensors (weights, scales, zero points) identical by content: {same} of {total}"
                f" (baseline: {theirs.total()})"
            )
    print(f"machine speed at the end: the same loop {loop_ms():.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
