"""Build the (question, passage, label) pairs the offline relevance model is trained on.

Only ``halueval_qa_train.jsonl`` of ../shared/data is read (HaluEval QA rows 1000-5999); the dev rows
calibrate the judge's relevance rating and report it (``bench/judge_accuracy.py``'s relevance sets), and
no other HaluEval row is read. Each row gives, with the question as the pair's first text:

- ``own`` (1): the row's knowledge (cut to the window the judge would read first, ``window_for``);
- ``sentence`` (1): the knowledge sentence that names the right answer, alone (a chunk can be one
  sentence, and a short chunk that answers in other words must not lose to a long one that shares words);
- ``own_without_answer`` (0): the knowledge without its sentences that name the right answer (when some do
  and some do not): the question's own topic and words, no answer;
- ``neighbour`` (0): the knowledge of the train question sharing the most content words with this one
  (``judge_sets.Neighbours``, the construction of the dev relevance set, on other rows): on topic, words in
  common, no answer;
- ``neighbour_sentence`` (0): that knowledge's sentence sharing the most content words with the question:
  a short chunk that repeats the question's words without answering it;
- ``random`` (0): the knowledge of a random other row.

A negative whose text names the row's right answer is left out (near-duplicate questions share answers,
and such a passage may well answer). Everything is seeded.

    python training/relevance/build_data.py --out training/.work/relevance-pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "training" / "judge"))

from build_data import Pair, judge_sets, read, window_for  # noqa: E402

from ragtrace.judges.offline import text  # noqa: E402

SEED = 31


def names(passage: str, answer: str) -> bool:
    """Whether ``passage`` states ``answer`` (case folded)."""
    return bool(answer) and answer.lower() in passage.lower()


def best_sentence(question: str, passage: str) -> str | None:
    """The sentence of ``passage`` sharing the most content words with ``question`` (None when none shares one)."""
    wanted = text.content_words(question)
    scored = [(len(text.content_words(s) & wanted), s) for s in text.split_sentences(passage)]
    shared, sentence = max(scored, default=(0, ""), key=lambda pair: pair[0])
    return sentence if shared else None


def pairs_of(rows: list[dict[str, str]], rng: random.Random) -> list[Pair]:
    nearest = judge_sets.Neighbours.of(rows).nearest
    out: list[Pair] = []
    for i, row in enumerate(rows):
        question, knowledge, answer = row["question"], row["knowledge"], row["right_answer"].strip().rstrip(".")
        out.append(Pair(question, window_for(question, knowledge), 1, "own", i))
        sentences = text.split_sentences(knowledge)
        stating = [s for s in sentences if names(s, answer)]
        if stating:
            out.append(Pair(question, stating[0], 1, "sentence", i))
            rest = [s for s in sentences if not names(s, answer)]
            if rest:
                out.append(Pair(question, " ".join(rest), 0, "own_without_answer", i))
        other = rows[nearest[i]]["knowledge"]
        if other != knowledge and not names(other, answer):
            out.append(Pair(question, window_for(question, other), 0, "neighbour", i))
            sentence = best_sentence(question, other)
            if sentence is not None:
                out.append(Pair(question, sentence, 0, "neighbour_sentence", i))
        j = rng.randrange(len(rows) - 1)
        unrelated = rows[j if j < i else j + 1]["knowledge"]
        if not names(unrelated, answer):
            out.append(Pair(question, window_for(question, unrelated), 0, "random", i))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "training" / ".work" / "relevance-pairs.jsonl")
    args = parser.parse_args()
    rng = random.Random(SEED)
    pairs = pairs_of(read("halueval_qa_train.jsonl"), rng)
    rng.shuffle(pairs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(asdict(pair)) + "\n")
    kinds = Counter(p.kind for p in pairs)
    print(f"{len(pairs)} pairs -> {args.out}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
