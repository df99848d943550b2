"""The relevance model alone, against the embedding cosine alone, on the dev calibration split.

For each relevance set of ``bench/judge_accuracy.py`` (``relevance_neighbour`` on the calibration split's rows,
``relevance_paraphrase``, hand-written, the same on every split) it prints the AUROC of the model's logit and of
the question's cosine with the whole chunk, and the share of relevant chunks the model reads as relevant
(logit >= 0) and of irrelevant ones it does. Choices about the model are made here and on the calibration
split in the judge; the judge's figures on the test split come from bench/judge_accuracy.py.

    python training/relevance/evaluate.py --model training/.work/relevance-minilm-l6-int8.onnx
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import RELEVANCE_SETS, auroc, relevance_cases  # noqa: E402

from ragtrace.judges.offline.embedder import Embedder  # noqa: E402
from ragtrace.judges.offline.relevance import RelevanceModel  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="the ONNX file (default: the one ragtrace ships)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many cases a set (0: all)")
    args = parser.parse_args()
    model, embedder = RelevanceModel(args.model), Embedder()
    print(
        f"{'set (calibration split)':<24}{'n':>5}{'model AUROC':>13}{'cosine AUROC':>14}{'relevant >= 0':>15}"
        f"{'irrelevant >= 0':>17}"
    )
    for name in RELEVANCE_SETS:
        cases = relevance_cases(name, "train")
        if args.limit:
            cases = cases[: args.limit]
        logits, cosines, labels = [], [], []
        for case in cases:
            logits.extend(model.relevance(case.question, [case.relevant, case.irrelevant]).tolist())
            q, relevant, irrelevant = embedder.embed([case.question, case.relevant, case.irrelevant])
            cosines.extend([float(q @ relevant), float(q @ irrelevant)])
            labels.extend([True, False])
        said = np.asarray(logits) >= 0
        truth = np.asarray(labels)
        print(
            f"{name:<24}{len(cases):>5}{auroc(logits, labels):>13.3f}{auroc(cosines, labels):>14.3f}"
            f"{said[truth].mean():>15.3f}{said[~truth].mean():>17.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
