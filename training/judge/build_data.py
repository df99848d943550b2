"""Build the (claim, context, label) pairs the offline cross-encoder is trained on.

Only the ``*_train.jsonl`` files of ../shared/data are read (HaluEval QA rows 1000-5999 and
summarization rows 500-2499); the ``*_dev.jsonl`` files calibrate and report, and no other HaluEval
row is ever read. Claims are cut by the offline judge's own ``extract_claims`` and contexts by
``support.chunk_windows``/``best_windows``, so the model is trained on the pairs it would see at run time.

The pairs are chosen to teach judgment, not length or word overlap (HaluEval's hallucinated texts are
longer than the right ones, so a model trained on them alone learns the length):

QA rows (knowledge, question, right and hallucinated answers):
- ``answer`` (1): the right answer's claims (a bare answer is joined to its question);
- ``hallucinated`` (0): the hallucinated answer, when it makes one claim (with several, which one is
  wrong is unknown);
- ``span`` (0): another span of the same knowledge, as long as the right answer, joined to the
  question: every word of it is in the passage, only reading the question tells it is wrong;
- ``sentence`` (1): the knowledge sentence that names the right answer, as a claim;
- ``swap`` (0): that sentence with the answer replaced by another name or number of the passage;
- ``negated`` (0): a sentence of the passage with its verb negated;
- ``number`` (0): a sentence of the passage with one of its numbers changed;
- ``copy`` (1) and ``copy_swap``/``copy_negated``/``copy_number`` (0): a sentence of the passage,
  unchanged or altered, against a context of that sentence alone (a chunk can be one sentence, and a
  claim that repeats its chunk word for word is supported: the first model, trained without these,
  rejected "The Eiffel Tower is in Paris." against that very sentence).

Swap-aware QA kinds (``--swap-aware``; every word of the wrong text is in the passage; only reading which
name, number or date goes with which fact tells it is wrong), built by ``bench/judge_sets.py``'s
constructions on the train rows (the dev rows' sets are built by the same code, on other rows and seeds):
- ``same_kind`` (0): another span of the passage of the right answer's kind (a year for a year, a name
  for a name), joined to the question;
- ``sentence_same_kind`` (0): the knowledge sentence that names the right answer, with the answer
  replaced by that span;
- ``swapped`` (0) and ``swapped_kept`` (1): a sentence of the passage with two same-kind spans swapped
  (or one replaced by a same-kind span of another sentence), and the sentence as it is;
- ``multi_swapped`` (0) and ``multi_kept`` (1): 2-5 sentences of the passage with one of them swapped so:
  the wrong sentence's claim, and one of the others' claims (the claims ``extract_claims`` cuts from the
  long answer, against their best windows: one wrong claim among supported ones).

Summarization rows (document, right and hallucinated summaries):
- ``summary`` (1): each claim of the right summary against its best window of the document;
- ``summary_unsupported`` (0): a claim of the hallucinated summary that shares no more than half of
  its content words with the document (the hallucinated summary's other claims may be true);
- ``doc_sentence`` (1) and ``doc_swap``/``doc_negated``/``doc_number`` (0): a sentence of the
  document, unchanged or altered as above, against the window it came from;
- ``copy`` and its alterations, as for QA.

Kept: every ``answer`` and ``span`` pair (``--full-kinds``; they teach reading the question, which the
length-controlled set measures, and a sample of the rest would leave a model at chance there), plus a
random sample of ``--max-pairs`` pairs of all kinds, without repeats, shuffled (17,036 pairs).

    python training/judge/build_data.py --out training/.work/pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import judge_sets  # noqa: E402
from judge_accuracy import DATA, length_controlled_span  # noqa: E402
from support import best_windows, chunk_windows  # noqa: E402

from ragtrace.judges.offline import text  # noqa: E402

SEED = 13
_NAME = re.compile(r"\b[A-Z][\w'\-]+(?:\s+(?:of|the|de|von|van|der|la|le)?\s*[A-Z][\w'\-]+)*")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")
_AUXILIARY = re.compile(r"\b(is|was|are|were|has|had|have|can|will|does|did)\b")
_MIN_SENTENCE_WORDS = 5


@dataclass(frozen=True, slots=True)
class Pair:
    """One training example: does ``context`` support ``claim``?"""

    claim: str
    context: str
    label: int
    kind: str
    row: int


def read(name: str) -> list[dict[str, str]]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def window_for(claim: str, context: str) -> str:
    """The window of ``context`` the judge would read ``claim`` against first."""
    windows = chunk_windows(context)
    return windows[best_windows(claim, windows, top=1)[0]] if windows else context


def swapped(sentence: str, passage: str, rng: random.Random) -> str | None:
    """``sentence`` with one name or number replaced by another of the passage (None if it has none)."""
    for pattern in (_NUMBER, _NAME) if rng.random() < 0.5 else (_NAME, _NUMBER):
        own = [m for m in pattern.finditer(sentence) if m.start() > 0 or pattern is _NUMBER]
        others = sorted({m.group(0) for m in pattern.finditer(passage)} - {m.group(0) for m in own})
        others = [o for o in others if o.lower() not in sentence.lower()]
        if own and others:
            target = rng.choice(own)
            return sentence[: target.start()] + rng.choice(others) + sentence[target.end() :]
    return None


def negated(sentence: str) -> str | None:
    """``sentence`` with its first auxiliary verb negated ("was" -> "was not"); None if it has none
    or already says "not"."""
    if text.has_negation(sentence):
        return None
    match = _AUXILIARY.search(sentence)
    if match is None:
        return None
    return f"{sentence[: match.end()]} not{sentence[match.end() :]}"


def renumbered(sentence: str, rng: random.Random) -> str | None:
    """``sentence`` with one number changed (a year by 1-15, other numbers to another of their size)."""
    found = list(_NUMBER.finditer(sentence))
    if not found:
        return None
    target = rng.choice(found)
    digits = target.group(0).replace(",", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    if digits.isdigit() and 1000 <= value <= 2100:
        new = str(int(value) + rng.choice([-1, 1]) * rng.randint(1, 15))
    elif digits.isdigit():
        new = str(max(0, int(value) + rng.choice([-1, 1]) * max(1, int(value * rng.uniform(0.2, 0.9)))))
    else:
        new = f"{value * rng.uniform(1.2, 3.0):.{len(digits.split('.')[1])}f}"
    if new == target.group(0):
        return None
    return sentence[: target.start()] + new + sentence[target.end() :]


def long_sentences(passage: str) -> list[str]:
    return [s for s in text.split_sentences(passage) if len(s.split()) >= _MIN_SENTENCE_WORDS]


def perturbations(sentence: str, passage: str, rng: random.Random, prefix: str) -> Iterator[tuple[str, str]]:
    """(kind, altered sentence) for one of swap / negated / number, chosen at random among those that apply."""
    options = [
        (f"{prefix}swap", swapped(sentence, passage, rng)),
        (f"{prefix}negated", negated(sentence)),
        (f"{prefix}number", renumbered(sentence, rng)),
    ]
    usable = [(k, s) for k, s in options if s is not None and s != sentence]
    if usable:
        yield rng.choice(usable)


def copies(passage: str, rng: random.Random, i: int) -> Iterator[Pair]:
    """A sentence of ``passage`` against itself alone (supported) and one alteration of it (not)."""
    sentences = long_sentences(passage)
    if sentences:
        sentence = rng.choice(sentences)
        yield Pair(sentence, sentence, 1, "copy", i)
        for kind, altered in perturbations(sentence, passage, rng, "copy_"):
            yield Pair(altered, sentence, 0, kind, i)


def qa_pairs(rows: list[dict[str, str]], swap_aware: bool = False) -> Iterator[Pair]:
    for i, row in enumerate(rows):
        rng = random.Random(f"{SEED}:qa:{i}")
        knowledge, question, right = row["knowledge"], row["question"], row["right_answer"]
        for claim in text.extract_claims(right, question):
            yield Pair(claim, window_for(claim, knowledge), 1, "answer", i)
        wrong = text.extract_claims(row["hallucinated_answer"], question)
        if len(wrong) == 1:
            yield Pair(wrong[0], window_for(wrong[0], knowledge), 0, "hallucinated", i)
        span = length_controlled_span(knowledge, right, seed=f"{SEED}:span:{i}")
        if span is not None:
            for claim in text.extract_claims(span, question):
                yield Pair(claim, window_for(claim, knowledge), 0, "span", i)
        sentences = long_sentences(knowledge)
        naming = [s for s in sentences if right.lower() in s.lower()]
        if naming:
            sentence = naming[0]
            yield Pair(sentence, window_for(sentence, knowledge), 1, "sentence", i)
            if span is not None:
                at = sentence.lower().index(right.lower())
                wrong_sentence = sentence[:at] + span + sentence[at + len(right) :]
                yield Pair(wrong_sentence, window_for(sentence, knowledge), 0, "swap", i)
        if sentences:
            sentence = rng.choice(sentences)
            for kind, altered in perturbations(sentence, knowledge, rng, ""):
                if kind != "swap" or not naming:
                    yield Pair(altered, window_for(sentence, knowledge), 0, kind, i)
        yield from copies(knowledge, rng, i)
        if swap_aware:
            yield from swap_aware_pairs(row, i, naming[0] if naming else None)


def swap_aware_pairs(row: dict[str, str], i: int, naming: str | None) -> Iterator[Pair]:
    """The swap-aware kinds of one QA train row (see the module docstring)."""
    knowledge, question, right = row["knowledge"], row["question"], row["right_answer"]
    rng = random.Random(f"{SEED}:swap-aware:{i}")
    same = judge_sets.same_kind_span(row, rng)
    if same is not None:
        for claim in text.extract_claims(same[1], question):
            yield Pair(claim, window_for(claim, knowledge), 0, "same_kind", i)
        if naming is not None and right.lower() in naming.lower():
            at = naming.lower().index(right.lower())
            wrong = naming[:at] + same[1] + naming[at + len(right) :]
            yield Pair(wrong, window_for(naming, knowledge), 0, "sentence_same_kind", i)
    single = judge_sets.swapped_sentence(row, rng)
    if single is not None:
        yield from _changed_claims(single, question, knowledge, i, "swapped", rng)
    multi = judge_sets.multi_sentence(row, rng, "swapped")
    if multi is not None:
        yield from _changed_claims(multi, question, knowledge, i, "multi_swapped", rng)


_KEPT = {"swapped": "swapped_kept", "multi_swapped": "multi_kept"}


def _changed_claims(
    pair: tuple[str, str], question: str, knowledge: str, i: int, kind: str, rng: random.Random
) -> Iterator[Pair]:
    """The claims of ``pair``'s wrong text that its right text does not make (0, ``kind``), and one claim of
    the right text (1, ``_KEPT[kind]``), each against its best window of the passage."""
    right = text.extract_claims(pair[0], question)
    wrong = [c for c in text.extract_claims(pair[1], question) if c not in right]
    if not right or not wrong:
        return
    for claim in wrong:
        yield Pair(claim, window_for(claim, knowledge), 0, kind, i)
    kept = rng.choice(right)
    yield Pair(kept, window_for(kept, knowledge), 1, _KEPT[kind], i)


def summarization_pairs(rows: list[dict[str, str]]) -> Iterator[Pair]:
    for i, row in enumerate(rows):
        rng = random.Random(f"{SEED}:summ:{i}")
        document = row["document"]
        for claim in text.extract_claims(row["right_summary"]):
            yield Pair(claim, window_for(claim, document), 1, "summary", i)
        document_words = text.content_words(document)
        for claim in text.extract_claims(row["hallucinated_summary"]):
            words = text.content_words(claim)
            if words and len(words & document_words) / len(words) <= 0.5:
                yield Pair(claim, window_for(claim, document), 0, "summary_unsupported", i)
        sentences = long_sentences(document)
        for sentence in rng.sample(sentences, min(2, len(sentences))):
            context = window_for(sentence, document)
            yield Pair(sentence, context, 1, "doc_sentence", i)
            for kind, altered in perturbations(sentence, context, rng, "doc_"):
                yield Pair(altered, context, 0, kind, i)
        yield from copies(document, rng, i)


def per_kind(pairs: list[Pair], limits: str) -> list[Pair]:
    """At most the given number of pairs of each kind (``limits``: ``kind=N,...``, ``*=N`` for the rest),
    a seeded sample of each, in their original order. Spaces around the items are ignored."""
    caps = {k.strip(): int(n) for k, n in (item.split("=") for item in limits.split(","))}
    by_kind: dict[str, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_kind.setdefault(pair.kind, []).append(index)
    keep: set[int] = set()
    rng = random.Random(SEED)
    for kind, indices in sorted(by_kind.items()):
        cap = caps.get(kind, caps.get("*", len(indices)))
        keep.update(indices if len(indices) <= cap else rng.sample(indices, cap))
    return [p for index, p in enumerate(pairs) if index in keep]


def _merged(first: list[Pair], second: list[Pair]) -> list[Pair]:
    """Both lists without repeated (claim, context) pairs, shuffled together."""
    seen: set[tuple[str, str]] = set()
    out: list[Pair] = []
    for pair in [*first, *second]:
        if (pair.claim, pair.context) not in seen:
            seen.add((pair.claim, pair.context))
            out.append(pair)
    random.Random(SEED).shuffle(out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "training" / ".work" / "pairs.jsonl")
    parser.add_argument("--max-pairs", type=int, default=9000, help="keep a random sample of this many (0: all)")
    parser.add_argument("--kinds", help="keep only these kinds, comma-separated (e.g. answer,span)")
    parser.add_argument(
        "--per-kind",
        help="at most this many pairs of each kind, as kind=N pairs, comma-separated, '*' for the other kinds "
        "(e.g. '*=300,swapped=900'; a seeded sample, before --max-pairs)",
    )
    parser.add_argument("--from", dest="source", type=Path, help="read the pairs from this file instead of building")
    parser.add_argument(
        "--swap-aware", action="store_true", help="add the swap-aware QA kinds (off: the pairs the shipped model saw)"
    )
    parser.add_argument(
        "--full-kinds",
        default="answer,span",
        help="kinds kept in full beside the sample (default answer,span: the pairs that teach reading the question)",
    )
    args = parser.parse_args()
    if args.source:
        with open(args.source, encoding="utf-8") as handle:
            pairs = [Pair(**json.loads(line)) for line in handle]
    else:
        pairs = [
            *qa_pairs(read("halueval_qa_train.jsonl"), swap_aware=args.swap_aware),
            *summarization_pairs(read("halueval_summarization_train.jsonl")),
        ]
    if args.kinds:
        wanted = set(args.kinds.split(","))
        pairs = [p for p in pairs if p.kind in wanted]
    if args.per_kind:
        pairs = per_kind(pairs, args.per_kind)
    full_kinds = set(args.full_kinds.split(",")) if args.full_kinds else set()
    full = [p for p in pairs if p.kind in full_kinds]
    random.Random(SEED).shuffle(full)
    rng = random.Random(SEED)
    if args.max_pairs and len(pairs) > args.max_pairs:
        pairs = rng.sample(pairs, args.max_pairs)
    rng.shuffle(pairs)
    if full:
        pairs = _merged(full, pairs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    kinds = Counter((p.kind, p.label) for p in pairs)
    print(f"{len(pairs)} pairs -> {args.out}")
    for (kind, label), n in sorted(kinds.items()):
        print(f"  {kind:<22}{label:>3}{n:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
