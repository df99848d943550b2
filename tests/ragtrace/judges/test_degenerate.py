"""Degenerate judging is visible: a judge whose results stop varying gets a warning and a metric."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragtrace import RagRecord, semconv
from ragtrace.judges._degenerate import MONITOR, DegenerateMonitor
from ragtrace.metrics import build_suite
from ragtrace.testing import FakeJudge


def _degenerate_points(reader: InMemoryMetricReader) -> list[tuple[dict[str, object], int]]:
    data = reader.get_metrics_data()
    points: list[tuple[dict[str, object], int]] = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == semconv.METRIC_JUDGE_DEGENERATE:
                    points += [(dict(p.attributes or {}), int(p.value)) for p in metric.data.data_points]  # type: ignore[union-attr]
    return points


def test_a_window_of_one_value_warns_once_per_interval_and_counts_every_window(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    clock = [0.0]
    monitor = DegenerateMonitor(window=5, interval=60.0, meter_provider=provider, clock=lambda: clock[0])
    try:
        with caplog.at_level(logging.WARNING, logger="ragtrace"):
            flagged = [monitor.observe("openai:tiny", "rate_chunks", 0.5) for _ in range(10)]
            clock[0] = 61.0
            flagged += [monitor.observe("openai:tiny", "rate_chunks", 0.5) for _ in range(5)]
        assert flagged == [False] * 4 + [True] + [False] * 4 + [True] + [False] * 4 + [True]
        warnings = [r for r in caplog.records if "do not vary" in r.getMessage()]
        assert len(warnings) == 2  # windows 1 and 3: the second came within the interval
        assert "openai:tiny" in warnings[0].getMessage() and "rate_chunks gave 0.500" in warnings[0].getMessage()
        points = _degenerate_points(reader)
        assert points == [({semconv.EVAL_JUDGE: "openai:tiny", semconv.JUDGE_STEP: "rate_chunks"}, 3)]
    finally:
        provider.shutdown()


def test_results_that_vary_raise_nothing(caplog: pytest.LogCaptureFixture) -> None:
    monitor = DegenerateMonitor(window=5)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        assert not any(monitor.observe("j", "verify", v) for v in [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.5])
    assert caplog.records == []
    assert not monitor.degenerate


def test_a_healthy_app_grounded_on_every_record_is_not_flagged(caplog: pytest.LogCaptureFixture) -> None:
    monitor = DegenerateMonitor(window=5)
    with caplog.at_level(logging.WARNING, logger="ragtrace"):
        assert not any(monitor.observe("offline", "verify", 1.0) for _ in range(20))
        assert not any(monitor.observe("offline", "rate_statements", 1.0) for _ in range(20))
        # The same constancy elsewhere is still a stuck judge: every chunk rated 1.0, every claim unsupported.
        assert any(monitor.observe("offline", "rate_chunks", 1.0) for _ in range(5))
        assert any(monitor.observe("offline", "verify", 0.0) for _ in range(5))
    assert sum("do not vary" in r.getMessage() for r in caplog.records) == 2


async def test_a_suite_on_a_stuck_judge_warns(caplog: pytest.LogCaptureFixture) -> None:
    # Every claim unsupported, every chunk rated 0.5: the measured failure of a 0.5B model.
    judge = FakeJudge(
        extract_claims=lambda text, question=None: [text],
        verify=lambda claims, chunks: [["neither"] * len(chunks) for _ in claims],
        rate_chunks=lambda query, chunks: [0.5] * len(chunks),
    )
    suite = build_suite("faithfulness,context_relevance")
    MONITOR.reset()
    try:
        with caplog.at_level(logging.WARNING, logger="ragtrace"):
            for i in range(MONITOR.window):
                await suite.score(RagRecord.of(f"question {i}?", [f"chunk {i}"], f"answer {i}."), judge)
        assert MONITOR.degenerate[(judge.name, "verify")] == 1
        assert MONITOR.degenerate[(judge.name, "rate_chunks")] == 1
        assert sum("do not vary" in r.getMessage() for r in caplog.records) == 2
    finally:
        MONITOR.reset()
