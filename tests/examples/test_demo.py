"""examples/demo.py: how it reads the collector's store (the run itself is `make demo`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from examples.demo import _first_degraded_ns, _scores_by_phase, main
from ragtrace import semconv


def store(tmp_path: Path, rows: list[tuple[str, int, dict[str, object] | None, dict[str, float]]]) -> Path:
    """A store with the collector's column names: (span_id, end_ns, bot metadata, scores) per RAG span."""
    db = tmp_path / "store.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE spans (span_id TEXT PRIMARY KEY, end_ns INTEGER, attributes TEXT)")
    conn.execute("CREATE TABLE scores (span_id TEXT, metric TEXT, value REAL, PRIMARY KEY (span_id, metric))")
    for span_id, end_ns, metadata, scores in rows:
        attributes = {semconv.METADATA: json.dumps(metadata)} if metadata is not None else {}
        conn.execute("INSERT INTO spans VALUES (?, ?, ?)", (span_id, end_ns, json.dumps(attributes)))
        for metric, value in scores.items():
            conn.execute("INSERT INTO scores VALUES (?, ?, ?)", (span_id, metric, value))
    conn.execute("INSERT INTO scores VALUES ('x', 'faithfulness', NULL)")  # an absent score is not averaged
    conn.commit()
    conn.close()
    return db


def test_scores_are_split_by_the_question_index_the_bot_recorded(tmp_path: Path) -> None:
    db = store(
        tmp_path,
        [
            ("a", 10, {"question_index": 0, "degraded": False}, {"faithfulness": 1.0, "hallucination": 0.0}),
            ("b", 20, {"question_index": 1, "degraded": False}, {"faithfulness": 0.5}),
            ("c", 30, {"question_index": 2, "degraded": True}, {"faithfulness": 0.0, "hallucination": 1.0}),
            ("d", 40, {"question_index": 3, "degraded": False}, {"faithfulness": 1.0}),
            ("r", 15, None, {}),  # a retriever span: no metadata, no scores
        ],
    )
    assert _scores_by_phase(db, degrade_after=2) == {
        "faithfulness": (0.75, 2, 0.5, 2),
        "hallucination": (0.0, 1, 1.0, 1),
    }
    assert _first_degraded_ns(db) == 30


def test_a_missing_store_reads_as_empty(tmp_path: Path) -> None:
    assert _scores_by_phase(tmp_path / "none.db", degrade_after=1) == {}
    assert _first_degraded_ns(tmp_path / "none.db") is None


@pytest.mark.parametrize("argv", [["--pace", "0"], ["--questions", "0"], ["--sample-rate", "1.5"]])
def test_wrong_options_are_refused_before_anything_starts(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
