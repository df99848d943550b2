"""Judge cost per record: ragtrace's production suite against ragas 0.4, on the same stub server, in one run.

    .venv/bin/python bench/judge_cost.py [--records 20] [--skip-ragas]

Both clients score the same records (the first N of ../shared/data/halueval_qa_dev.jsonl; the
knowledge split into chunks at its paragraph joins; right and hallucinated answers alternating)
against one ``StubOpenAIServer``: ragtrace's production suite (faithfulness, hallucination,
answer_relevancy_embedding, context_relevance) through ``OpenAIJudge``, and ragas 0.4
(faithfulness, answer relevancy, context precision without reference) through langchain-openai.
Calls and tokens are read from the server's log, so both are measured with the same ruler.

ragas runs in its own virtualenv, ``bench/.venv-ragas``, which this script creates on first use
(ragas needs ``langchain-community<0.4`` to import). If it cannot be installed, the script says so
and prints ragtrace's figures alone. ``--verify batched`` measures ragtrace as it runs on api.openai.com (on
this local stub ``auto`` verifies per claim); ``--rate-chunks-apart`` / ``--rate-chunks-in-verify`` force
context relevance into a call of its own / into the verification call (``rate_chunks_in_verify``; by
default the verification rates the chunks when batched only).

Caveats, printed with the results: the stub's tokenizer is crude (words and punctuation marks), the
same for both; completion tokens are what the stub wrote, not what a real model would write, so the
prompt-token and call ratios are the meaningful ones.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ragtrace import RagRecord
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import build_suite
from ragtrace.testing._stub_openai import LoggedRequest, StubOpenAIServer

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "halueval_qa_dev.jsonl"
RAGAS_VENV = ROOT / "bench" / ".venv-ragas"
# langchain-core 1.8 needs a langchain-protocol the package index lacks, and pip backtracks for many minutes
# over instructor versions without the last two bounds: these install in one pass.
RAGAS_REQUIREMENTS = (
    "ragas>=0.4,<0.5",
    "langchain-community<0.4",
    "langchain-core<0.4",
    "langchain-openai<0.4",
    "instructor<1.12",
)
_PARAGRAPH_JOIN = re.compile(r"(?<=[.!?])(?=[A-Z])")

RAGAS_RUNNER = textwrap.dedent(
    """
    import json, math, os, sys, warnings
    warnings.filterwarnings("ignore")
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness, LLMContextPrecisionWithoutReference, ResponseRelevancy

    base_url, path, bypass_n = sys.argv[1], sys.argv[2], sys.argv[3] == "bypass_n"
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    dataset = EvaluationDataset.from_list(
        [{"user_input": r["query"], "retrieved_contexts": r["chunks"], "response": r["answer"]} for r in rows]
    )
    llm = LangchainLLMWrapper(
        ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="stub", temperature=0, max_retries=0),
        bypass_n=bypass_n,
    )
    embeddings = LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(
            model="text-embedding-3-small", base_url=base_url, api_key="stub", check_embedding_ctx_length=False
        )
    )
    result = evaluate(
        dataset,
        metrics=[Faithfulness(), ResponseRelevancy(), LLMContextPrecisionWithoutReference()],
        llm=llm,
        embeddings=embeddings,
        run_config=RunConfig(max_workers=4, max_retries=1),
        show_progress=False,
        raise_exceptions=False,
    )
    frame = result.to_pandas()
    out = {}
    for column in ("faithfulness", "answer_relevancy", "llm_context_precision_without_reference"):
        values = [float(v) for v in frame[column]] if column in frame else []
        out[column] = {"scored": sum(1 for v in values if not math.isnan(v)), "of": len(values)}
    print("RAGAS_RESULT " + json.dumps(out))
    """
)


@dataclass(frozen=True)
class Tally:
    """Judge usage of one client over all records, from the server's log."""

    chat_calls: int
    embedding_calls: int
    prompt_tokens: int
    completion_tokens: int
    failed: int

    @classmethod
    def of(cls, requests: Sequence[LoggedRequest]) -> Tally:
        return cls(
            chat_calls=sum(1 for r in requests if r.is_chat),
            embedding_calls=sum(1 for r in requests if r.is_embeddings),
            prompt_tokens=sum(r.prompt_tokens for r in requests),
            completion_tokens=sum(r.completion_tokens for r in requests),
            failed=sum(1 for r in requests if r.status != 200),
        )

    @property
    def calls(self) -> int:
        return self.chat_calls + self.embedding_calls

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def load_records(count: int, top_k: int | None = None) -> list[RagRecord]:
    """The first ``count`` records; with ``top_k``, each padded to k chunks with other records' chunks
    (the distractors a top-k retriever returns), its own chunks first."""
    rows: list[tuple[str, list[str], str]] = []
    with DATA.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if len(rows) >= count:
                break
            row = json.loads(line)
            chunks = [c.strip() for c in _PARAGRAPH_JOIN.split(row["knowledge"]) if c.strip()]
            answer = row["right_answer"] if number % 2 == 0 else row["hallucinated_answer"]
            rows.append((row["question"], chunks, answer))
    pool = [chunk for _, chunks, _ in rows for chunk in chunks]
    records: list[RagRecord] = []
    for number, (query, chunks, answer) in enumerate(rows):
        if top_k is not None:
            others = [c for c in pool[number * 2 :] + pool[: number * 2] if c not in chunks]
            chunks = (chunks + others)[:top_k]
        records.append(RagRecord.of(query=query, chunks=chunks, answer=answer))
    return records


async def score_with_ragtrace(
    server: StubOpenAIServer,
    records: Sequence[RagRecord],
    *,
    verify: Literal["auto", "per_claim", "batched"] = "auto",
    rate_chunks_in_verify: bool | None = None,
) -> tuple[Tally, int, int]:
    """Score every record with the production suite; (usage, scores measured, scores expected)."""
    before = len(server.requests)
    judge = OpenAIJudge(base_url=server.base_url, verify=verify, rate_chunks_in_verify=rate_chunks_in_verify)
    suite = build_suite()
    measured = expected = 0
    try:
        for record in records:
            result = await suite.score(record, judge)
            measured += sum(1 for s in result.scores.values() if s.ok)
            expected += len(result.scores)
    finally:
        await judge.aclose()
    return Tally.of(server.requests[before:]), measured, expected


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def ensure_ragas() -> tuple[Path | None, str]:
    """The ragas venv's python, creating the venv on first use; (None, why) when it cannot be had."""
    python = RAGAS_VENV / "bin" / "python"
    probe = [str(python), "-c", "import ragas, langchain_openai, langchain_community; print(ragas.__version__)"]
    if python.exists():
        done = subprocess.run(probe, capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            return python, done.stdout.strip()
    print(f"creating {RAGAS_VENV} and installing {', '.join(RAGAS_REQUIREMENTS)} ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(RAGAS_VENV)],
        [str(python), "-m", "pip", "install", "--quiet", *RAGAS_REQUIREMENTS],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            return None, f"{' '.join(step[:4])} failed: {_last_line(done.stderr or done.stdout)}"
    done = subprocess.run(probe, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return None, f"ragas does not import: {_last_line(done.stderr)}"
    return python, done.stdout.strip()


def score_with_ragas(
    server: StubOpenAIServer, records: Sequence[RagRecord], python: Path, *, bypass_n: bool
) -> tuple[Tally, dict[str, dict[str, int]]]:
    """Score every record with ragas in its venv; (usage, per metric how many records were scored).

    ``bypass_n``: ragas asks for its 3 answer-relevancy questions as n=3 completions of one call;
    with langchain-openai 1.x that yields one question. Bypassing n makes ragas send 3 calls instead,
    its designed cost on an endpoint without ``n``.
    """
    before = len(server.requests)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "records.jsonl"
        data.write_text(
            "\n".join(json.dumps({"query": r.query, "chunks": r.texts, "answer": r.answer}) for r in records),
            encoding="utf-8",
        )
        runner = Path(tmp) / "ragas_runner.py"
        runner.write_text(RAGAS_RUNNER, encoding="utf-8")
        done = subprocess.run(
            [str(python), str(runner), server.base_url, str(data), "bypass_n" if bypass_n else "n"],
            capture_output=True,
            text=True,
            timeout=1800,
        )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RAGAS_RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the ragas run failed:\n{done.stderr[-2000:]}")
    return Tally.of(server.requests[before:]), json.loads(lines[-1].removeprefix("RAGAS_RESULT "))


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}x" if theirs else "n/a"


def report(records: int, ours: Tally, theirs: Tally | None) -> None:
    rows: list[tuple[str, Callable[[Tally], int]]] = [
        ("chat calls", lambda t: t.chat_calls),
        ("embedding calls", lambda t: t.embedding_calls),
        ("judge calls (all)", lambda t: t.calls),
        ("prompt tokens", lambda t: t.prompt_tokens),
        ("completion tokens", lambda t: t.completion_tokens),
        ("tokens (all)", lambda t: t.tokens),
    ]
    print(f"\nper record, mean over {records} records")
    print(f"{'':<20}{'ragtrace':>12}{'ragas 0.4':>12}{'ragtrace/ragas':>16}")
    for label, read in rows:
        mine = read(ours) / records
        if theirs is None:
            print(f"{label:<20}{mine:>12.1f}{'-':>12}{'-':>16}")
        else:
            other = read(theirs) / records
            print(f"{label:<20}{mine:>12.1f}{other:>12.1f}{_ratio(mine, other):>16}")
    if theirs is not None:
        calls_ok = ours.calls <= 0.5 * theirs.calls
        tokens_ok = ours.tokens <= 0.5 * theirs.tokens
        verdict = {True: "met", False: "NOT met"}
        print(f"\ngoal ragtrace <= 0.5x ragas: calls {verdict[calls_ok]}, tokens {verdict[tokens_ok]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=20)
    parser.add_argument("--top-k", type=int, default=None, help="pad every record to k chunks with distractors")
    parser.add_argument("--skip-ragas", action="store_true", help="measure ragtrace alone")
    parser.add_argument(
        "--verify",
        choices=("auto", "per_claim", "batched"),
        default="auto",
        help="ragtrace's verification (auto: per claim on this local stub; batched is the default on api.openai.com)",
    )
    rating = parser.add_mutually_exclusive_group()
    rating.add_argument(
        "--rate-chunks-apart",
        action="store_true",
        help="ragtrace's context_relevance in a rate_chunks call of its own (rate_chunks_in_verify=False)",
    )
    rating.add_argument(
        "--rate-chunks-in-verify",
        action="store_true",
        help="the chunks rated in the verification call whatever the verification (rate_chunks_in_verify=True)",
    )
    parser.add_argument(
        "--ragas-bypass-n",
        action="store_true",
        help="make ragas send its 3 answer-relevancy questions as 3 calls (its cost where n is unsupported)",
    )
    args = parser.parse_args(argv)
    records = load_records(args.records, args.top_k)
    print(f"{len(records)} records from {DATA.name}, {sum(len(r.chunks) for r in records)} chunks in all")
    ragas_python, ragas_note = (None, "skipped (--skip-ragas)") if args.skip_ragas else ensure_ragas()
    with StubOpenAIServer() as server:
        rated = False if args.rate_chunks_apart else (True if args.rate_chunks_in_verify else None)
        ours, measured, expected = asyncio.run(
            score_with_ragtrace(server, records, verify=args.verify, rate_chunks_in_verify=rated)
        )
        print(f"ragtrace production suite: {measured}/{expected} scores measured, {ours.failed} failed requests")
        theirs: Tally | None = None
        if ragas_python is None:
            print(f"ragas: NOT measured: {ragas_note}")
        else:
            try:
                theirs, scored = score_with_ragas(server, records, ragas_python, bypass_n=args.ragas_bypass_n)
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"ragas {ragas_note}: NOT measured: {error}")
            else:
                summary = ", ".join(f"{name} {v['scored']}/{v['of']}" for name, v in scored.items())
                print(f"ragas {ragas_note}: scored {summary}; {theirs.failed} failed requests")
    report(len(records), ours, theirs)
    print(
        "\nnote: tokens are counted by the stub (words and punctuation marks) for both clients alike; completion"
        "\ntokens are the stub's replies, not a real model's, so calls and prompt tokens are the figures to trust."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
