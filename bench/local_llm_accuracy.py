"""Faithfulness with a real local LLM: ragtrace's OpenAI-compatible judge against ragas, same model, same rows.

One command sets everything up (``bench/local_llm.py``: venv, xllamacpp, ragas, the weights), serves the
model on 127.0.0.1, scores, prints the side-by-side table and stops the server:

    python bench/local_llm_accuracy.py --serve 0.5b --rows 200 --out bench/results/local_llm_0.5b_test.jsonl

Or against a server already running (in the bench venv, which has ragas):

    bench/.venv-local-llm/bin/python bench/local_llm_accuracy.py --base-url http://127.0.0.1:8089/v1 --rows 40
    bench/.venv-local-llm/bin/python bench/local_llm_accuracy.py --report bench/results/local_llm_0.5b_test.jsonl

ragas does not depend on ragtrace's code, so after a change to the judge ``--ragas-from OLD.jsonl`` (same
model) takes ragas's figures for the records OLD has and measures ragas only for the others; such
records carry ``ragas_from``.

For every record (HaluEval QA dev, test split rows 800-999, the right and the hallucinated answer; and
the lead's length-controlled set built from the same rows) it measures, in one process, one record
after the other:

- ours: ``OpenAIJudge`` (verify per claim): the answer's claims, one yes/no question each; "ours
  P(yes)" is the mean over claims of P(yes) (logprobs), which is what the faithfulness metric reports
  (each claim weighed by its support probability; tests/ragtrace/judges/test_openai_per_claim.py
  checks the two agree); "ours verdicts" the share of claims with P(yes) >= 0.5
  (``Faithfulness(scoring="verdicts")``);
- ragas 0.4.3 ``Faithfulness`` (collections API, same model through the same endpoint);
- the offline judge's support probability (no LLM), and the tiered judge's routing
  (``ragtrace.judges.tiered.needs_llm``): the offline score where the offline tier is sure, the LLM
  judge's where it is doubtful or audited.

Per judge: AUROC with a 95 % paired bootstrap interval over rows, balanced accuracy (grounded when the
score is 1.0 for the verdict scores, >= 0.5 for probabilities), chat calls, prompt and completion
tokens and seconds per record (calls and tokens counted at the HTTP client for ragas). Records are
written one JSON line each as they finish, so a run cut short still reports what it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    from judge_accuracy import LENGTH_CONTROLLED, Example, auroc, balanced_accuracy, bootstrap_intervals, load
except ImportError:  # ragtrace is not installed here: only --serve works, which runs this in the bench venv
    LENGTH_CONTROLLED = "qa_length_controlled"


class _Usage:
    """Calls and tokens seen by an httpx client (ragas's requests)."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    async def on_response(self, response: Any) -> None:
        if not str(response.request.url).endswith("/chat/completions"):
            return
        self.calls += 1
        await response.aread()
        try:
            usage = response.json().get("usage") or {}
        except ValueError:
            return
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)


async def measure(args: argparse.Namespace) -> None:
    import httpx
    import openai
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    from ragtrace.judges.offline import OfflineJudge
    from ragtrace.judges.openai import OpenAIJudge

    ours = OpenAIJudge(model=args.model, base_url=args.base_url, timeout=args.timeout, max_retries=1)
    usage = _Usage()
    http = httpx.AsyncClient(timeout=args.timeout, event_hooks={"response": [usage.on_response]})
    client = openai.AsyncOpenAI(base_url=args.base_url, api_key="not-needed", http_client=http, max_retries=0)
    ragas_metric = Faithfulness(llm=llm_factory(args.model, client=client))
    offline = OfflineJudge()
    done = {(d["set"], d["row"], d["grounded"]) for d in read_records(args.out)}
    # ragas does not depend on ragtrace's code: an earlier run's ragas figures for the same model and rows
    # stand, and only records missing there are measured (ragas costs ~7x ours per record).
    earlier_ragas = {
        (d["set"], d["row"], d["grounded"]): {k: v for k, v in d.items() if k.startswith("ragas")}
        for d in (read_records(args.ragas_from) if args.ragas_from else [])
        if any(k.startswith("ragas") for k in d)
    }
    for name in args.sets:
        examples = [e for e in load(name, "test") if e.row < 800 + args.rows]
        for example in examples:
            if (name, example.row, example.grounded) in done:
                continue
            record: dict[str, Any] = {"set": name, "row": example.row, "grounded": example.grounded}
            record.update(await _ours(ours, example))
            record.update(await _offline(offline, example))
            key = (name, example.row, example.grounded)
            if key in earlier_ragas:
                record.update(earlier_ragas[key], ragas_from=args.ragas_from)
            else:
                record.update(await _ragas(ragas_metric, usage, example, args.timeout))
            append_record(args.out, record)
            print(json.dumps(record), flush=True)
    await ours.aclose()
    await http.aclose()


async def _ours(judge: Any, example: Example) -> dict[str, Any]:
    from ragtrace.judges import JudgeError

    start = time.perf_counter()
    try:
        claims = await judge.extract_claims(example.text, question=example.question)
        reply = await judge.support(claims.value, [example.chunk])
    except JudgeError as error:
        seconds = time.perf_counter() - start
        return {"ours_error": error.error_type, "ours_calls": error.cost.chat_calls, "ours_seconds": seconds}
    probabilities = [max(row) for row in reply.value]
    cost = claims.cost + reply.cost
    return {
        "ours_p": sum(probabilities) / len(probabilities) if probabilities else 0.0,
        "ours_verdict": sum(p >= 0.5 for p in probabilities) / len(probabilities) if probabilities else 0.0,
        "ours_claims": len(probabilities),
        "ours_calls": cost.chat_calls,
        "ours_prompt_tokens": cost.prompt_tokens,
        "ours_completion_tokens": cost.completion_tokens,
        "ours_seconds": time.perf_counter() - start,
    }


async def _offline(judge: Any, example: Example) -> dict[str, Any]:
    try:
        return await _offline_support(judge, example)
    except Exception as error:  # the offline judge being rebuilt meanwhile: measured later (--offline)
        return {"offline_error": f"{type(error).__name__}: {error}"[:200]}


async def _offline_support(judge: Any, example: Example) -> dict[str, Any]:
    start = time.perf_counter()
    claims = (await judge.extract_claims(example.text, question=example.question)).value
    if not claims:
        return {"offline_p": 0.0, "offline_probabilities": [], "offline_seconds": time.perf_counter() - start}
    rows = (await judge.support(claims, [example.chunk])).value
    probabilities = [max(row) for row in rows]
    return {
        "offline_p": sum(probabilities) / len(probabilities),
        "offline_probabilities": probabilities,
        "offline_seconds": time.perf_counter() - start,
    }


async def _ragas(metric: Any, usage: _Usage, example: Example, timeout: float) -> dict[str, Any]:
    before = (usage.calls, usage.prompt_tokens, usage.completion_tokens)
    start = time.perf_counter()
    result: dict[str, Any] = {}
    try:
        scored = await asyncio.wait_for(
            metric.ascore(user_input=example.question or "", response=example.text, retrieved_contexts=[example.chunk]),
            timeout * 4,
        )
        value = scored.value
        if value is None or value != value:  # NaN: ragas found no statements
            result["ragas_error"] = "nan"
        else:
            result["ragas"] = float(value)
    except Exception as error:  # ragas raises whatever its parser met: a failed record, counted
        result["ragas_error"] = type(error).__name__
    result.update(
        ragas_calls=usage.calls - before[0],
        ragas_prompt_tokens=usage.prompt_tokens - before[1],
        ragas_completion_tokens=usage.completion_tokens - before[2],
        ragas_seconds=time.perf_counter() - start,
    )
    return result


async def fill_offline(path: str, *, refill: bool = False) -> None:
    """Compute the offline tier's support for the records of ``path`` that lack it (all of them with
    ``refill``: the offline judge of the working tree, matching the threshold the report routes with)."""
    from ragtrace.judges.offline import OfflineJudge

    judge = OfflineJudge()
    records = read_records(path)
    examples = {(name, e.row, e.grounded): e for name in {r["set"] for r in records} for e in load(name, "test")}
    for record in records:
        if refill or "offline_p" not in record:
            for key in ("offline_error", "offline_p", "offline_probabilities", "offline_seconds"):
                record.pop(key, None)
            record.update(await _offline(judge, examples[(record["set"], record["row"], record["grounded"])]))
    _write_all(path, records)


def _write_all(path: str, records: Sequence[dict[str, Any]]) -> None:
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def append_record(path: str, record: dict[str, Any]) -> None:
    """Append ``record`` to the JSON-lines results file ``path`` (a run cut short keeps what it measured)."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def read_records(path: str) -> list[dict[str, Any]]:
    """The records of the JSON-lines results file ``path`` (none when it does not exist yet)."""
    if not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def best_cut(p_yes: Sequence[float], labels: Sequence[bool]) -> float:
    """The P(yes) cut with the best balanced accuracy of "supported" (the lower one on ties)."""
    candidates = sorted({round(v, 4) for v in p_yes} | {0.5})
    return max(candidates, key=lambda c: (balanced_accuracy([v >= c for v in p_yes], labels), -c))


def cross_fitted_verdicts(
    rows: Sequence[dict[str, Any]], p_yes: Sequence[float], labels: Sequence[bool]
) -> tuple[list[float], tuple[float, float]]:
    """Each record's verdict (1.0 supported, else 0.0) at a ``support_threshold`` fitted on the other
    half of the rows (even rows cut the odd ones and back), so the figure is held out. A record's
    P(yes) is its claims' mean: exact for one-claim records (every record of these sets)."""
    halves = [[i for i, r in enumerate(rows) if r["row"] % 2 == parity] for parity in (0, 1)]
    cuts = tuple(best_cut([p_yes[i] for i in half], [labels[i] for i in half]) for half in halves)
    verdicts = [0.0] * len(rows)
    for fitted_on, apply_to in ((0, 1), (1, 0)):
        for i in halves[apply_to]:
            verdicts[i] = 1.0 if p_yes[i] >= cuts[fitted_on] else 0.0
    return verdicts, (cuts[0], cuts[1])


def report(path: str, threshold: float | None = None) -> None:
    from ragtrace.judges.tiered.routing import DEFAULT_MARGIN, needs_llm, offline_threshold, rescore

    if threshold is None:
        threshold = offline_threshold()  # as TieredJudge() uses

    records = read_records(path)
    print(f"{path}: {len(records)} records")
    for name in dict.fromkeys(r["set"] for r in records):
        rows = [r for r in records if r["set"] == name]
        # Only rows whose two records are both there (pairs keep the classes balanced).
        pairs = {r["row"] for r in rows if r["grounded"]} & {r["row"] for r in rows if not r["grounded"]}
        rows = [r for r in rows if r["row"] in pairs]
        labels = [bool(r["grounded"]) for r in rows]
        # A failed record scores 0 (it would raise no alert as grounded) and is counted.
        ours_p = [r.get("ours_p", 0.0) for r in rows]
        ours_v = [r.get("ours_verdict", 0.0) for r in rows]
        ragas = [r.get("ragas", 0.0) for r in rows]
        offline = [r["offline_p"] for r in rows]
        routed = [needs_llm(r["offline_probabilities"], _key(r), threshold=threshold) for r in rows]
        doubtful = [needs_llm(r["offline_probabilities"], "", threshold=threshold, audit_share=0.0) for r in rows]
        # As TieredJudge.verify scores them: a doubtful record by the LLM, in the doubt band; an audited one
        # keeps the offline score when the LLM agrees with it, else takes the LLM's.
        tiered = [
            o if not go or (not doubt and (p >= 0.5) == (o >= threshold)) else rescore(p, threshold, DEFAULT_MARGIN)
            for o, p, go, doubt in zip(offline, ours_p, routed, doubtful, strict=True)
        ]
        calibrated, cuts = cross_fitted_verdicts(rows, ours_p, labels)
        scores = {
            "ours P(yes)": ours_p,
            "ours verdicts": ours_v,
            "ours calibrated": calibrated,
            "ragas": ragas,
            "offline": offline,
            "tiered": tiered,
        }
        intervals = bootstrap_intervals([r["row"] for r in rows], labels, scores)
        print(f"\n{name}: {len(rows)} records ({len(pairs)} rows)")
        print(f"{'judge':<16}{'AUROC':>7}{'95 % interval':>18}{'BA':>7}{'failed':>8}{'calls':>7}{'prompt tok':>12}"
              f"{'compl tok':>11}{'s/record':>10}")  # fmt: skip
        for label, values in scores.items():
            cut = 1.0 if label in ("ours verdicts", "ours calibrated", "ragas") else 0.5
            ba = balanced_accuracy([v >= cut for v in values], labels)
            low, high = intervals[label]
            prefix = {"ours P(yes)": "ours", "ours verdicts": "ours", "ours calibrated": "ours", "ragas": "ragas"}.get(
                label
            )
            if prefix is not None:
                failed = sum(1 for r in rows if f"{prefix}_error" in r)
                calls = _mean(rows, f"{prefix}_calls")
                tokens = (_mean(rows, f"{prefix}_prompt_tokens"), _mean(rows, f"{prefix}_completion_tokens"))
                seconds = _mean(rows, f"{prefix}_seconds")
            elif label == "offline":
                failed, calls, tokens, seconds = 0, 0.0, (0.0, 0.0), _mean(rows, "offline_seconds")
            else:
                failed = sum(1 for r, go in zip(rows, routed, strict=True) if go and "ours_error" in r)
                calls = sum(r.get("ours_calls", 0) for r, go in zip(rows, routed, strict=True) if go) / len(rows)
                prompt = sum(r.get("ours_prompt_tokens", 0) for r, go in zip(rows, routed, strict=True) if go)
                completion = sum(r.get("ours_completion_tokens", 0) for r, go in zip(rows, routed, strict=True) if go)
                tokens = (prompt / len(rows), completion / len(rows))
                seconds = _mean(rows, "offline_seconds") + sum(
                    r.get("ours_seconds", 0.0) for r, go in zip(rows, routed, strict=True) if go
                ) / len(rows)
            print(
                f"{label:<16}{auroc(values, labels):>7.3f}{f'[{low:.3f}, {high:.3f}]':>18}{ba:>7.3f}{failed:>8}"
                f"{calls:>7.2f}{tokens[0]:>12.0f}{tokens[1]:>11.1f}{seconds:>10.2f}"
            )
        fitted = best_cut(ours_p, labels)
        print(
            f"ours calibrated: verdicts cut at a support_threshold fitted on the other half of the rows "
            f"(even/odd: {cuts[0]:.2f}/{cuts[1]:.2f}); fitted on all rows: {fitted:.2f} "
            f"(RAGTRACE_JUDGE_SUPPORT_THRESHOLD={fitted:.2f} for this model)"
        )
        share = sum(routed) / len(routed)
        ours_calls = _mean(rows, "ours_calls")
        tiered_calls = sum(r.get("ours_calls", 0) for r, go in zip(rows, routed, strict=True) if go) / len(rows)
        print(
            f"tiered: {share:.1%} of records sent to the LLM; LLM calls per record {tiered_calls:.2f} vs "
            f"{ours_calls:.2f} for the LLM judge alone ({tiered_calls / ours_calls if ours_calls else 0:.2f}x); "
            f"AUROC {auroc(tiered, labels) - auroc(ours_p, labels):+.3f} vs the LLM judge alone "
            f"(offline threshold {threshold:.3f}, margin {DEFAULT_MARGIN:.2f}, audit share 5 %)"
        )


def _key(record: dict[str, Any]) -> str:
    return f"{record['set']}:{record['row']}:{record['grounded']}"


def _mean(rows: Sequence[dict[str, Any]], key: str) -> float:
    return sum(float(r.get(key, 0) or 0) for r in rows) / len(rows) if rows else 0.0


def serve_and_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Start ``bench/local_llm.py serve`` (set up on first use), run this script in the bench venv
    against it, then stop the server."""
    import subprocess

    import local_llm

    local_llm.ensure_venv()
    local_llm.ensure_weights(local_llm.WEIGHTS[args.serve])
    command = [sys.executable, str(local_llm.BENCH / "local_llm.py"), "serve", "--model", args.serve]
    command += ["--port", str(args.port), "--seconds", "86400"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if line.startswith("READY"):
                break
        else:
            raise SystemExit("the local LLM server stopped before it was ready")
        rest = [a for a in argv if a not in ("--serve", args.serve)]
        model = local_llm.WEIGHTS[args.serve].path.stem
        run = [str(local_llm.venv_python()), __file__, *rest, "--base-url", f"http://127.0.0.1:{args.port}/v1"]
        return subprocess.run([*run, "--model", model], check=False).returncode
    finally:
        server.terminate()
        server.wait(30)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--rows", type=int, default=40, help="test-split rows from 800 (two records each)")
    parser.add_argument("--sets", nargs="+", default=["qa", LENGTH_CONTROLLED])
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", default="bench/results/local_llm.jsonl")
    parser.add_argument("--report", help="print the table of a results file and stop")
    parser.add_argument("--serve", choices=("0.5b", "1.5b"), help="set up and serve this model for the run")
    parser.add_argument("--port", type=int, default=8089, help="the port --serve binds on 127.0.0.1")
    parser.add_argument("--fill-offline", help="add the offline tier's support to a results file and stop")
    parser.add_argument(
        "--threshold", type=float, help="the offline tier's support threshold (default: the working tree's)"
    )
    parser.add_argument("--refill", action="store_true", help="with --fill-offline: recompute it for every record")
    parser.add_argument(
        "--ragas-from", help="take ragas's figures from this earlier results file (same model) where it has the record"
    )
    args = parser.parse_args(argv)
    if args.serve:
        return serve_and_run(args, list(sys.argv[1:] if argv is None else argv))
    if args.fill_offline:
        asyncio.run(fill_offline(args.fill_offline, refill=args.refill))
        return 0
    if args.report:
        report(args.report, args.threshold)
        return 0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(measure(args))
    report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
