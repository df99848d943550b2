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


def test_this_tree_against_its_own_head_gives_the_same_scores(capsys: pytest.CaptureFixture[str]) -> None:
    # Test runs start from a clean checkout, where the tree is HEAD: the scores must agree to the last digit.
    code = bench.main(
        ["--set", "qa", "--records", "2", "--rounds", "1", "--without-model", "--baseline-commit", "HEAD"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "scores: the same in every run" in out
    assert re.search(r"this tree +\d+\.\d ms a record", out)
    assert re.search(r"ratio this tree / baseline: \d+\.\d{3}", out)
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=bench.ROOT, capture_output=True, text=True, check=True)
    assert len(worktrees.stdout.strip().splitlines()) == 1  # the baseline's worktree is gone


def test_a_child_reports_its_cost_and_the_digest_of_its_scores() -> None:
    args = argparse.Namespace(set="qa", records=2, without_model=True)
    first, again = bench.child(bench.ROOT, args), bench.child(bench.ROOT, args)
    assert first["records"] == 2
    assert float(str(first["ms"])) > 0
    assert first["digest"] == again["digest"]
