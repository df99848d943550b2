"""``ragtrace calibrate`` over real HTTP to the stub OpenAI server, playing a small model that ranks claims
right but says "no" to all of them (P(yes) from the logprobs, below 0.5 even for supported claims)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragtrace.cli import main
from ragtrace.judges import Verdict
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.testing import StubOpenAIServer

CHUNK = "The museum opened in 1901 in the old harbour district of Lisbon, beside the fish market."
QUESTION = "When did it open?"
GROUNDED = [
    "It opened in 1901 after years of planning.",
    "The museum opened in 1901, people say.",
    "Opened in 1901 near a harbour, we think.",
    "In 1901 the museum opened its doors to visitors.",
    "It was opened in the old harbour in 1901 by the city.",
    "The doors opened in 1901, in Lisbon itself.",
]
NOT_GROUNDED = [
    "It opened during 1950 following a storm.",
    "Visitors first came in 1875 by train.",
    "A fire closed it in 1999 before repairs.",
    "The king founded it in 1820 for sailors.",
    "Porto hosted it first, then it moved away.",
    "Nobody visited until 1960 or so.",
]


@pytest.fixture
def leaning_to_no() -> Iterator[StubOpenAIServer]:
    # The stub's P(yes) grows with the words a statement shares with the chunk (0.19-0.47 for these grounded
    # answers, at most 0.04 for the others); its written answer is always "no".
    with StubOpenAIServer() as server:
        server.responder = lambda step, body: "no" if step == "verify_claim" else None
        yield server


def _records(path: Path, rows: list[tuple[str, object]]) -> Path:
    lines = [json.dumps({"query": QUESTION, "chunks": [CHUNK], "answer": a, "grounded": g}) for a, g in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_fitted_cut_makes_the_verdicts_right(
    leaning_to_no: StubOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labelled = [(a, True) for a in GROUNDED] + [(a, False) for a in NOT_GROUNDED]
    file = _records(tmp_path / "labelled.jsonl", labelled)
    assert main(["calibrate", str(file), "--base-url", leaning_to_no.base_url, "--model", "small"]) == 0
    out = capsys.readouterr().out
    assert "12 records (6 grounded, 6 not)" in out
    assert "balanced accuracy at the default cut 0.50: 0.500" in out  # "no" to everything
    assert re.search(r"at the fitted cut 0\.\d\d: 1\.000 \(held out: (0\.9\d\d|1\.000)\)", out)
    found = re.search(r"RAGTRACE_JUDGE_SUPPORT_THRESHOLD=(0\.\d\d)", out)
    assert found is not None
    # The setting it prints, given to the judge: every claim of the grounded answers is now supported.
    judge = OpenAIJudge(model="small", base_url=leaning_to_no.base_url, support_threshold=float(found.group(1)))

    async def verdicts(answer: str) -> list[Verdict]:
        claims = (await judge.extract_claims(answer, question=QUESTION)).value
        return [row[0] for row in (await judge.verify(claims, [CHUNK])).value]

    async def all_verdicts() -> list[list[Verdict]]:
        try:
            return [await verdicts(a) for a, _ in labelled]
        finally:
            await judge.aclose()

    said = asyncio.run(all_verdicts())
    assert [all(v is Verdict.SUPPORTED for v in row) for row in said] == [g for _, g in labelled]


def test_a_label_that_is_not_true_or_false_is_named_with_its_line(
    leaning_to_no: StubOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _records(tmp_path / "labelled.jsonl", [(GROUNDED[0], True), (NOT_GROUNDED[0], "no")])
    assert main(["calibrate", str(file), "--base-url", leaning_to_no.base_url]) == 2
    assert "labelled.jsonl:2: 'grounded' must be true or false, got \"no\"" in capsys.readouterr().err
    assert leaning_to_no.chat_requests == []  # read before any judge call


def test_too_few_records_of_a_kind_is_an_error(
    leaning_to_no: StubOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _records(tmp_path / "labelled.jsonl", [(a, True) for a in GROUNDED] + [(NOT_GROUNDED[0], False)])
    assert main(["calibrate", str(file), "--base-url", leaning_to_no.base_url]) == 2
    assert "6 grounded and 1 not grounded records; calibration needs at least 2 of each" in capsys.readouterr().err
    assert leaning_to_no.chat_requests == []  # counted before any judge call


def test_a_judge_failing_on_the_records_exits_1_and_says_why(
    leaning_to_no: StubOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    leaning_to_no.responder = lambda step, body: "perhaps" if step == "verify_claim" else None  # unreadable
    labelled = [(a, True) for a in GROUNDED] + [(a, False) for a in NOT_GROUNDED]
    file = _records(tmp_path / "labelled.jsonl", labelled)
    assert main(["calibrate", str(file), "--base-url", leaning_to_no.base_url]) == 1
    err = capsys.readouterr().err
    assert "the judge failed on 12 records, e.g. unparseable_reply" in err
    assert "got 0 and 0" in err


def test_a_batched_judge_has_no_cut_to_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = _records(tmp_path / "labelled.jsonl", [(a, True) for a in GROUNDED] + [(a, False) for a in NOT_GROUNDED])
    # api.openai.com verifies batched by default: refused before any call.
    assert main(["calibrate", str(file), "--base-url", "https://api.openai.com/v1", "--api-key", "sk-test"]) == 2
    assert "verifies claims batched, which support_threshold does not change" in capsys.readouterr().err
