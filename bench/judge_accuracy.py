"""How well does a judge's faithfulness tell grounded answers from hallucinated ones?

Two HaluEval sets (MIT) from ../shared/data: QA (knowledge, question, right_answer,
hallucinated_answer) and summarization (document, right_summary, hallucinated_summary). Each row
gives two records with the knowledge/document as the single chunk: the right text (grounded) and the
hallucinated one. The first 80 % of each file is for calibration (bench/calibrate_offline.py); this
script reports on the last 20 % unless told otherwise.

For each set it prints, side by side from the same run:
- the judge's faithfulness as the metric reports it (``ragtrace.metrics.Faithfulness``: extract_claims,
  verify, each claim counted by the judge's support probability when it gives one, else by its
  verdict): AUROC, and balanced accuracy of its label (a record is called grounded when every claim
  is supported, the metric's own label rule),
- "verdicts AUROC": the AUROC of the share of claims supported by the verdicts alone (what
  ``Faithfulness(scoring="verdicts")`` reports, and every judge without probabilities); for a
  one-claim answer it is 0 or 1, so this AUROC equals the balanced accuracy,
- a bag-of-words baseline (share of the answer's words found in the chunk): AUROC, and balanced
  accuracy at its best threshold on the calibration split,
- seconds per record of the judge on one core (the process pins itself unless ``--all-cores``; model
  load excluded, measured once beforehand), with the machine's speed before and after (``machine.loop_ms``:
  this machine runs at speeds more than 1.8x apart), and the ratio of
  judge AUROC over baseline AUROC,
- 95 % paired-bootstrap intervals (over rows) of those AUROCs and of their gains over the baseline,
- for QA, how ``rate_chunks`` separates a question's own knowledge from another row's.

Beside HaluEval's own pairs, the sets of ``bench/judge_sets.py`` built from the same QA dev rows (hard
negatives by construction, one wrong sentence among 2-5 supported ones, context relevance), each with the
same columns and intervals, plus "least AUROC" (the least-supported claim's support, the record-level
signal ``hallucinated_claim`` reads) and, for the multi-sentence sets, the share of answers that signal
flags at the shipped cut beside the share ``hallucination > 0.5`` flags.

    python bench/judge_accuracy.py                       # offline judge, test split
    python bench/judge_accuracy.py --judge openai --base-url http://127.0.0.1:8000/v1 --model M
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from judge_sets import (
    CONSTRUCTIONS,
    MULTI_SENTENCE_SETS,
    RelevanceCase,
    build_pairs,
    neighbour_relevance,
    paraphrase_relevance,
)
from machine import loop_ms

from ragtrace.judges.offline.text import STOPWORDS

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
SETS = {
    "qa": ("halueval_qa_dev.jsonl", "knowledge", "right_answer", "hallucinated_answer", "question"),
    "summarization": ("halueval_summarization_dev.jsonl", "document", "right_summary", "hallucinated_summary", None),
}
LENGTH_CONTROLLED = "qa_length_controlled"
"""The QA rows again, the hallucinated answer replaced by a span of the row's own knowledge as long as
the right answer (``length_controlled_span``): word overlap is at chance there."""
RELEVANCE_SETS = ("relevance_neighbour", "relevance_paraphrase")
"""Context-relevance sets (``judge_sets``), rated by ``rate_chunks``."""
TRAIN_FRACTION = 0.8
_WORD = re.compile(r"\w+")
_EDGE_PUNCTUATION = "\"'()[]{},;:.!?"
_YES_NO = frozenset({"yes", "no"})


@dataclass(frozen=True, slots=True)
class Example:
    """One record of a benchmark set: the chunk, the text to judge, its question (QA) and its label."""

    row: int
    chunk: str
    text: str
    question: str | None
    grounded: bool


def load(name: str, split: str, data_dir: Path = DATA) -> list[Example]:
    """Records of set ``name``: ``train`` (first 80 % of rows), ``test`` (last 20 %) or ``all``.

    ``LENGTH_CONTROLLED`` is built from the QA rows: a row whose knowledge has no suitable span is left
    out (both of its records, so the classes stay paired)."""
    qa_built = name == LENGTH_CONTROLLED or name in CONSTRUCTIONS
    filename, chunk_key, right_key, wrong_key, question_key = SETS["qa" if qa_built else name]
    rows = read_rows(filename, data_dir)
    selected = split_rows(len(rows), split)
    out: list[Example] = []
    if name in CONSTRUCTIONS:
        for i, (right, wrong) in build_pairs(name, rows, selected, seed=filename):
            out.append(Example(i, rows[i][chunk_key], right, rows[i][question_key], True))
            out.append(Example(i, rows[i][chunk_key], wrong, rows[i][question_key], False))
        return out
    for i in selected:
        row: dict[str, Any] = rows[i]
        question = row[question_key] if question_key else None
        wrong = row[wrong_key]
        if name == LENGTH_CONTROLLED:
            span = length_controlled_span(row[chunk_key], row[right_key], seed=f"{filename}:{i}")
            if span is None:
                continue
            wrong = span
        out.append(Example(i, row[chunk_key], row[right_key], question, True))
        out.append(Example(i, row[chunk_key], wrong, question, False))
    return out


def read_rows(filename: str, data_dir: Path = DATA) -> list[dict[str, Any]]:
    """The rows of one data file, in order."""
    with open(data_dir / filename, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def split_rows(n: int, split: str) -> range:
    """The row indices of ``split``: ``train`` (first 80 %), ``test`` (last 20 %) or ``all``."""
    cut = int(n * TRAIN_FRACTION)
    return {"train": range(cut), "test": range(cut, n), "all": range(n)}[split]


def length_controlled_span(knowledge: str, right_answer: str, *, seed: str) -> str | None:
    """A wrong answer that every word of the passage supports: a span of ``knowledge`` with as many
    words as ``right_answer``, inside one sentence, opening and closing on a content word, sharing no
    word with the right answer (so it is not a restatement of it). Spans of the same kind are preferred
    (a number for a number, a name for a name). ``None`` when the passage has no such span, and for a
    yes/no answer (no span of the passage answers that). Deterministic in ``seed``.
    """
    if right_answer.strip().lower().rstrip(".") in _YES_NO:
        return None
    tokens = knowledge.split()
    n = max(1, len(right_answer.split()))
    answer_words = set(_WORD.findall(right_answer.lower()))
    spans: list[str] = []
    for start in range(len(tokens) - n + 1):
        piece = tokens[start : start + n]
        # A span does not run across a sentence end (HaluEval glues passages: "century.First").
        if any(t.endswith((".", "!", "?")) or re.search(r"[a-z][.!?][A-Z]", t) for t in piece[:-1]):
            continue
        span = " ".join(piece).strip(_EDGE_PUNCTUATION)
        words = set(_WORD.findall(span.lower()))
        ends = span.split()
        if not words or words & answer_words or not ends or any(e.lower() in STOPWORDS for e in (ends[0], ends[-1])):
            continue
        spans.append(span)
    if not spans:
        return None
    if any(c.isdigit() for c in right_answer):
        spans = [s for s in spans if any(c.isdigit() for c in s)] or spans
    elif right_answer[:1].isupper():
        spans = [s for s in spans if s[:1].isupper()] or spans
    return random.Random(seed).choice(spans)


def auroc(scores: Sequence[float] | np.ndarray, labels: Sequence[bool] | np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with mid-ranks for ties); positives are ``True``. In numpy:
    ``bench/calibrate_offline.py`` reads it for each of thousands of candidate cuts."""
    y = np.asarray(labels, dtype=bool)
    positives = int(y.sum())
    negatives = len(y) - positives
    if positives == 0 or negatives == 0:
        raise ValueError("AUROC needs both classes")
    _, inverse, counts = np.unique(np.asarray(scores, dtype=float), return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # 1-based mid-ranks: a tie shares the mean of its ranks
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def balanced_accuracy(predicted: Sequence[bool], labels: Sequence[bool]) -> float:
    """Mean of the recall on each class."""
    tp = sum(1 for p, y in zip(predicted, labels, strict=True) if p and y)
    tn = sum(1 for p, y in zip(predicted, labels, strict=True) if not p and not y)
    positives = sum(1 for y in labels if y)
    negatives = len(labels) - positives
    return (tp / positives + tn / negatives) / 2


def bootstrap_intervals(
    rows: Sequence[int],
    labels: Sequence[bool],
    scores: dict[str, Sequence[float]],
    *,
    rounds: int = 1000,
    seed: int = 5,
) -> dict[str, tuple[float, float]]:
    """95 % intervals of each score's AUROC, and of each score's AUROC minus the last one's (named
    ``"<name> - <last>"``), by a paired bootstrap over rows: a resample draws rows with replacement and
    keeps both records of each, so every score is measured on the same resample."""
    by_row: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        by_row.setdefault(row, []).append(i)
    groups = list(by_row.values())
    names = list(scores)
    last = names[-1]
    draws: dict[str, list[float]] = {n: [] for n in names}
    draws.update({f"{n} - {last}": [] for n in names[:-1]})
    rng = random.Random(seed)
    for _ in range(rounds):
        picked = [i for _ in groups for i in groups[rng.randrange(len(groups))]]
        sample_labels = [labels[i] for i in picked]
        if all(sample_labels) or not any(sample_labels):
            continue
        aurocs = {n: auroc([scores[n][i] for i in picked], sample_labels) for n in names}
        for n in names:
            draws[n].append(aurocs[n])
            if n != last:
                draws[f"{n} - {last}"].append(aurocs[n] - aurocs[last])
    out: dict[str, tuple[float, float]] = {}
    for name, values in draws.items():
        values.sort()
        out[name] = (values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))])
    return out


def bootstrap_balanced(
    rows: Sequence[int],
    labels: Sequence[bool],
    predictions: dict[str, Sequence[bool]],
    *,
    rounds: int = 1000,
    seed: int = 5,
) -> dict[str, tuple[float, float]]:
    """95 % intervals of each prediction's balanced accuracy, by the paired bootstrap over rows of
    ``bootstrap_intervals`` (same resampling)."""
    by_row: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        by_row.setdefault(row, []).append(i)
    groups = list(by_row.values())
    draws: dict[str, list[float]] = {n: [] for n in predictions}
    rng = random.Random(seed)
    for _ in range(rounds):
        picked = [i for _ in groups for i in groups[rng.randrange(len(groups))]]
        sample_labels = [labels[i] for i in picked]
        if all(sample_labels) or not any(sample_labels):
            continue
        for name, said in predictions.items():
            draws[name].append(balanced_accuracy([said[i] for i in picked], sample_labels))
    out: dict[str, tuple[float, float]] = {}
    for name, values in draws.items():
        values.sort()
        out[name] = (values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))])
    return out


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The threshold t (predict grounded when score >= t) with the best balanced accuracy."""
    candidates = sorted(set(scores))
    return max(candidates, key=lambda t: balanced_accuracy([s >= t for s in scores], labels))


def bag_of_words(text: str, chunk: str) -> float:
    """Baseline: the share of the text's words (lowercased) that occur in the chunk."""
    text_words = _WORD.findall(text.lower())
    chunk_words = set(_WORD.findall(chunk.lower()))
    return sum(1 for w in text_words if w in chunk_words) / len(text_words) if text_words else 1.0


@dataclass(frozen=True, slots=True)
class Judged:
    """A judge's reading of one example."""

    faithfulness: float
    """As the metric reports it (weighed by support probabilities when the judge gives them)."""
    verdict_share: float
    """Share of claims the verdicts support."""
    seconds: float
    failed: str | None = None
    """The error type when the judge failed on this record (its faithfulness then counts as 0)."""
    least_support: float = 0.0
    """The least-supported claim's support (the record-level signal: hallucinated below 0.5, the cut)."""


SUMMARY_QUERY = "Summarize the document."
"""The query of a summarization record (its text is the summary; the question matters only for bare answers)."""


async def judge_one(judge: Any, example: Example) -> Judged:
    """Faithfulness of one example through ``ragtrace.metrics.Faithfulness`` (the question goes to
    extract_claims as context). A failed score, or an answer without claims, counts as 0."""
    from ragtrace import RagRecord
    from ragtrace.metrics import Faithfulness
    from ragtrace.metrics._base import DETAIL_CLAIMS

    record = RagRecord.of(example.question or SUMMARY_QUERY, [example.chunk], example.text)
    start = time.perf_counter()
    score = await Faithfulness().score(record, judge)
    seconds = time.perf_counter() - start
    if score.status == "error":
        return Judged(0.0, 0.0, seconds, score.error_type or "error")
    claims = score.details.get("claims", 0) if score.value is not None else 0
    share = score.details["supported_claims"] / claims if claims else 0.0
    verdicts = score.details.get(DETAIL_CLAIMS, ()) if claims else ()
    least = min(
        (v.support if v.support is not None else float(v.verdict == "supported") for v in verdicts), default=0.0
    )
    return Judged(score.value if score.value is not None else 0.0, share, seconds, least_support=least)


def make_judge(args: argparse.Namespace) -> Any:
    from ragtrace.judges.offline import OfflineJudge

    if args.judge in ("openai", "tiered"):
        from ragtrace.judges.openai import OpenAIJudge

        llm = OpenAIJudge(model=args.model, base_url=args.base_url, api_key=args.api_key)
        if args.judge == "openai":
            return llm
        from ragtrace.judges.tiered import TieredJudge

        return TieredJudge(OfflineJudge(), llm)
    if args.without_relevance_model:
        return OfflineJudge(relevance_model=_unread_relevance_model())
    return OfflineJudge()


def _unread_relevance_model() -> Any:
    """A relevance model that reads no query (every logit NaN): ``rate_chunks`` by the cosines alone."""
    import numpy as np

    from ragtrace.judges.offline.relevance import RelevanceModel

    class Unread(RelevanceModel):
        def relevance(self, question: str, chunks: Sequence[str]) -> Any:
            return np.full(len(chunks), np.nan)

    return Unread()


def pin_to_one_core() -> str:
    """Run this process on one CPU (Linux), as the offline judge's goal is stated per record on one core."""
    if not hasattr(os, "sched_setaffinity"):
        return "all cores (no CPU affinity on this platform)"
    core = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to core {core}"


async def run(args: argparse.Namespace) -> int:
    cores = "all cores" if args.all_cores else pin_to_one_core()
    judge = make_judge(args)
    load_seconds = 0.0
    if args.judge in ("offline", "tiered"):
        start = time.perf_counter()
        (judge.offline if args.judge == "tiered" else judge).load()
        load_seconds = time.perf_counter() - start
    print(
        f"judge {judge.name}; split {args.split}; {cores}; model load {load_seconds:.2f} s (excluded below); "
        f"machine speed: a fixed Python loop {loop_ms():.0f} ms (bench/machine.py)"
    )
    header = f"{'set':<22}{'n':>6}{'judge AUROC':>13}{'judge BA':>10}{'least AUROC':>13}{'verdicts AUROC':>16}"
    header += f"{'base AUROC':>12}{'base BA':>9}{'AUROC ratio':>13}{'AUROC gain':>12}{'s/record':>10}"
    print(header)
    intervals: list[tuple[str, str]] = []
    flag_lines: list[str] = []
    pooled: tuple[list[Judged], list[bool]] = ([], [])
    for name in [n for n in args.sets if n not in RELEVANCE_SETS]:
        examples = load(name, args.split)
        if args.limit:
            examples = examples[: args.limit * 2]
        train = load(name, "train")
        base_threshold = best_threshold([bag_of_words(e.text, e.chunk) for e in train], [e.grounded for e in train])
        labels = [e.grounded for e in examples]
        base = [bag_of_words(e.text, e.chunk) for e in examples]
        judged = [await judge_one(judge, e) for e in examples]
        faith = [j.faithfulness for j in judged]
        judge_auc = auroc(faith, labels)
        shares = [j.verdict_share for j in judged]
        least = [j.least_support for j in judged]
        judge_said = [s >= 1.0 for s in shares]
        judge_ba = balanced_accuracy(judge_said, labels)
        verdicts_auc = auroc(shares, labels)
        least_auc = auroc(least, labels)
        base_auc = auroc(base, labels)
        base_said = [b >= base_threshold for b in base]
        base_ba = balanced_accuracy(base_said, labels)
        per_record = sum(j.seconds for j in judged) / len(judged)
        print(
            f"{name:<22}{len(examples):>6}{judge_auc:>13.3f}{judge_ba:>10.3f}{least_auc:>13.3f}{verdicts_auc:>16.3f}"
            f"{base_auc:>12.3f}{base_ba:>9.3f}{judge_auc / base_auc:>13.3f}{judge_auc - base_auc:>+12.3f}"
            f"{per_record:>10.4f}"
        )
        failures = Counter(j.failed for j in judged if j.failed)
        if failures:
            kinds = ", ".join(f"{kind} {count}" for kind, count in failures.most_common())
            failed = sum(failures.values())
            print(f"{name}: the judge failed on {failed} of {len(judged)} records ({kinds}); counted as 0")
        rows = [e.row for e in examples]
        named: dict[str, Sequence[float]] = {"judge": faith, "least": least, "verdicts": shares, "baseline": base}
        ci = bootstrap_intervals(rows, labels, named)
        ba = bootstrap_balanced(rows, labels, {"judge BA": judge_said, "baseline BA": base_said})
        text = "; ".join(f"{k} [{lo:.3f}, {hi:.3f}]" for k, (lo, hi) in {**ci, **ba}.items())
        intervals.append((name, text))
        if name in MULTI_SENTENCE_SETS:
            flag_lines.append(flag_rates(name, judged, labels))
            pooled[0].extend(judged)
            pooled[1].extend(labels)
    for name, text in intervals:
        print(f"{name}: 95 % paired-bootstrap intervals over rows (1,000 resamples): {text}")
    if len(flag_lines) > 1:
        flag_lines.append(flag_rates("multi_* pooled", *pooled))
    for line in flag_lines:
        print(line)
    relevance = [n for n in args.sets if n in RELEVANCE_SETS]
    if relevance:
        await relevance_sets(judge, relevance, args)
    if "qa" in args.sets:
        await chunk_relevance(judge, args)
    await judge.aclose()
    print(f"machine speed at the end: the same loop {loop_ms():.0f} ms")
    return 0


def flag_rates(name: str, judged: Sequence[Judged], labels: Sequence[bool]) -> str:
    """On one-wrong-claim answers and right ones: the share the record-level signal flags (least-supported
    claim below the cut, 0.5) beside the share the old alert rule flags (hallucination > 0.5)."""
    wrong = [j for j, y in zip(judged, labels, strict=True) if not y]
    right = [j for j, y in zip(judged, labels, strict=True) if y]

    def share(items: Sequence[Judged], flagged: Any) -> str:
        return f"{sum(1 for j in items if flagged(j)) / len(items):.1%}"

    def least(j: Judged) -> bool:
        return j.least_support < 0.5

    def mean(j: Judged) -> bool:
        return 1.0 - j.faithfulness > 0.5

    return (
        f"{name}: flagged by the least-supported claim < 0.5: {share(wrong, least)} of {len(wrong)} answers "
        f"with one wrong claim, {share(right, least)} of {len(right)} right ones; by hallucination > 0.5 (mean over "
        f"claims): {share(wrong, mean)} and {share(right, mean)}"
    )


def relevance_cases(name: str, split: str) -> list[RelevanceCase]:
    """The cases of a relevance set on ``split`` (the paraphrase set is hand-written: every split)."""
    if name == "relevance_paraphrase":
        return paraphrase_relevance()
    filename = SETS["qa"][0]
    rows = read_rows(filename)
    return neighbour_relevance(rows, split_rows(len(rows), split))


async def relevance_sets(judge: Any, names: Sequence[str], args: argparse.Namespace) -> None:
    """rate_chunks on each relevance set: a case's two chunks rated in one call; AUROC and balanced accuracy
    at 0.5 (the judge's cut) against word overlap of the question with the chunk (its threshold the best on
    the calibration split), with paired-bootstrap intervals."""
    print(f"{'relevance set':<22}{'n':>6}{'judge AUROC':>13}{'judge BA':>10}{'base AUROC':>12}{'base BA':>9}")
    lines: list[str] = []
    for name in names:
        cases = relevance_cases(name, args.split)
        if args.limit:
            cases = cases[: args.limit]
        train = relevance_cases(name, "train")
        train_base = [bag_of_words(c.question, chunk) for c in train for chunk in (c.relevant, c.irrelevant)]
        threshold = best_threshold(train_base, [True, False] * len(train))
        scores: list[float] = []
        base: list[float] = []
        for case in cases:
            ratings = (await judge.rate_chunks(case.question, [case.relevant, case.irrelevant])).value
            scores += [ratings[0], ratings[1]]
            base += [bag_of_words(case.question, case.relevant), bag_of_words(case.question, case.irrelevant)]
        labels = [True, False] * len(cases)
        rows = [c.row for c in cases for _ in range(2)]
        judge_said = [s >= 0.5 for s in scores]
        base_said = [b >= threshold for b in base]
        print(
            f"{name:<22}{len(labels):>6}{auroc(scores, labels):>13.3f}{balanced_accuracy(judge_said, labels):>10.3f}"
            f"{auroc(base, labels):>12.3f}{balanced_accuracy(base_said, labels):>9.3f}"
        )
        ci = bootstrap_intervals(rows, labels, {"judge": scores, "baseline": base})
        ba = bootstrap_balanced(rows, labels, {"judge BA": judge_said, "baseline BA": base_said})
        relevant = [s for s, y in zip(scores, labels, strict=True) if y]
        text = "; ".join(f"{k} [{lo:.3f}, {hi:.3f}]" for k, (lo, hi) in {**ci, **ba}.items())
        lines.append(
            f"{name}: intervals {text}; relevant chunks rated >= 0.5: {sum(1 for s in relevant if s >= 0.5)} "
            f"of {len(relevant)}"
        )
    for line in lines:
        print(line)


async def chunk_relevance(judge: Any, args: argparse.Namespace) -> None:
    """rate_chunks on QA questions: each question's own knowledge (relevant) against the knowledge of
    the next row (irrelevant), rated in one call per question; AUROC, and the share rated >= 0.5."""
    rows = [e for e in load("qa", args.split) if e.grounded]
    if args.limit:
        rows = rows[: args.limit]
    scores: list[float] = []
    labels: list[bool] = []
    base: list[float] = []
    for i, example in enumerate(rows):
        other = rows[(i + 1) % len(rows)].chunk
        ratings = (await judge.rate_chunks(example.question or "", [example.chunk, other])).value
        scores += [ratings[0], ratings[1]]
        labels += [True, False]
        base += [bag_of_words(example.question or "", example.chunk), bag_of_words(example.question or "", other)]
    relevant = sum(1 for s, y in zip(scores, labels, strict=True) if y and s >= 0.5) / labels.count(True)
    irrelevant = sum(1 for s, y in zip(scores, labels, strict=True) if not y and s >= 0.5) / labels.count(False)
    print(
        f"rate_chunks (qa questions, own vs next row's knowledge): AUROC {auroc(scores, labels):.3f}, "
        f"rated >= 0.5: relevant {relevant:.3f}, irrelevant {irrelevant:.3f}; "
        f"bag-of-words AUROC {auroc(base, labels):.3f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", choices=("offline", "openai", "tiered"), default="offline")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for --judge openai")
    parser.add_argument("--model", default="gpt-4o-mini", help="chat model for --judge openai")
    parser.add_argument("--api-key", default=None, help="key for --judge openai (else OPENAI_API_KEY)")
    parser.add_argument("--split", choices=("test", "train", "all"), default="test")
    every = (*SETS, LENGTH_CONTROLLED, *CONSTRUCTIONS, *RELEVANCE_SETS)
    parser.add_argument("--sets", nargs="+", choices=every, default=list(every))
    parser.add_argument("--limit", type=int, default=0, help="at most this many rows per set (0: all)")
    parser.add_argument("--all-cores", action="store_true", help="do not pin the process to one core")
    parser.add_argument(
        "--without-relevance-model",
        action="store_true",
        help="the offline judge rates chunks by the embedding cosines alone (its rating where the model reads nothing)",
    )
    args = parser.parse_args(argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
