"""The judge-error log: one line per error type and interval, saying how many it left out."""

from __future__ import annotations

import logging

import pytest

from ragtrace.metrics._base import Score
from ragtrace.scoring.judge_errors import JudgeErrorLog


def failed(kind: str) -> Score:
    return Score.absent("faithfulness", "error", "judge_error", explanation=f"{kind}: it broke", error_type=kind)


def test_one_line_per_error_type_and_interval_with_the_count_left_out(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    log = JudgeErrorLog("openai:m", interval=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        log.report([failed("connection"), failed("connection"), failed("timeout"), Score("faithfulness", 1.0)])
        now[0] = 59.0
        log.report([failed("connection")])
        now[0] = 61.0
        log.report([failed("connection")])
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert "(connection): connection: it broke" in lines[0] and "more" not in lines[0]
    assert "(timeout)" in lines[1]
    assert "(2 more since the last message)" in lines[2]
