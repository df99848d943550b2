"""The answer reader alone, against the support model alone, on the dev calibration split.

For every bare answer of the QA-built sets (the right answer and the wrong one: HaluEval's own where it is
bare, the length-controlled span, the same-kind span) it prints the AUROC of the reader's margin and of the
support model's logit for "<question>? <answer>", and of their sum after standardising, with the share of
answers the reader reads (the passage states them). Choices about the reader are made here, on the
calibration split; the judge's figures come from bench/judge_accuracy.py.

    python training/reader/evaluate.py --model training/.work/reader-minilm-l6-int8.onnx --limit 400
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import LENGTH_CONTROLLED, auroc, load  # noqa: E402

from ragtrace.judges._question_claims import answer_claim  # noqa: E402
from ragtrace.judges.offline import text  # noqa: E402
from ragtrace.judges.offline.reader import AnswerReader  # noqa: E402
from ragtrace.judges.offline.support import SupportModel  # noqa: E402

SETS = ("qa", LENGTH_CONTROLLED, "hn_same_kind")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=ROOT / "training" / ".work" / "reader-minilm-l6-int8.onnx")
    parser.add_argument("--limit", type=int, default=400, help="records of each set at most")
    parser.add_argument("--split", default="train", help="train: the calibration split (the default)")
    args = parser.parse_args()
    reader, support = AnswerReader(str(args.model)), SupportModel()
    for name in SETS:
        examples = [e for e in load(name, args.split)[: args.limit] if text.is_short_answer(e.text)]
        assert all(e.question for e in examples)
        margins = reader.margins([(e.question or "", e.text, e.chunk) for e in examples])
        logits = np.array(
            [support.support([answer_claim(e.question or "", e.text)], [e.chunk])[0, 0] for e in examples]
        )
        # A claim the support model does not read (NaN) ranks in the middle.
        logits = np.where(np.isfinite(logits), logits, np.nanmedian(np.where(np.isfinite(logits), logits, np.nan)))
        labels = np.array([e.grounded for e in examples])
        read = ~np.isnan(margins)
        filled = np.where(read, margins, np.nanmin(margins) - 1.0)
        z = (filled - filled.mean()) / filled.std() + (logits - logits.mean()) / logits.std()
        print(
            f"{name}: {len(examples)} bare answers, reader reads {read.mean():.1%} "
            f"(right {read[labels].mean():.1%}, wrong {read[~labels].mean():.1%}); AUROC reader "
            f"{auroc(filled, labels):.3f}, support model {auroc(logits, labels):.3f}, both {auroc(z, labels):.3f}; "
            f"right answers the reader's choice {np.mean(margins[labels & read] == 0):.1%}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
