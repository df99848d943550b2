"""bench/offline_judge_speed.py: this tree against a commit, in child processes, scores compared."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import offline_judge_speed as bench


def _worktrees() -> list[str]:
    listed = subprocess.run(["git", "worktree", "list"], cwd=bench.ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.strip().splitlines()


def test_this_tree_against_a_commit_reports_both_and_removes_the_worktree(capsys: pytest.CaptureFixture[str]) -> None:
    before = _worktrees()
    argv = ["--set", "qa", "--records", "2", "--rounds", "1", "--without-model", "--baseline-commit", "HEAD"]
    code = bench.main(argv)
    out = capsys.readouterr().out
    assert re.search(r"this tree +\d+\.\d ms a record", out)
    assert re.search(r"baseline +\d+\.\d ms a record", out)
    assert re.search(r"ratio this tree / baseline: \d+\.\d{3}", out)
    # The verdict on the scores and the exit code agree (whether this tree's change moves a score or not).
    same = "scores: the same in every run" in out
    assert same or "scores: DIFFERENT (2 digests)" in out
    assert code == (0 if same else 1)
    assert _worktrees() == before  # the baseline's worktree is gone


def test_a_failing_child_says_why() -> None:
    args = argparse.Namespace(set="no_such_set", records=1, without_model=True, step="faithfulness")
    with pytest.raises(RuntimeError, match="no_such_set"):
        bench.child(bench.ROOT, args)


def test_a_child_reports_its_cost_and_the_digest_of_its_scores() -> None:
    args = argparse.Namespace(set="qa", records=2, without_model=True, step="faithfulness")
    first, again = bench.child(bench.ROOT, args), bench.child(bench.ROOT, args)
    assert first["records"] == 2
    assert float(str(first["ms"])) > 0
    assert first["digest"] == again["digest"]


def test_a_child_times_rate_chunks_on_request() -> None:
    args = argparse.Namespace(set="qa", records=2, without_model=False, step="rate_chunks")
    ratings, again = bench.child(bench.ROOT, args), bench.child(bench.ROOT, args)
    faithfulness = bench.child(
        bench.ROOT, argparse.Namespace(set="qa", records=2, without_model=False, step="faithfulness")
    )
    assert ratings["records"] == 2
    assert ratings["digest"] == again["digest"]
    assert ratings["digest"] != faithfulness["digest"]  # another step was scored


def test_the_support_model_cannot_be_replaced_for_a_step_that_does_not_run_it() -> None:
    with pytest.raises(SystemExit):
        bench.main(["--step", "rate_chunks", "--without-model"])
