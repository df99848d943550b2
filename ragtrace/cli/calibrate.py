"""The ``ragtrace calibrate`` subcommand: fit the OpenAI-compatible judge's ``support_threshold`` to records
the user labelled, and say what it changes.

``ragtrace calibrate FILE.jsonl [--label FIELD] [--field NAME=KEY ...] [--base-url URL] [--model M]
[--api-key K]`` reads RAG records as ``ragtrace eval`` does (or, with ``--from URL`` instead of a file, the labels
people gave on a ragtrace collector's pages: its ``/api/reviews.jsonl``, read with the collector's admin token from
``--token-file``; a file keeps the token out of the command line and ``ps``), each with a boolean label (``--label``,
default ``grounded``: true when the answer is supported by its chunks, false when it is not). For each
record the judge splits the answer into claims and asks one yes/no question per claim
(``OpenAIJudge.support``); the record's score is its least supported claim's P(yes). It prints the cut
with the best balanced accuracy, that accuracy held out (each half of the records cut at the other
half's best) beside the default cut's, the AUROC, and the setting to use
(``RAGTRACE_JUDGE_SUPPORT_THRESHOLD``): with it the judge's verdicts, the metrics' labels and the alert
levels at 0.5 (which sit at the judge's cut) follow the fitted cut.

Small local models are not calibrated at 0.5 (docs/judges.md): fitted by this command on 200 HaluEval QA
calibration records, a 0.5B model's cut (0.62) lifted its balanced accuracy on the 400 test records from
0.665 to 0.725 (``bench/calibrate_cut.py``). The held-out figure it prints, on halves of the records, is
rough with few of them.

Exit status: 0 when it printed a fit (the records the judge failed on, if any, counted on stderr); 1 when
the judge's failures left too few records to fit; 2 on a usage, data or configuration error (a file line
that is not a record, a label that is not true or false, fewer than 2 records of either kind with claims,
a judge that verifies batched: the cut is for per-claim verification, a collector that cannot be read or
refuses the token).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtrace._exceptions import ConfigurationError
from ragtrace.cli.calibration import DEFAULT_CUT, balanced_accuracy, fit
from ragtrace.cli.eval import _fields

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges.openai import OpenAIJudge

__all__ = ["Scored", "add_calibrate", "fetch_labels", "score_labelled"]

MAX_LABELS_BYTES = 512 * 1024 * 1024
"""The most a collector's labels export may weigh (``--from``): a wrong URL costs no more memory or disk."""


def add_calibrate(commands: Any) -> None:
    """Add ``calibrate`` to the ``ragtrace`` subparsers."""
    parser = commands.add_parser(
        "calibrate",
        help="fit the LLM judge's support_threshold to labelled records",
        description=__doc__.split("\n\n")[1],
    )
    parser.add_argument("file", nargs="?", help="JSONL records, each with its label (or --from)")
    parser.add_argument(
        "--from",
        dest="source",
        metavar="URL",
        help="read the labels people gave on a collector's pages: its /api/reviews.jsonl",
    )
    parser.add_argument("--token-file", help="a file holding the collector's admin token (with --from)")
    parser.add_argument("--label", default="grounded", help="the boolean field: true when the answer is grounded")
    parser.add_argument("--field", action="append", type=_fields, metavar="NAME=KEY", help="read field NAME from KEY")
    parser.add_argument("--base-url", help="the OpenAI-compatible endpoint (else RAGTRACE_JUDGE_BASE_URL)")
    parser.add_argument("--model", help="the judge model (else RAGTRACE_JUDGE_MODEL)")
    parser.add_argument("--api-key", help="else RAGTRACE_JUDGE_API_KEY, then OPENAI_API_KEY")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Read, score, fit and print; see the module docstring for the exit statuses."""
    if (args.file is None) == (args.source is None):
        raise ValueError("give a labelled JSONL file, or --from a collector's /api/reviews.jsonl (one of them)")
    if args.token_file and args.source is None:
        raise ValueError("--token-file is the collector's token: use it with --from URL")
    if args.source is not None:
        token = _read_token(args.token_file) if args.token_file else None
        with tempfile.TemporaryDirectory(prefix="ragtrace-calibrate-") as folder:
            args.file = fetch_labels(args.source, token, f"{folder}/labels.jsonl")
            records, labels = read_labelled(args.file, args.label, dict(args.field or []))
            args.file = args.source  # what the messages name
    else:
        records, labels = read_labelled(args.file, args.label, dict(args.field or []))
    if min(sum(labels), len(labels) - sum(labels)) < 2:  # before any judge call: no failure can explain it
        raise ValueError(
            f"{args.file}: {sum(labels)} grounded and {len(labels) - sum(labels)} not grounded records; "
            "calibration needs at least 2 of each"
        )
    from ragtrace.judges.openai import OpenAIJudge

    judge = OpenAIJudge(model=args.model, base_url=args.base_url, api_key=args.api_key)
    if judge.verify_mode != "per_claim":
        # Batched verification (the default on api.openai.com) reads verdicts, not P(yes): no cut to set.
        asyncio.run(judge.aclose())
        raise ConfigurationError(
            f"{judge.name} verifies claims batched, which support_threshold does not change; calibrate a judge "
            "that asks per claim (a self-hosted endpoint, or OpenAIJudge(verify='per_claim'))"
        )
    current = judge.support_threshold
    scored = asyncio.run(score_labelled(judge, records, labels))
    failures = scored.failures
    if failures:
        print(f"ragtrace calibrate: the judge failed on {len(failures)} records, e.g. {failures[0]}", file=sys.stderr)
    try:
        found = fit(scored.scores, scored.labels)
    except ValueError as err:
        if not failures:
            raise  # the file holds too few of a kind: a data error
        print(f"ragtrace calibrate: {err}", file=sys.stderr)
        return 1
    used, grounded = len(scored.labels), sum(scored.labels)
    print(f"ragtrace calibrate: {judge.name}, {used} records ({grounded} grounded, {used - grounded} not)")
    if used < len(records):
        print(f"  not used: {scored.unscored} without claims or chunks, {len(failures)} the judge failed on")
    print(f"  AUROC of the least supported claim's P(yes): {found.auroc:.3f}")
    print(f"  balanced accuracy at the default cut {DEFAULT_CUT:.2f}: {found.at_default:.3f}")
    if current != DEFAULT_CUT:
        now = balanced_accuracy(scored.scores, scored.labels, current)
        print(f"  balanced accuracy at the cut set now {current:.2f}: {now:.3f}")
    print(f"  balanced accuracy at the fitted cut {found.cut:.2f}: {found.at_cut:.3f} (held out: {found.held_out:.3f})")
    print(f"set RAGTRACE_JUDGE_SUPPORT_THRESHOLD={found.cut:.2f} (or OpenAIJudge(support_threshold={found.cut:.2f}))")
    return 0


def _read_token(path: str) -> str:
    token = Path(path).read_text(encoding="utf-8").strip()
    if not token:
        raise ValueError(f"{path}: the token file is empty")
    return token


def fetch_labels(url: str, token: str | None, out_path: str, *, timeout: float = 60.0) -> str:
    """Download a collector's labels (``url``: its ``/api/reviews.jsonl``, JSON lines with ``query``, ``chunks``,
    ``answer`` and ``grounded``) to ``out_path`` with ``token`` as the bearer, at most ``MAX_LABELS_BYTES``;
    ``ValueError`` saying what to fix when the collector cannot be read, refuses the token or sends no JSONL."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--from {url!r}: give the collector's URL, e.g. http://127.0.0.1:4318/api/reviews.jsonl")
    request = urllib.request.Request(url, headers={"Accept": "application/x-ndjson, application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply, open(out_path, "wb") as out:
            kind = reply.headers.get("Content-Type", "")
            if "html" in kind:  # a page (the sign-in form), not the export
                raise ValueError(f"{url}: the collector answered a page, not labels; is this its /api/reviews.jsonl?")
            size = 0
            while chunk := reply.read(1 << 20):
                size += len(chunk)
                if size > MAX_LABELS_BYTES:
                    raise ValueError(f"{url}: more than {MAX_LABELS_BYTES >> 20} MB of labels; narrow it with ?since=")
                out.write(chunk)
    except urllib.error.HTTPError as err:
        if err.code == 401:
            hint = "give its admin token with --token-file" if not token else "the token in --token-file is refused"
            raise ValueError(f"{url}: the collector needs its admin token (401): {hint}") from None
        raise ValueError(f"{url}: the collector answered HTTP {err.code}") from None
    except urllib.error.URLError as err:
        raise ValueError(f"{url}: cannot reach the collector ({err.reason})") from None
    return out_path


def read_labelled(path: str, label: str, fields: dict[str, str]) -> tuple[list[RagRecord], list[bool]]:
    """The records of ``path`` and their labels, in file order. Every line must be a record with a boolean
    ``label`` (``ValueError`` naming the line otherwise): a label cannot be guessed."""
    from ragtrace._eval_input import read_jsonl

    loaded = read_jsonl(path, fields, strict=True)
    lines = loaded.path.read_bytes().split(b"\n")  # as read_jsonl counts lines: a lone "\r" ends none
    labels: list[bool] = []
    for number in loaded.lines:
        value = json.loads(lines[number - 1]).get(label)
        if not isinstance(value, bool):
            raise ValueError(f"{loaded.path}:{number}: {label!r} must be true or false, got {json.dumps(value)}")
        labels.append(value)
    return list(loaded.records), labels


@dataclass(frozen=True, slots=True)
class Scored:
    """The records a fit can use, each by its least supported claim's P(yes) with its label; how many had no
    claims or chunks; and the messages of the judge's failures."""

    scores: list[float]
    labels: list[bool]
    unscored: int
    failures: list[str]


async def score_labelled(judge: OpenAIJudge, records: Sequence[RagRecord], labels: Sequence[bool]) -> Scored:
    """Ask ``judge`` about every claim of every record (the judge bounds the calls in flight,
    ``max_concurrency``) and close it. A record without claims or chunks, or that the judge failed on, is left
    out of the fit."""
    from ragtrace.judges import JudgeError
    from ragtrace.metrics._steps import clean_claims

    failures: list[str] = []

    async def one(record: RagRecord) -> float | None:
        try:
            claims = clean_claims((await judge.extract_claims(record.answer, question=record.query)).value)
            if not claims or not record.chunks:
                return None
            rows = (await judge.support(claims, record.texts)).value
        except JudgeError as error:
            failures.append(f"{error.error_type}: {error}")
            return None
        return min(max(row) for row in rows)

    try:
        scores = await asyncio.gather(*(one(r) for r in records))
    finally:
        await judge.aclose()
    kept = [(score, label) for score, label in zip(scores, labels, strict=True) if score is not None]
    return Scored(
        scores=[score for score, _ in kept],
        labels=[label for _, label in kept],
        unscored=len(records) - len(kept) - len(failures),
        failures=failures,
    )
