"""Export the trained answer reader to ONNX, quantize it to int8, and check both against torch.

Loads what ``train.py`` saved, writes ``training/.work/reader-minilm-l6-int8.onnx`` and prints how far
each export strays from the torch model on the QA dev rows of the calibration split (questions and
passages it never trained on): the largest margin difference and the share of answers whose margin
changes side of ``margin >= -1`` (a fixed reference cut, set before the judge's was fitted).

    python training/reader/export.py --model training/.work/reader
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "training" / "judge"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # first: this folder's train.py, not the judge's

from onnx_export import int8_export  # noqa: E402
from train import DATA, ReaderModel  # noqa: E402

from ragtrace.judges.offline.reader import MODEL_ASSET, AnswerReader  # noqa: E402
from ragtrace.judges.offline.support import encode_pairs, load_tokenizer  # noqa: E402

MODEL_FILE = ROOT / "training" / ".work" / MODEL_ASSET


def check_items(limit: int) -> list[tuple[str, str, str]]:
    """(question, right answer, passage) of the first ``limit`` QA dev rows."""
    with open(DATA / "halueval_qa_dev.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()][:limit]
    return [(r["question"], r["right_answer"], r["knowledge"]) for r in rows]


class _TorchReader(AnswerReader):
    """``AnswerReader``'s reading with the torch model in place of the ONNX session."""

    def __init__(self, model: ReaderModel) -> None:
        super().__init__()
        self._torch = model
        self._tokenizer = load_tokenizer()

    def _load(self):  # type: ignore[no-untyped-def]
        return None, self._tokenizer

    def logits(self, question: str, passage: str):  # type: ignore[no-untyped-def]
        ids, mask, types = encode_pairs(self._tokenizer, [(question, passage)])
        with torch.no_grad():
            start, end = self._torch(*(torch.from_numpy(a) for a in (ids, mask, types)))
        return start.numpy()[0].astype(np.float64), end.numpy()[0].astype(np.float64), ids[0], types[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=ROOT / "training" / ".work" / "reader")
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    parser.add_argument("--check", type=int, default=200, help="dev calibration rows to compare on")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = ReaderModel.load(args.model).eval()
    model.encoder.set_attn_implementation("eager")  # as the support model: MatMul and Softmax, no Where
    tokenizer = load_tokenizer()
    example = tuple(torch.from_numpy(a) for a in encode_pairs(tokenizer, [("A question?", "A passage.")] * 2))
    items = check_items(args.check)
    reference = _TorchReader(model).margins(items)
    logits = {"start_logits": {0: "batch", 1: "tokens"}, "end_logits": {0: "batch", 1: "tokens"}}
    with int8_export(model, example, args.out, logits) as float_path:
        read = ~np.isnan(reference)
        for label, path in (("float ONNX", float_path), ("int8 ONNX", args.out)):
            margins = AnswerReader(str(path)).margins(items)
            gap = np.max(np.abs(margins[read] - reference[read]))
            flipped = np.mean((margins[read] >= -1) != (reference[read] >= -1))
            print(f"{label}: max |margin - torch| {gap:.4f}; cut at -1 changed {flipped:.3%} ({read.sum()} answers)")
        print(f"torch: the right answer is the reader's choice (margin 0) for {np.mean(reference[read] == 0):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
