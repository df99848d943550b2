"""How the per-claim question is worded, chosen on the calibration split with a real local LLM.

The OpenAI judge asks a small model one yes/no question per claim and reads P(yes) from the logprobs
(``ragtrace/judges/openai/prompts.py``). This benchmark measures wordings of that question on HaluEval
QA dev **calibration** rows (0-799; by default 0-199) and the length-controlled set built from them,
never on the test rows that ``bench/local_llm_accuracy.py`` reports, so the wording it picks is not
tuned on the figures it is judged by.

Every variant asks the same claims (the OpenAI judge's own, ``extract_claims`` with the question) against
the record's passage, one call per claim, ``temperature=0``, ``max_tokens=4``, top-5 logprobs. A record's
score is the mean over its claims of P(yes) / (P(yes) + P(no)), as the faithfulness metric weighs them.
Printed per set and variant: AUROC with a 95 % paired bootstrap interval over rows, and its difference
from ``as is`` (the claim shown as it is, the wording shipped before) on the same resamples.

    python bench/local_llm.py serve --model 0.5b &            # or any OpenAI-compatible endpoint
    .venv/bin/python bench/verify_prompt_choice.py --rows 200 --variants "as is" marked
    .venv/bin/python bench/verify_prompt_choice.py --report bench/results/verify_prompt_choice.jsonl

Records are appended one JSON line each as they finish; a run resumes where the file stops.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import openai
from judge_accuracy import LENGTH_CONTROLLED, auroc, bootstrap_intervals, load
from local_llm_accuracy import append_record, read_records

from ragtrace.judges.openai import OpenAIJudge
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.prompts import STEP_MARKER

_NO_CONTRADICTED = (
    "You check statements against a context. Reply with one word: yes if the context supports the "
    "statement, no if it does not."
)
# Invented examples (no HaluEval text), shown as earlier turns of the conversation.
_SHOTS = (
    ("The Golden Gate Bridge opened in 1937. It spans the strait between San Francisco Bay and the Pacific Ocean.",
     "When did the Golden Gate Bridge open? 1937", "yes"),
    ("The Golden Gate Bridge opened in 1937. It spans the strait between San Francisco Bay and the Pacific Ocean.",
     "When did the Golden Gate Bridge open? The bridge opened to traffic in 1933.", "contradicted"),
    ("Marie Curie, born in Warsaw, shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel.",
     "Who shared the 1903 Nobel Prize in Physics with Marie Curie? Albert Einstein shared it with her.", "no"),
    ("Marie Curie, born in Warsaw, shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel.",
     "Where was Marie Curie born? She was born in Warsaw.", "yes"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Variant:
    """One wording: the system message, the user message of a claim and a chunk, earlier turns."""

    system: str
    user: Callable[[str, str], str]
    shots: bool = False

    def messages(self, claim: str, chunk: str) -> list[dict[str, str]]:
        turns = [{"role": "system", "content": f"{STEP_MARKER} {_prompts.VERIFY_CLAIM_STEP}\n{self.system}"}]
        for context, statement, answer in _SHOTS if self.shots else ():
            turns.append({"role": "user", "content": self.user(statement, context)})
            turns.append({"role": "assistant", "content": answer})
        return [*turns, {"role": "user", "content": self.user(claim, chunk)}]


def _as_is(claim: str, chunk: str) -> str:
    return f"Context: {chunk}\n\nStatement: {claim}\n\nIs the statement supported by the context?"


def _true(claim: str, chunk: str) -> str:
    return f"Context: {chunk}\n\nStatement: {claim}\n\nAccording to the context, is the statement true?"


def _statement_first(claim: str, chunk: str) -> str:
    return f"Statement: {claim}\n\nContext: {chunk}\n\nIs the statement supported by the context?"


def _marked(claim: str, chunk: str) -> str:
    return _prompts.render_verify_claim(claim, [chunk])  # what the judge sends


_SYSTEM = _prompts.VERIFY_CLAIM_WORD.instructions
VARIANTS = {
    "as is": Variant(_SYSTEM, _as_is),
    "marked": Variant(_SYSTEM, _marked),
    "no contradicted": Variant(_NO_CONTRADICTED, _as_is),
    "true": Variant(_SYSTEM, _true),
    "statement first": Variant(_SYSTEM, _statement_first),
    "few-shot": Variant(_SYSTEM, _as_is, shots=True),
    "few-shot marked": Variant(_SYSTEM, _marked, shots=True),
}


def p_yes(logprobs: Any) -> float:
    """P(yes) / (P(yes) + P(no)) over the first token's alternatives (0.5 when neither is there)."""
    yes = no = 0.0
    for alternative in logprobs.content[0].top_logprobs if logprobs and logprobs.content else ():
        word = alternative.token.strip().lower()
        if word.startswith("y"):
            yes += math.exp(alternative.logprob)
        elif word.startswith("n") and not word.startswith("ne"):
            no += math.exp(alternative.logprob)
    return yes / (yes + no) if yes + no > 0 else 0.5


async def measure(args: argparse.Namespace) -> None:
    client = openai.AsyncOpenAI(base_url=args.base_url, api_key="not-needed", max_retries=2, timeout=300)
    claims_of = OpenAIJudge(model=args.model, base_url=args.base_url)  # extract_claims makes no call here
    done = {(r["variant"], r["set"], r["row"], r["grounded"]) for r in read_records(args.out)}
    for name in args.variants:
        variant = VARIANTS[name]
        for set_name in args.sets:
            for example in load(set_name, "train"):
                if example.row >= args.rows or (name, set_name, example.row, example.grounded) in done:
                    continue
                claims = (await claims_of.extract_claims(example.text, question=example.question)).value
                scores = []
                for claim in claims:
                    reply = await client.chat.completions.create(
                        model=args.model,
                        messages=variant.messages(claim, example.chunk),  # type: ignore[arg-type]
                        temperature=0,
                        max_tokens=4,
                        logprobs=True,
                        top_logprobs=5,
                    )
                    scores.append(p_yes(reply.choices[0].logprobs))
                record = {"variant": name, "set": set_name, "row": example.row, "grounded": example.grounded}
                record["p_yes"] = sum(scores) / len(scores) if scores else 0.0
                append_record(args.out, record)
    await claims_of.aclose()
    await client.close()


def report(path: str) -> None:
    records = read_records(path)
    print(f"{path}: {len(records)} records")
    for set_name in dict.fromkeys(r["set"] for r in records):
        by_variant: dict[str, dict[tuple[int, bool], float]] = {}
        for r in records:
            if r["set"] == set_name:
                by_variant.setdefault(r["variant"], {})[(r["row"], r["grounded"])] = r["p_yes"]
        baseline = by_variant.get("as is", {})
        print(f"\n{set_name}")
        if not baseline:
            print('no "as is" records: every variant is measured against it on the same rows (--variants "as is" ...)')
            continue
        print(f"{'variant':<18}{'records':>8}{'AUROC':>8}{'95 % interval':>18}{'vs as is, same rows':>36}")
        for name, scores in by_variant.items():
            # Rows whose two records this variant and the baseline both have.
            keys = [k for k in scores if k in baseline and (k[0], not k[1]) in scores and (k[0], not k[1]) in baseline]
            keys.sort()
            labels = [k[1] for k in keys]
            if not keys:
                continue
            ours, base = [scores[k] for k in keys], [baseline[k] for k in keys]
            intervals = bootstrap_intervals([k[0] for k in keys], labels, {name: ours, "as is": base})
            low, high = intervals[name]
            diff = auroc(ours, labels) - auroc(base, labels)
            if name == "as is":
                versus = ""
            else:
                d_low, d_high = intervals[f"{name} - as is"]
                versus = f"{diff:+.3f} [{d_low:+.3f}, {d_high:+.3f}]"
            print(f"{name:<18}{len(keys):>8}{auroc(ours, labels):>8.3f}{f'[{low:.3f}, {high:.3f}]':>18}{versus:>36}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--rows", type=int, default=200, help="calibration rows from 0 (two records each)")
    parser.add_argument("--sets", nargs="+", default=["qa", LENGTH_CONTROLLED])
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=["as is", "marked"])
    parser.add_argument("--out", default="bench/results/verify_prompt_choice.jsonl")
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
