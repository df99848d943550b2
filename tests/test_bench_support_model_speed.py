"""bench/support_model_speed.py: a file against itself reads the same logits; git gives the baseline file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import support_model_speed as bench

from ragtrace.judges.offline.support import SupportModel


def test_the_shipped_file_against_itself_differs_in_nothing() -> None:
    # In a process of its own: the benchmark pins itself, and every thread it starts, to one core.
    command = [sys.executable, bench.__file__, "--baseline", str(bench.ASSET)]
    done = subprocess.run([*command, "--rows", "2", "--rounds", "1"], capture_output=True, text=True, check=True)
    assert re.search(r"logits: max \|difference\| 0\.000, mean 0\.0000; decisions at 0 changed 0\.00%", done.stdout)
    assert re.search(r"ratio shipped / baseline: \d+\.\d{3}", done.stdout)
    assert re.search(r"shipped +\d+\.\d\d ms a pair", done.stdout)


def test_the_baseline_is_a_model_the_judge_runs_taken_from_git(tmp_path: Path) -> None:
    path = bench.baseline_file("HEAD", str(tmp_path))
    logits = SupportModel(str(path)).pair_logits([("Paris is in France.", "Paris is the capital of France.")])
    assert logits.shape == (1,) and np.isfinite(logits[0])
    with pytest.raises(subprocess.CalledProcessError):
        bench.baseline_file("no-such-commit", str(tmp_path))


def test_pairs_are_claims_of_both_answers_against_a_window_of_their_knowledge() -> None:
    pairs = bench.pairs_of(3)
    assert len(pairs) >= 6
    assert all(claim and window for claim, window in pairs)
