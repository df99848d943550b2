"""Fit the offline judge's calibration on the first 80 % of each HaluEval file and write
``ragtrace/judges/offline/calibration.py``.

What it fits, all on the calibration split only (the last 20 % stays for bench/judge_accuracy.py):

1. Grounding: one feature vector per (claim, chunk) from ``grounding.features`` (the support
   model's aligned logit among them), on every set of ``GROUNDING_SETS``: QA, summarization, the
   length-controlled set and each construction of bench/judge_sets.py (their calibration splits are built
   from the same dev rows). A claim of a right text is labelled supported; a claim of the other text
   unsupported unless the right text of its row states it too (``claim_labels``; HaluEval's hallucinated
   texts keep some true clauses, which the logistic layer absorbs as label noise). Features are
   standardised and an L2-regularised logistic regression is fitted by Newton's method, the sets weighed
   by ``SET_WEIGHTS``, each weight held to its sign (``grounding.FEATURE_SIGNS``: a feature fitted
   against its sign is dropped and the rest refitted). The support threshold, the support-model logit
   a bare answer needs (``MODEL_ANSWER_MIN_LOGIT``) and its answer-reader margin (``READER_MIN_MARGIN``) are
   the triple that maximises, averaged over
   ``CUT_SETS`` (HaluEval's own pairs) with the same weights, the mean of the faithfulness AUROC and the
   balanced accuracy of the record-level label "every claim supported" (the hallucination metric's
   default rule). Bare answers joined to their question are judged by a rule (``bare_answer_named``:
   named by the chunk and read as the answer by the support model and the answer reader), not by the
   logistic layer: in HaluEval
   QA nearly every right answer is bare and nearly every hallucinated one a sentence, so anything
   fitted per form would learn the form (see docs/offline-judge.md).
2. Contradiction: not fitted (``grounding.ON_TOPIC_COVERAGE``).
3. Chunk relevance (``rate_chunks``): logistic map of (cosine with the whole chunk, best sentence
   cosine, the relevance model's clipped logit), positives = a QA question with its own knowledge,
   negatives = with the knowledge of the most similar other question and of a random other one; and the
   map of the two cosines alone on the same pairs (for a query the relevance model does not read).
4. Statement relevance (``rate_statements``): the cosine threshold with the best balanced accuracy
   between a question and its own sentence answers versus those of other questions.
5. Noncommittal: the smallest cosine to the evasion prototypes that flags none of the real short
   answers of the split, plus a margin of 0.02.

    python bench/calibrate_offline.py            # writes the constants module and prints the fit
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_accuracy import LENGTH_CONTROLLED, SETS, Example, auroc, balanced_accuracy, load
from judge_sets import CONSTRUCTIONS

from ragtrace.judges.offline import _NONCOMMITTAL_PROTOTYPES, grounding, relevance, text
from ragtrace.judges.offline.embedder import Embedder
from ragtrace.judges.offline.reader import AnswerReader
from ragtrace.judges.offline.relevance import RelevanceModel
from ragtrace.judges.offline.support import SupportModel

OUT = Path(__file__).resolve().parents[1] / "ragtrace" / "judges" / "offline" / "calibration.py"


class StoredEmbedder(Embedder):
    """The real embedder, with every vector kept (and optionally saved) so a re-fit needs no re-embedding."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(cache_size=16)
        self.path = path
        self.store: dict[str, np.ndarray] = {}
        if path is not None and path.exists():
            with open(path, "rb") as handle:
                self.store = pickle.load(handle)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.store]
        if missing:
            self.store.update(zip(missing, super().embed(missing), strict=True))
        if not texts:
            return super().embed([])
        return np.stack([self.store[t] for t in texts])

    def save(self) -> None:
        if self.path is not None:
            with open(self.path, "wb") as handle:
                pickle.dump(self.store, handle)


def fit_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, offset: np.ndarray | float = 0.0, l2: float = 1e-2
) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by Newton's method from zero; returns (coefficients, bias). ``offset``:
    a fixed term added to each row's logit, its weight held at 1 (``training/fit_alignment.py`` fits the
    alignment's shift around the support model's logit that way)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    penalty = np.eye(d + 1) * l2
    penalty[d, d] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta + offset)))
        gradient = xb.T @ (weights * (p - y)) + penalty @ beta
        hessian = (xb * (weights * p * (1 - p))[:, None]).T @ xb + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta[:d], float(beta[d])


def fit_signed_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, signs: Sequence[int]
) -> tuple[np.ndarray, float]:
    """``fit_logistic`` with every coefficient held to its sign: a feature whose weight comes out the
    wrong way is dropped (weight 0) and the rest refitted, the worst offender first, until none is left."""
    active = list(range(x.shape[1]))
    while True:
        coefficients, bias = fit_logistic(x[:, active], y, weights)
        wrong = [(coefficients[k] * signs[j], k) for k, j in enumerate(active) if coefficients[k] * signs[j] < 0]
        if not wrong:
            full = np.zeros(x.shape[1])
            full[active] = coefficients
            return full, bias
        dropped = active.pop(min(wrong)[1])
        print(f"  dropped {grounding.FEATURES[dropped]}: fitted against its sign", file=sys.stderr)


GROUNDING_SETS = (*SETS, LENGTH_CONTROLLED, *CONSTRUCTIONS)
"""Every set of bench/judge_accuracy.py the faithfulness is read on, each on its calibration split: HaluEval's
own pairs, the length-controlled span and every construction of ``judge_sets`` (same-kind span, swaps,
negations, a neighbouring question's answer, one wrong sentence among 2-5). Fitted on HaluEval's pairs alone,
the layer leaned on the support model and weighed the words no chunk states lightly (missing words -0.72,
names and numbers 0): a neighbouring question's answer, which HaluEval's pairs hardly hold, then ranked below
word overlap."""
SET_WEIGHTS = {"summarization": 3.0, "qa": 2.0, LENGTH_CONTROLLED: 2.0}
"""How much each set weighs in the fit and in the choice of the cuts (every other set 1; ``training/fit_alignment.py``
weighs its sets by this table too): HaluEval's own pairs are an LLM's hallucinations, each construction
one way of building a negative; summarization weighs most, its right summaries reword the document, the case
a layer fitted on copied sentences rejects. Weighed equally (each set 1, the cuts chosen on every set), the fit
chose a support threshold of 0.71 and flagged 78.5 % of the right summaries of the calibration split."""
CUT_SETS = (*SETS, LENGTH_CONTROLLED)
"""The sets the support threshold and the bare-answer cut are chosen on: HaluEval's own pairs, whose right texts
are written, not copied. Every construction's right text is sentences of the passage word for word, so on them
a higher threshold costs almost nothing; chosen on every set, the threshold rose from 0.37 to 0.48 and flagged
58 % of the right summaries of the calibration split (49 % at 0.37). The weights are fitted on every set."""
MODEL = grounding.FEATURES.index("model_support")
READER = grounding.FEATURES.index("answer_reading")


def claim_features(
    support: SupportModel, reader: AnswerReader, examples: Sequence[Example]
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per example, the feature matrix of its claims against its chunk (one row per claim); per claim the
    rules' reading by words alone: for a bare answer, 1 named, 0 not named (the models' cuts are
    fitted on top); for other claims, -3 a conflicting number, -2 restated by the chunk, else -1; and per
    claim its label (``claim_labels``)."""
    out: list[np.ndarray] = []
    named: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    grounded = {e.row: set(text.extract_claims(e.text, e.question)) for e in examples if e.grounded}
    for example in examples:
        claims = text.extract_claims(example.text, example.question)
        labels.append(claim_labels(example, claims, grounded.get(example.row, set())))
        if not claims:
            out.append(np.zeros((0, len(grounding.FEATURES))))
            named.append(np.zeros(0))
            continue
        rows = grounding.feature_matrix(support, claims, [example.chunk], reader)
        out.append(np.array([row[0][0] for row in rows]))
        readings = [
            grounding.bare_answer_named(c, row[0][0], min_logit=-np.inf, min_margin=-np.inf)
            for c, row in zip(claims, rows, strict=True)
        ]
        others = [
            -3.0 if grounding.conflicting(row[0][0]) else -2.0 if grounding.restated(row[0][0]) else -1.0
            for row in rows
        ]
        named.append(np.array([other if r is None else float(r) for r, other in zip(readings, others, strict=True)]))
    return out, named, labels


def claim_labels(example: Example, claims: Sequence[str], grounded_claims: set[str]) -> np.ndarray:
    """1 for a supported claim, 0 for an unsupported one: every claim of a grounded text is supported; a
    claim of the other text is not, unless the grounded text of the same row states it too. A construction
    that replaces one sentence of 2-5 keeps the others word for word, and labelling them unsupported would
    teach the layer that a copied sentence of the passage is a hallucination. (HaluEval's own hallucinated
    texts share a claim with the right one rarely; their other true clauses stay label noise.)"""
    if example.grounded:
        return np.ones(len(claims))
    return np.array([1.0 if c in grounded_claims else 0.0 for c in claims])


def supported_claims(
    probabilities: np.ndarray,
    named: np.ndarray,
    logits: np.ndarray,
    margins: np.ndarray,
    threshold: float,
    min_logit: float,
    min_margin: float,
) -> np.ndarray:
    """Which claims the judge calls supported: the bare-answer rule where it applies (``named`` 1: named
    by the chunk, the support model's logit at least ``min_logit`` and the answer reader's margin at
    least ``min_margin``, a NaN reading passing), else, without a conflicting
    number (``named`` -3, ``grounding.conflicting``), a restatement (``named`` -2,
    ``grounding.restated``) or the threshold."""
    answers = (np.isnan(logits) | (logits >= min_logit)) & (np.isnan(margins) | (margins >= min_margin))
    others = (named != -3.0) & ((named == -2.0) | (probabilities >= threshold))
    return np.where(named >= 0, (named == 1.0) & answers, others)


@dataclass(frozen=True, slots=True)
class Flat:
    """One set's claims in flat arrays (``record``: the index of each claim's record), so that every
    candidate cut of the grid is read in a few vector operations."""

    probabilities: np.ndarray
    named: np.ndarray
    logits: np.ndarray
    margins: np.ndarray
    record: np.ndarray
    records: int

    @classmethod
    def of(cls, feats: Sequence[np.ndarray], named: Sequence[np.ndarray], probs: Any) -> Flat:
        counts = [len(f) for f in feats]
        width = len(grounding.FEATURES)
        stacked = np.vstack([f.reshape(-1, width) for f in feats])
        return cls(
            np.concatenate([probs(f) for f in feats]),
            np.concatenate([np.asarray(n, dtype=float) for n in named]),
            stacked[:, MODEL],
            stacked[:, READER],
            np.repeat(np.arange(len(feats)), counts),
            len(feats),
        )

    def faithfulness(self, threshold: float, min_logit: float, min_margin: float) -> tuple[np.ndarray, np.ndarray]:
        """Per record, the share of its claims supported at the cut, and whether all are (a record without
        claims: 0 and False)."""
        supported = supported_claims(
            self.probabilities, self.named, self.logits, self.margins, threshold, min_logit, min_margin
        )
        counts = np.bincount(self.record, minlength=self.records)
        held = np.bincount(self.record, weights=supported.astype(float), minlength=self.records)
        share = np.divide(held, counts, out=np.zeros(self.records), where=counts > 0)
        return share, (counts > 0) & (held == counts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the fit, do not write the module")
    parser.add_argument("--embedding-cache", type=Path, help="pickle file keeping vectors between runs")
    parser.add_argument(
        "--feature-cache",
        type=Path,
        help="pickle file keeping each set's claim features between runs (delete it when the features change)",
    )
    parser.add_argument(
        "--rows", type=int, default=0, help="at most this many rows of each set's calibration split (0: all)"
    )
    args = parser.parse_args(argv)
    embedder = StoredEmbedder(args.embedding_cache)
    support, reader = SupportModel(), AnswerReader()
    started = time.perf_counter()

    # 1. Grounding.
    per_set: dict[str, tuple[list[Example], list[np.ndarray]]] = {}
    named_per_set: dict[str, list[np.ndarray]] = {}
    labels_per_set: dict[str, list[np.ndarray]] = {}
    stored: dict[str, tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]] = {}
    if args.feature_cache is not None and args.feature_cache.exists():
        with open(args.feature_cache, "rb") as handle:
            stored = pickle.load(handle)
    for name in GROUNDING_SETS:
        examples = load(name, "train")
        if args.rows:
            examples = examples[: 2 * args.rows]
        if name not in stored:
            stored[name] = claim_features(support, reader, examples)
            print(f"features {name}: {len(examples)} records, {time.perf_counter() - started:.0f} s", file=sys.stderr)
        feats, named, claim_label = stored[name]
        per_set[name] = (examples, feats)
        named_per_set[name] = named
        labels_per_set[name] = claim_label
    if args.feature_cache is not None:
        with open(args.feature_cache, "wb") as handle:
            pickle.dump(stored, handle)
    embedder.save()
    for name, (examples, feats) in per_set.items():
        labels = [e.grounded for e in examples]
        for k, feature in enumerate(grounding.FEATURES):
            # A record whose claims the support model could not read (NaN) ranks in the middle.
            low = [float(np.nan_to_num(np.nanmin(f[:, k]), nan=0.0)) if len(f) else 0.0 for f in feats]
            mean = [float(np.nan_to_num(np.nanmean(f[:, k]), nan=0.0)) if len(f) else 0.0 for f in feats]
            print(f"  {name} {feature:<20} AUROC min {auroc(low, labels):.3f} mean {auroc(mean, labels):.3f}")
    xs, ys, ws = [], [], []
    for name, (_, feats) in per_set.items():
        # A set weighs SET_WEIGHTS in all, whatever its number of claims.
        n_claims = sum(len(f) for f in feats)
        for f, claim_label in zip(feats, labels_per_set[name], strict=True):
            xs.extend(f)
            ys.extend(claim_label)
            ws.extend([SET_WEIGHTS.get(name, 1.0) / n_claims] * len(f))
    x, y, w = np.array(xs), np.array(ys), np.array(ws)
    w = w / w.mean()
    # A feature the models could not read (NaN: a claim in a script the support model was not
    # trained on) counts as its mean, as support_probability does at run time.
    means = np.nanmean(x, axis=0)
    x = np.where(np.isnan(x), means, x)
    scales = np.where(x.std(axis=0) > 1e-9, x.std(axis=0), 1.0)
    coefficients, bias = fit_signed_logistic((x - means) / scales, y, w, grounding.FEATURE_SIGNS)

    def probs(f: np.ndarray) -> np.ndarray:
        if not len(f):
            return np.zeros(0)
        f = np.where(np.isnan(f), means, f)
        result: np.ndarray = 1.0 / (1.0 + np.exp(-(((f - means) / scales) @ coefficients + bias)))
        return result

    flat = {name: Flat.of(feats, named_per_set[name], probs) for name, (_, feats) in per_set.items()}
    record_labels = {name: np.array([e.grounded for e in per_set[name][0]]) for name in CUT_SETS}
    candidates = [
        (t, c, m)
        for t in np.linspace(0.05, 0.95, 91)
        for c in np.linspace(-3.0, 3.0, 25)
        for m in np.linspace(-grounding.READER_CLIP, 0.0, 11)
    ]

    def merit(cut: tuple[float, float, float]) -> float:
        scores, weights = [], []
        for name, labels in record_labels.items():
            faith, grounded = flat[name].faithfulness(*cut)
            scores.append((auroc(faith, labels) + balanced_accuracy(list(grounded), list(labels))) / 2)
            weights.append(SET_WEIGHTS.get(name, 1.0))
        return float(np.average(scores, weights=weights))

    best = max(candidates, key=merit)
    threshold, min_logit, min_margin = float(best[0]), float(best[1]), float(best[2])
    for name, (examples, feats) in per_set.items():
        labels = [e.grounded for e in examples]
        faith, grounded = flat[name].faithfulness(*best)
        ba = balanced_accuracy(list(grounded), labels)
        record_probs = [probs(f) for f in feats]
        low = [float(p.min()) if len(p) else 0.0 for p in record_probs]
        mean = [float(p.mean()) if len(p) else 0.0 for p in record_probs]
        print(
            f"train {name}: faithfulness AUROC {auroc(list(faith), labels):.3f}, BA {ba:.3f}; "
            f"support AUROC min {auroc(low, labels):.3f} mean {auroc(mean, labels):.3f}"
        )
    print("weights", dict(zip(grounding.FEATURES, np.round(coefficients, 3), strict=True)), "bias", round(bias, 3))
    print(
        "support threshold",
        round(threshold, 3),
        "bare-answer model logit",
        round(min_logit, 3),
        "reader margin",
        round(min_margin, 3),
    )

    # 3. Chunk relevance and 4. statement relevance, on QA questions.
    qa = [e for e in per_set["qa"][0] if e.grounded]
    questions = [e.question or "" for e in qa]
    knowledge = [e.chunk for e in qa]
    q_vectors = embedder.embed(questions)
    k_vectors = embedder.embed(knowledge)
    similarity = q_vectors @ q_vectors.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = similarity.argmax(axis=1)
    rng = random.Random(5)
    pairs: list[tuple[int, int, float]] = []
    for i in range(len(qa)):
        pairs.append((i, i, 1.0))
        pairs.append((i, int(nearest[i]), 0.0))
        other = rng.randrange(len(qa) - 1)
        pairs.append((i, other if other < i else other + 1, 0.0))
    prepared = grounding.prepare_chunks(embedder, knowledge)
    relevance_model = RelevanceModel()
    # The judge's own inputs (relevance.rating_inputs). The chunks are prepared once, without the query's
    # focus: the same units as at run time for a chunk of at most grounding.MAX_UNITS_PER_CHUNK units, which
    # every calibration passage is.
    rel_x = np.array(
        [
            relevance.rating_inputs(
                q_vectors[i],
                k_vectors[j],
                prepared[j].vectors,
                float(relevance_model.relevance(questions[i], [knowledge[j]])[0]),
            )
            for i, j, _ in pairs
        ]
    )
    # The calibration split's questions are English: the model reads every one (a NaN would mean it did not).
    assert not np.isnan(rel_x).any(), "the relevance model read no logit for some calibration question"
    rel_y = np.array([label for _, _, label in pairs])
    rel_labels = [bool(v) for v in rel_y]
    # The cosines alone rate a chunk for a query the model does not read (relevance.RelevanceModel's NaN).
    rel_embedding_coefficients, rel_embedding_bias = fit_logistic(rel_x[:, :2], rel_y, np.ones(len(rel_y)))
    rel_embedding_scores = rel_x[:, :2] @ rel_embedding_coefficients + rel_embedding_bias
    rel_coefficients, rel_bias = fit_logistic(rel_x, rel_y, np.ones(len(rel_y)))
    rel_scores = rel_x @ rel_coefficients + rel_bias
    print(
        f"chunk relevance: AUROC {auroc(list(rel_scores), rel_labels):.3f} "
        f"(the cosines alone {auroc(list(rel_embedding_scores), rel_labels):.3f}; train)"
    )

    sentence_answers = [e for e in per_set["qa"][0] if not text.is_short_answer(e.text)]
    a_vectors = embedder.embed([e.text for e in sentence_answers])
    aq_vectors = embedder.embed([e.question or "" for e in sentence_answers])
    own = np.sum(a_vectors * aq_vectors, axis=1)
    shuffled = np.roll(np.arange(len(sentence_answers)), 7)
    foreign = np.sum(a_vectors * aq_vectors[shuffled], axis=1)
    st_scores = np.concatenate([own, foreign])
    st_labels = [True] * len(own) + [False] * len(foreign)
    statement_threshold = float(
        max(np.linspace(0.0, 0.8, 161), key=lambda t: balanced_accuracy(list(st_scores >= t), st_labels))
    )
    st_ba = balanced_accuracy(list(st_scores >= statement_threshold), st_labels)
    print(f"statement relevance: threshold {statement_threshold:.3f}, BA {st_ba:.3f} (train)")

    # 5. Noncommittal.
    real_short = [e.text for name in SETS for e in per_set[name][0] if len(e.text.split()) <= 20]
    prototypes = embedder.embed(list(_NONCOMMITTAL_PROTOTYPES))
    real_max = float(np.max(embedder.embed(real_short) @ prototypes.T))
    noncommittal_min_cosine = min(0.95, real_max + 0.02)
    print(f"noncommittal: highest real answer cosine {real_max:.3f} -> threshold {noncommittal_min_cosine:.3f}")

    def tup(values: np.ndarray) -> str:
        # One value a line, as ruff format writes a tuple too long for one.
        return "(\n" + "".join(f"    {v:.6f},\n" for v in values) + ")"

    module = f'''"""Calibration constants of the offline judge.

Generated by bench/calibrate_offline.py on the first 80 % of the HaluEval QA and summarization dev
files: do not edit by hand, re-run the script. See that script for what each constant is fitted on.
"""

# Grounding model: standardised features (order of grounding.FEATURES), logistic layer.
FEATURE_MEANS = {tup(means)}
FEATURE_SCALES = {tup(scales)}
GROUNDING_WEIGHTS = {tup(coefficients)}
GROUNDING_BIAS = {bias:.6f}
SUPPORT_THRESHOLD = {threshold:.6f}
"""Support probability at or above which a chunk SUPPORTS a claim."""
MODEL_ANSWER_MIN_LOGIT = {min_logit:.6f}
"""Support-model logit from which a bare answer the chunk names is read as the answer (bare_answer_named)."""
READER_MIN_MARGIN = {min_margin:.6f}
"""Answer-reader margin from which a bare answer the chunk names is read as the answer (bare_answer_named)."""

# rate_chunks: sigmoid(bias + a * cos(query, chunk) + b * max cos(query, chunk sentence)
#                      + c * relevance.feature(relevance model's logit)).
RELEVANCE_WEIGHTS = {tup(rel_coefficients)}
RELEVANCE_BIAS = {rel_bias:.6f}
# rate_chunks for a query the relevance model does not read: the cosines alone (a, b).
RELEVANCE_EMBEDDING_WEIGHTS = {tup(rel_embedding_coefficients)}
RELEVANCE_EMBEDDING_BIAS = {rel_embedding_bias:.6f}

STATEMENT_RELEVANCE_THRESHOLD = {statement_threshold:.6f}
"""Query-statement cosine from which rate_statements calls a statement relevant."""
NONCOMMITTAL_MIN_COSINE = {noncommittal_min_cosine:.6f}
"""Cosine to an evasion prototype from which a short answer is noncommittal."""
'''
    if args.dry_run:
        print(module)
    else:
        OUT.write_text(module, encoding="utf-8")
        print(f"wrote {OUT} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
