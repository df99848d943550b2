"""Whether rating the chunks in the per-claim verification call costs a small model accuracy.

The production suite reads context_relevance from the verification call when the judge rates the chunks
there (``OpenAIJudge(rate_chunks_in_verify=True)``: the record's first claim asks ``verify_claim_rated``).
This benchmark asks the same first claim of each record both ways through ``OpenAIJudge.verify`` against a
real local model, on HaluEval QA dev **calibration** rows only (from row 0; the last 20 % are the test rows
``bench/local_llm_accuracy.py`` reports), and prints per way: AUROC of that claim's P(yes) separating the
right answer from the hallucinated one (95 % paired bootstrap over rows, and the difference from ``plain``
on the same resamples), replies that could not be read after the retry (scored 0.5 here; in the suite
faithfulness would be absent), rated replies without readable ratings (the suite then asks rate_chunks),
the mean rating, seconds and prompt tokens per call.

Two sets: ``one`` (the row's knowledge as one chunk: the one-word question) and ``split`` (the knowledge
split at its paragraph joins as ``bench/judge_cost.py`` splits it, rows with at least two chunks: the JSON
question naming its chunk).

A third, ``relevance``, measures the ratings themselves: each question with two chunks, its own passage and
the passage of the calibration question sharing the most words with it (``judge_sets.neighbour_relevance``;
the own passage first on even rows, second on odd ones), rated by ``rate_chunks`` (``plain``) and in the
rated verification of the right answer's first claim (``rated``); AUROC of the ratings separating the own
passage from the other (95 % bootstrap over rows), the ratings read, their mean and spread.

    python bench/local_llm.py serve --model 0.5b &
    .venv/bin/python bench/verify_rated_choice.py --set one --rows 40
    .venv/bin/python bench/verify_rated_choice.py --set relevance --rows 40
    .venv/bin/python bench/verify_rated_choice.py --report bench/results/verify_rated_choice.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_accuracy import auroc, bootstrap_intervals, read_rows, split_rows
from judge_sets import neighbour_relevance
from local_llm_accuracy import append_record, read_records

from ragtrace.judges import JudgeError
from ragtrace.judges.openai import OpenAIJudge

_PARAGRAPH_JOIN = re.compile(r"(?<=[.!?])(?=[A-Z])")  # as bench/judge_cost.py splits the knowledge
VARIANTS = ("plain", "rated")


def chunks_of(knowledge: str, set_name: str) -> list[str]:
    if set_name == "one":
        return [knowledge]
    return [c.strip() for c in _PARAGRAPH_JOIN.split(knowledge) if c.strip()]


async def measure(args: argparse.Namespace) -> None:
    rows = read_rows("halueval_qa_dev.jsonl")
    calibration = split_rows(len(rows), "train")
    done = {(r["variant"], r["set"], r["row"], r["grounded"]) for r in read_records(args.out)}
    judges = {
        name: OpenAIJudge(
            model=args.model,
            base_url=args.base_url,
            verify="per_claim",
            rate_chunks_in_verify=name == "rated",
            timeout=600,
        )
        for name in args.variants
    }
    try:
        if args.set == "relevance":
            await measure_ratings(args, rows, calibration, judges, done)
            return
        for number in range(args.rows):
            assert number in calibration
            row = rows[number]
            chunks = chunks_of(row["knowledge"], args.set)
            if args.set == "split" and len(chunks) < 2:
                continue
            for grounded in (True, False):
                answer = row["right_answer" if grounded else "hallucinated_answer"]
                for name in args.variants:
                    if (name, args.set, number, grounded) in done:
                        continue
                    judge = judges[name]
                    claims = (await judge.extract_claims(answer, question=row["question"])).value[:1]
                    record: dict[str, Any] = {"variant": name, "set": args.set, "row": number, "grounded": grounded}
                    started = time.monotonic()
                    try:
                        reply = await judge.verify(claims, chunks, question=row["question"])
                    except JudgeError as error:
                        record.update(p_yes=0.5, failed=True, prompt_tokens=error.cost.prompt_tokens)
                    else:
                        support = reply.support[0] if reply.support else [0.0]
                        record.update(p_yes=max(support), failed=False, prompt_tokens=reply.cost.prompt_tokens)
                        record["ratings"] = None if reply.relevance is None else list(reply.relevance)
                    record["seconds"] = round(time.monotonic() - started, 2)
                    append_record(args.out, record)
    finally:
        for judge in judges.values():
            await judge.aclose()


async def measure_ratings(
    args: argparse.Namespace,
    rows: Sequence[dict[str, Any]],
    calibration: Sequence[int],
    judges: dict[str, OpenAIJudge],
    done: set[tuple[str, str, int, bool]],
) -> None:
    """The ``relevance`` set: each case's two chunks rated by ``rate_chunks`` and in the rated verification."""
    for case in neighbour_relevance(rows, calibration)[: args.rows]:
        own_first = case.row % 2 == 0
        chunks = [case.relevant, case.irrelevant] if own_first else [case.irrelevant, case.relevant]
        for name in args.variants:
            if (name, args.set, case.row, True) in done:
                continue
            judge = judges[name]
            record: dict[str, Any] = {"variant": name, "set": args.set, "row": case.row, "grounded": True}
            record["own"] = 0 if own_first else 1
            started = time.monotonic()
            try:
                if name == "plain":
                    rating = await judge.rate_chunks(case.question, chunks)
                    ratings: list[float] | None = list(rating.value)
                    cost = rating.cost
                else:
                    answer = rows[case.row]["right_answer"]
                    claims = (await judge.extract_claims(answer, question=case.question)).value[:1]
                    rated = await judge.verify(claims, chunks, question=case.question)
                    ratings, cost = (None if rated.relevance is None else list(rated.relevance)), rated.cost
            except JudgeError as error:
                record.update(failed=True, ratings=None, prompt_tokens=error.cost.prompt_tokens)
            else:
                record.update(failed=False, ratings=ratings, prompt_tokens=cost.prompt_tokens)
            record["seconds"] = round(time.monotonic() - started, 2)
            append_record(args.out, record)


def report_ratings(records: Sequence[dict[str, Any]]) -> None:
    """The ``relevance`` set's table: how well each way's ratings tell the own passage from the other."""
    print("\nset relevance (the ratings: own passage against the nearest question's)")
    print(
        f"{'variant':<8}{'cases':>7}{'read':>6}{'AUROC':>8}{'95 % interval':>17}{'mean':>7}{'distinct':>10}"
        f"{'s/call':>8}{'prompt tok':>11}"
    )
    for name in VARIANTS:
        rs = [r for r in records if r["variant"] == name]
        if not rs:
            continue
        read = [r for r in rs if r["ratings"] is not None]
        scores = [x for r in read for x in r["ratings"]]
        labels = [k == r["own"] for r in read for k in range(len(r["ratings"]))]
        groups = [r["row"] for r in read for _ in r["ratings"]]
        if read:
            low, high = bootstrap_intervals(groups, labels, {name: scores})[name]
            figures = f"{auroc(scores, labels):>8.3f}{f'[{low:.3f}, {high:.3f}]':>17}"
            spread = f"{sum(scores) / len(scores):>7.2f}{len(set(scores)):>10}"
        else:
            figures, spread = f"{'-':>8}{'-':>17}", f"{'-':>7}{'-':>10}"
        print(
            f"{name:<8}{len(rs):>7}{len(read):>6}{figures}{spread}"
            f"{sum(r['seconds'] for r in rs) / len(rs):>8.1f}{sum(r['prompt_tokens'] for r in rs) / len(rs):>11.0f}"
        )


def report(path: str) -> None:
    records = read_records(path)
    print(f"{path}: {len(records)} records")
    for set_name in dict.fromkeys(r["set"] for r in records):
        if set_name == "relevance":
            report_ratings([r for r in records if r["set"] == set_name])
            continue
        by: dict[str, dict[tuple[int, bool], dict[str, Any]]] = {}
        for r in records:
            if r["set"] == set_name:
                by.setdefault(r["variant"], {})[(r["row"], r["grounded"])] = r
        base = by.get("plain", {})
        print(f"\nset {set_name}")
        print(
            f"{'variant':<8}{'records':>8}{'AUROC':>8}{'95 % interval':>17}{'vs plain, same rows':>28}"
            f"{'unread':>8}{'no ratings':>11}{'mean rating':>12}{'s/call':>8}{'prompt tok':>11}"
        )
        for name, got in by.items():
            keys = sorted(k for k in got if k in base and (k[0], not k[1]) in got and (k[0], not k[1]) in base)
            if not keys:
                continue
            labels = [k[1] for k in keys]
            ours, plain = [got[k]["p_yes"] for k in keys], [base[k]["p_yes"] for k in keys]
            intervals = bootstrap_intervals([k[0] for k in keys], labels, {name: ours, "plain": plain})
            low, high = intervals[name]
            versus = ""
            if name != "plain":
                d_low, d_high = intervals[f"{name} - plain"]
                versus = f"{auroc(ours, labels) - auroc(plain, labels):+.3f} [{d_low:+.3f}, {d_high:+.3f}]"
            rs = [got[k] for k in keys]
            rated = [r for r in rs if not r["failed"] and name == "rated"]
            unrated = sum(1 for r in rated if r.get("ratings") is None)
            ratings = [x for r in rated for x in (r.get("ratings") or [])]
            mean_rating = f"{sum(ratings) / len(ratings):.2f}" if ratings else "-"
            print(
                f"{name:<8}{len(keys):>8}{auroc(ours, labels):>8.3f}{f'[{low:.3f}, {high:.3f}]':>17}{versus:>28}"
                f"{sum(r['failed'] for r in rs):>8}{(unrated if name == 'rated' else '-'):>11}{mean_rating:>12}"
                f"{sum(r['seconds'] for r in rs) / len(rs):>8.1f}{sum(r['prompt_tokens'] for r in rs) / len(rs):>11.0f}"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--set", choices=("one", "split", "relevance"), default="one")
    parser.add_argument("--rows", type=int, default=40, help="calibration rows from 0 (two records each)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--out", default="bench/results/verify_rated_choice.jsonl")
    parser.add_argument("--report", help="print the table of a results file and stop")
    args = parser.parse_args(argv)
    if args.report:
        report(args.report)
        return 0
    if args.rows > 800:
        parser.error("--rows: the calibration split is rows 0-799")
    asyncio.run(measure(args))
    report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
