"""Fine-tune all-MiniLM-L6-v2 into the offline judge's answer reader (``ragtrace/judges/offline/reader.py``).

Data: the QA train rows of ../shared/data (HaluEval QA rows 1000-5999) only: each row whose right answer's
word pieces occur in its passage is one example, (question, passage) encoded as the judge encodes it
(``support.encode_pairs``), the answer's occurrences the targets. Model: MiniLM's encoder and a linear
head giving a start and an end logit per token (``ReaderModel``). Loss: the usual extractive one, the
negative log of the probability of starting (and, apart, of ending) at any occurrence of the answer, the
softmax taken over the passage's tokens only. The word embeddings stay as pre-trained; everything is
seeded (the same data and settings give the same weights on the same CPU torch build).

    python training/reader/train.py --out training/.work/reader
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import BertConfig, BertModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "training" / "judge"))

from model import adamw_with_warmup, base_model_dir  # noqa: E402

from ragtrace.judges.offline.reader import answer_pieces, occurrences  # noqa: E402
from ragtrace.judges.offline.support import encode_pairs, load_tokenizer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
WEIGHTS = "reader.pt"


class ReaderModel(torch.nn.Module):
    """MiniLM's encoder and a start/end head over its last layer: two logits per token."""

    def __init__(self, encoder: BertModel) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(encoder.config.hidden_size, 2)

    @classmethod
    def from_base(cls) -> ReaderModel:
        return cls(BertModel.from_pretrained(str(base_model_dir()), add_pooling_layer=False))

    @classmethod
    def load(cls, directory: Path) -> ReaderModel:
        model = cls(BertModel(BertConfig.from_pretrained(str(directory)), add_pooling_layer=False))
        model.load_state_dict(torch.load(directory / WEIGHTS, weights_only=True))
        return model

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.encoder.config.save_pretrained(str(directory))
        torch.save(self.state_dict(), directory / WEIGHTS)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        start, end = self.head(hidden).unbind(-1)
        return start, end


def examples(rows: list[dict[str, str]]) -> list[tuple[str, str, list[tuple[int, int]]]]:
    """(question, passage, occurrences of the right answer) of each row whose passage states it."""
    tokenizer = load_tokenizer()
    out = []
    for row in rows:
        ids, _, types = encode_pairs(tokenizer, [(row["question"], row["knowledge"])])
        # Every match is a target, as for the shipped model; the judge reads only matches that end on a
        # word's end (``reader.continuation_ids``), which the train rows' right answers nearly always do.
        spans = occurrences(ids[0].tolist(), types[0].tolist(), answer_pieces(tokenizer, row["right_answer"]))
        if spans:
            out.append((row["question"], row["knowledge"], spans))
    return out


def loss_of(logits: torch.Tensor, passage: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over rows of -log(sum of softmax over passage tokens at the target positions)."""
    masked = logits.masked_fill(~passage, -1e4)
    wanted = masked.masked_fill(~targets, -1e4)
    return (torch.logsumexp(masked, dim=1) - torch.logsumexp(wanted, dim=1)).mean()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "training" / ".work" / "reader")
    parser.add_argument("--rows", type=int, default=5000, help="the first N QA train rows")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--warmup", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    with open(DATA / "halueval_qa_train.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()][: args.rows]
    data = examples(rows)
    print(f"{len(data)} of {len(rows)} rows state their answer", flush=True)
    tokenizer = load_tokenizer()
    model = ReaderModel.from_base()
    for parameter in model.encoder.embeddings.parameters():
        parameter.requires_grad_(False)
    model.train()
    per_epoch = math.ceil(len(data) / args.batch)
    total = int(per_epoch * args.epochs)
    plan: list[list[int]] = []
    while len(plan) < total:
        order = list(range(len(data)))
        rng.shuffle(order)
        plan.extend(order[i : i + args.batch] for i in range(0, len(order), args.batch))
    plan = plan[:total]
    optimizer, schedule = adamw_with_warmup(model, args.lr, args.head_lr, total, args.warmup)
    begun, running = time.perf_counter(), 0.0
    for step, batch in enumerate(plan, start=1):
        ids, mask, types = encode_pairs(tokenizer, [(data[i][0], data[i][1]) for i in batch])
        passage = (types == 1) & (mask == 1)
        passage[np.arange(len(batch)), mask.sum(axis=1) - 1] = False  # the closing [SEP]
        starts = np.zeros_like(passage)
        ends = np.zeros_like(passage)
        for row, i in enumerate(batch):
            for s, e in data[i][2]:
                starts[row, s] = True
                ends[row, e] = True
        start, end = model(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(types))
        where = torch.from_numpy(passage)
        loss = (loss_of(start, where, torch.from_numpy(starts)) + loss_of(end, where, torch.from_numpy(ends))) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        running = 0.9 * running + 0.1 * loss.item() if step > 1 else loss.item()
        if step % 25 == 0 or step == total:
            elapsed = time.perf_counter() - begun
            print(f"step {step}/{total} loss {running:.4f} {elapsed / step:.2f} s/step", flush=True)
    model.save(args.out)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
