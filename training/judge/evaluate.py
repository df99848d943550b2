"""Measure the exported support model alone on the HaluEval dev files, beside word overlap.

A record's score is its least-supported claim's support (each claim's best logit over its
windows of the chunk): a text is as faithful as its weakest claim. Printed for the calibration split
(first 80 %, where a model is chosen) and the test split (last 20 %), for QA, summarization and the
length-controlled set (``bench/judge_accuracy.py``; ``--sets`` adds the hard-negative constructions of
``bench/judge_sets.py``), with the bag-of-words baseline and 95 % paired-bootstrap intervals.

    python training/judge/evaluate.py [--model training/.work/support-minilm-l6-int8.onnx]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import LENGTH_CONTROLLED, SETS, auroc, bag_of_words, bootstrap_intervals, load  # noqa: E402
from judge_sets import CONSTRUCTIONS  # noqa: E402
from support import MODEL_FILE, SupportModel  # noqa: E402

from ragtrace.judges.offline import text  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=MODEL_FILE)
    parser.add_argument("--limit", type=int, default=0, help="at most this many records per set and split")
    parser.add_argument(
        "--sets",
        nargs="+",
        choices=(*SETS, LENGTH_CONTROLLED, *CONSTRUCTIONS),
        default=[*SETS, LENGTH_CONTROLLED],
        help="the sets to measure (the hard-negative constructions of bench/judge_sets.py too)",
    )
    parser.add_argument("--splits", nargs="+", choices=("train", "test"), default=["train", "test"])
    args = parser.parse_args()
    model = SupportModel(str(args.model))
    print(f"{'split':<7}{'set':<22}{'n':>6}{'model AUROC':>13}{'base AUROC':>12}  95 % intervals")
    for split in args.splits:
        for name in args.sets:
            examples = load(name, split)
            if args.limit:
                examples = examples[: args.limit]
            scores = []
            for example in examples:
                claims = text.extract_claims(example.text, example.question)
                scores.append(float(model.support(claims, [example.chunk]).min()) if claims else -99.0)
            labels = [e.grounded for e in examples]
            base = [bag_of_words(e.text, e.chunk) for e in examples]
            ci = bootstrap_intervals([e.row for e in examples], labels, {"model": scores, "baseline": base})
            shown = "; ".join(f"{k} [{lo:.3f}, {hi:.3f}]" for k, (lo, hi) in ci.items())
            split_name = "calib" if split == "train" else "test"
            figures = f"{auroc(scores, labels):>13.3f}{auroc(base, labels):>12.3f}"
            print(f"{split_name:<7}{name:<22}{len(examples):>6}{figures}  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
