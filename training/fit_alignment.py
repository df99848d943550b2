"""Fit the offline judge's aligned support (``ragtrace/judges/offline/aligned.py``) on the train files only.

The aligned support is the support model's logit shifted by a linear function of the alignment evidence
of ``ragtrace/judges/offline/alignment.py`` (proximity, margin, order) where the alignment reads the claim
(``aligned.reads``: covered, and a bare answer or a near copy of the chunk); a logistic regression with the
model's logit as a fixed offset, fitted on those claims only. It says how likely a chunk supports a claim,
where the support model alone passes a claim whose words the passage states beside other facts.

Data: ``../shared/data/halueval_qa_train.jsonl`` (HaluEval QA rows 1000-5999) and
``halueval_summarization_train.jsonl`` (500-2499) only; the dev files are for calibration
(``bench/calibrate_offline.py``) and the benchmark. From the first ``--rows`` QA train rows it builds, with
``bench/judge_sets.py``'s own code (the dev sets are the same code on other rows), each construction
(same-kind span, swapped, negated, one wrong sentence among 2-5 of each kind), HaluEval's own QA pairs and
the length-controlled span; from the first ``--summaries`` summarization rows, HaluEval's summary pairs.
Sets weigh as ``bench/calibrate_offline.py``'s ``SET_WEIGHTS`` says (its fit, ``fit_logistic``, with the
model's logit as the offset). Labels are per claim (``extract_claims``): every claim of the grounded
text is supported (at most two of a multi-sentence answer's); a claim of the other text that is not also a
claim of the grounded one is not (for HaluEval's own hallucinated texts a noisy label: some of their
clauses are true).

Deterministic: constructions are seeded by row, the fit is Newton's method from zero.

    python training/fit_alignment.py            # writes ragtrace/judges/offline/aligned_weights.py
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from calibrate_offline import SET_WEIGHTS, fit_logistic  # noqa: E402
from judge_accuracy import LENGTH_CONTROLLED, auroc, length_controlled_span  # noqa: E402
from judge_sets import ROW_CONSTRUCTIONS, build_pairs  # noqa: E402

from ragtrace.judges.offline import aligned, text  # noqa: E402
from ragtrace.judges.offline.alignment import Alignment, alignment, passage_tokens  # noqa: E402
from ragtrace.judges.offline.support import SupportModel  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
QA, SUMMARIES = "halueval_qa_train.jsonl", "halueval_summarization_train.jsonl"
OUT = ROOT / "ragtrace" / "judges" / "offline" / "aligned_weights.py"

Labelled = tuple[str, str, str | None, bool]
"""(claim text, chunk, question, supported)."""


def read(name: str) -> list[dict[str, str]]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def claim_labels(
    chunk: str, question: str | None, right: str, wrong: str, most: int = 0
) -> Iterator[tuple[str, str, bool]]:
    """(claim, chunk, supported) of one pair: the grounded text's claims (its first ``most`` when
    given: a multi-sentence answer's right claims are many and alike), and the other's claims it lacks."""
    kept = text.extract_claims(right, question)
    yield from ((c, chunk, True) for c in (kept[:most] if most else kept))
    yield from ((c, chunk, False) for c in text.extract_claims(wrong, question) if c not in kept)


def sets(rows: int, summaries: int) -> dict[str, list[tuple[str, str, bool]]]:
    qa = read(QA)
    indices = range(min(rows, len(qa)))
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for name in ROW_CONSTRUCTIONS:
        out[name] = [
            item
            for i, (right, wrong) in build_pairs(name, qa, indices, seed=QA)
            for item in claim_labels(qa[i]["knowledge"], qa[i]["question"], right, wrong, 2 if "multi" in name else 0)
        ]
    out["qa"] = [
        item
        for i in indices
        for item in claim_labels(
            qa[i]["knowledge"], qa[i]["question"], qa[i]["right_answer"], qa[i]["hallucinated_answer"]
        )
    ]
    spans = [(i, length_controlled_span(qa[i]["knowledge"], qa[i]["right_answer"], seed=f"{QA}:{i}")) for i in indices]
    out[LENGTH_CONTROLLED] = [
        item
        for i, span in spans
        if span is not None
        for item in claim_labels(qa[i]["knowledge"], qa[i]["question"], qa[i]["right_answer"], span)
    ]
    summary_rows = read(SUMMARIES)[:summaries]
    out["summarization"] = [
        item
        for row in summary_rows
        for item in claim_labels(row["document"], None, row["right_summary"], row["hallucinated_summary"])
    ]
    return out


def readings(model: SupportModel, claims: Sequence[tuple[str, str, bool]]) -> np.ndarray:
    """One row per claim: the support model's logit, the alignment (proximity, margin, order), the share
    of the claim's asserted content words the chunk states, and whether it is a bare answer joined to its
    question (what ``aligned.inputs`` reads)."""
    out = np.empty((len(claims), 6))
    for k, (claim, chunk, _) in enumerate(claims):
        logit = float(model.support([claim], [chunk])[0, 0])
        found = alignment(claim, passage_tokens(chunk))
        focus = text.claim_focus(claim)
        coverage = text.lexical_evidence(focus, chunk).coverage
        out[k] = (logit, found.proximity, found.margin, found.order, coverage, float(focus != claim))
    return out


def inputs(read: np.ndarray) -> np.ndarray:
    """The shift's inputs of each row of ``readings`` (``aligned.inputs``)."""
    rows = [aligned.inputs(Alignment(r[1], r[2], r[3]), bool(r[5])) for r in read]
    return np.array(rows).reshape(-1, len(aligned.INPUTS))


def read_by_alignment(read: np.ndarray) -> np.ndarray:
    """Which rows of ``readings`` the alignment shifts (``aligned.reads``); the others keep the model's
    logit, and are left out of the fit."""
    return np.array([aligned.reads(Alignment(r[1], r[2], r[3]), r[4], bool(r[5])) for r in read], dtype=bool)


def clipped(read: np.ndarray) -> np.ndarray:
    """The support model's clipped logit of each row of ``readings`` (NaN kept)."""
    return np.clip(read[:, 0], -aligned.MAX_LOGIT, aligned.MAX_LOGIT)


def aligned_logits(read: np.ndarray, coefficients: np.ndarray, bias: float) -> np.ndarray:
    """``aligned.aligned_logit`` of each row of ``readings`` under the given weights (NaN read as 0)."""
    logit = np.nan_to_num(clipped(read), nan=0.0)
    return np.where(read_by_alignment(read), logit + inputs(read) @ coefficients + bias, logit)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300, help="QA train rows the constructions are built from")
    parser.add_argument("--summaries", type=int, default=60, help="summarization train rows")
    parser.add_argument("--cache", type=Path, help="pickle of the features, kept between runs")
    parser.add_argument("--dry-run", action="store_true", help="print the fit, do not write the module")
    parser.add_argument(
        "--near-copy", type=float, help="fit at another aligned.NEAR_COPY than the module's (implies --dry-run)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    labelled = sets(args.rows, args.summaries)
    if args.cache is not None and args.cache.exists():
        with open(args.cache, "rb") as handle:
            per_set: dict[str, np.ndarray] = pickle.load(handle)
    else:
        model = SupportModel()
        per_set = {}
        for name, claims in labelled.items():
            per_set[name] = readings(model, claims)
            print(f"{name}: {len(claims)} claims, {time.perf_counter() - started:.0f} s", file=sys.stderr)
        if args.cache is not None:
            with open(args.cache, "wb") as handle:
                pickle.dump(per_set, handle)
    if args.near_copy is not None:
        aligned.NEAR_COPY = args.near_copy
    xs, ys, ws, offsets = [], [], [], []
    for name, claims in labelled.items():
        read = per_set[name]
        # A claim the support model does not read (NaN) is left out of the fit: at run time it keeps NaN.
        keep = read_by_alignment(read) & ~np.isnan(read[:, 0])
        y = np.array([1.0 if supported else 0.0 for _, _, supported in claims])
        print(f"{name}: the alignment reads {int(keep.sum())} of {len(keep)} claims", file=sys.stderr)
        xs.append(inputs(read)[keep])
        ys.append(y[keep])
        offsets.append(clipped(read)[keep])
        ws.append(np.full(int(keep.sum()), SET_WEIGHTS.get(name, 1.0) / max(int(keep.sum()), 1)))
    x, y, w, offset = np.vstack(xs), np.concatenate(ys), np.concatenate(ws), np.concatenate(offsets)
    coefficients, bias = fit_logistic(x, y, w / w.mean(), offset)
    print("weights", dict(zip(aligned.INPUTS, np.round(coefficients, 4), strict=True)), "bias", round(bias, 4))
    for name, claims in labelled.items():
        labels = [supported for _, _, supported in claims]
        combined = aligned_logits(per_set[name], coefficients, bias)
        logits = list(np.nan_to_num(per_set[name][:, 0], nan=0.0))
        print(
            f"train {name:<18} claims {len(labels):>5}  model logit AUROC {auroc(logits, labels):.3f}  "
            f"aligned AUROC {auroc(list(combined), labels):.3f}"
        )

    def tup(values: Sequence[float]) -> str:
        return "(" + ", ".join(f"{v:.6f}" for v in values) + ")"

    module = f'''"""Weights of the offline judge's aligned support (order of ``aligned.INPUTS``).

Generated by training/fit_alignment.py on the train files only ({args.rows} QA rows, {args.summaries}
summarization rows): do not edit by hand, re-run the script.
"""

WEIGHTS = {tup(coefficients)}
BIAS = {bias:.6f}
'''
    if args.dry_run or args.near_copy is not None:
        print(module)
    else:
        OUT.write_text(module, encoding="utf-8")
        print(f"wrote {OUT} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
