"""Export the trained support model to ONNX, quantize it to int8, and check both against torch.

Loads what ``train.py`` saved (``model.SupportModel``), writes
``training/.work/support-minilm-l6-int8.onnx`` (what ``evaluate.py`` measures) and prints how far each
export strays from the torch model on pairs the model never trained on (HaluEval
QA dev rows of the calibration split, as the judge will see them): the largest logit difference and
the share of pairs whose decision at p = 0.5 changes.

    python training/judge/export.py --model training/.work/model

The relevance model (``training/relevance``: the same architecture, compared on question-passage pairs):

    python training/judge/export.py --model training/.work/relevance --questions \
        --out training/.work/relevance-minilm-l6-int8.onnx

The shipped file again, only re-exported (its weights as they are, ``from_onnx.py`` first):

    python training/judge/from_onnx.py --out training/.work/model-shipped
    python training/judge/export.py --model training/.work/model-shipped
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_accuracy import load  # noqa: E402
from model import SupportModel  # noqa: E402
from onnx_export import int8_export  # noqa: E402
from support import (  # noqa: E402
    MODEL_FILE,
    best_windows,
    chunk_windows,
    encode_pairs,
    load_tokenizer,
)
from support import SupportModel as OnnxModel  # noqa: E402

from ragtrace.judges.offline import text  # noqa: E402


def check_pairs(limit: int, questions: bool = False) -> list[tuple[str, str]]:
    """Pairs of the first ``limit`` dev calibration records as the judge reads them: each claim against its
    best window of the record's knowledge, or (``questions``, the relevance model) the question against its
    own knowledge and against the next record's."""
    pairs: list[tuple[str, str]] = []
    examples = load("qa", "train")[:limit]
    for i, example in enumerate(examples):
        windows = chunk_windows(example.chunk)
        if questions:
            other = chunk_windows(examples[(i + 1) % len(examples)].chunk)
            for passage in (windows, other):
                question = example.question or ""
                pairs.append((question, passage[best_windows(question, passage, top=1)[0]]))
            continue
        for claim in text.extract_claims(example.text, example.question):
            pairs.append((claim, windows[best_windows(claim, windows, top=1)[0]]))
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=ROOT / "training" / ".work" / "model")
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    parser.add_argument("--check", type=int, default=200, help="dev calibration records to compare on")
    parser.add_argument(
        "--questions", action="store_true", help="compare on (question, passage) pairs: the relevance model"
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    model = SupportModel.load(args.model).eval()
    # Eager attention exports as MatMul, Add of the mask, Softmax. The default (SDPA) exports a boolean mask
    # with Where and IsNaN around every softmax: about 10 % of a run. Measured by bench/support_model_speed.py on
    # the shipped weights: 0.87x the time a pair, logits within 0.17, the quantized tensors identical.
    model.encoder.set_attn_implementation("eager")
    tokenizer = load_tokenizer()
    example = tuple(torch.from_numpy(a) for a in encode_pairs(tokenizer, [("A claim.", "A context.")] * 2))
    with int8_export(model, example, args.out, {"logits": {0: "batch"}}) as float_path:
        pairs = check_pairs(args.check, args.questions)
        encoded = encode_pairs(tokenizer, pairs)
        with torch.no_grad():
            reference = model(*(torch.from_numpy(a) for a in encoded)).numpy().reshape(-1)
        for label, path in (("float ONNX", float_path), ("int8 ONNX", args.out)):
            logits = OnnxModel(str(path)).pair_logits(pairs)
            flipped = np.mean((logits >= 0) != (reference >= 0))
            gap = np.max(np.abs(logits - reference))
            print(f"{label}: max |logit - torch| {gap:.4f}; decisions changed {flipped:.3%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
