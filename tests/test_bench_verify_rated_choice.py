"""bench/verify_rated_choice.py's ``relevance`` set, run against the stub server over real HTTP: each case's
two chunks rated both ways, the own passage placed first and second in turn, and the table reads them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import verify_rated_choice as bench

from ragtrace.testing import StubOpenAIServer


def test_the_relevance_set_rates_both_chunks_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ratings.jsonl"
    with StubOpenAIServer() as stub:
        assert bench.main(["--base-url", stub.base_url, "--set", "relevance", "--rows", "4", "--out", str(out)]) == 0
        steps = [r.step for r in stub.chat_requests]
    assert steps.count("rate_chunks") == 4 and steps.count("verify_claim_rated") == 4
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["variant"] for r in records] == ["plain", "rated"] * 4
    assert {r["own"] for r in records} == {0, 1}
    assert all(not r["failed"] and len(r["ratings"]) == 2 for r in records)
    # The stub rates by word overlap with the question, which its own passage shares most.
    assert all(r["ratings"][r["own"]] > r["ratings"][1 - r["own"]] for r in records)
    table = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith(("plain ", "rated "))}
    # Cases and ratings read, AUROC, its interval, mean and distinct ratings: the stub rates alike both ways.
    assert rows["plain"][1:3] == ["4", "4"] and float(rows["plain"][3]) > 0.5
    assert rows["rated"][1:8] == rows["plain"][1:8]
