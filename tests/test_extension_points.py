"""The extension points docs/contributing.md describes, each done once on public names only: a toy metric, a
toy judge and a toy alert sink.

A metric subclasses ``ragtrace.metrics.JudgeMetric`` (a name, a direction and ``_measure``); passed to
``configure(metrics=[...])`` its score goes on the RAG span through the public wire codec
(``ragtrace.wire``), which the collector reads back with. A judge subclasses ``ragtrace.judges.BaseJudge`` and
writes only the steps it answers. An alert sink is a factory registered by type with
``ragtrace_collector.register_sink``; a rules file then names that type like a built-in one. Nothing here
imports a private module: if one of these needs one, the extension point is not public.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ragtrace_collector import Alert, Sink, SinkConfig, Watcher, register_sink, sink_types, unregister_sink

import ragtrace
from ragtrace import RagRecord, semconv, wire
from ragtrace.metrics import JudgeMetric, Score, Steps
from ragtrace.testing import FakeJudge, capture

# -- a toy metric --------------------------------------------------------------------------------------


class AnswerBrevity(JudgeMetric):
    """1.0 for an answer of at most ``limit`` words, less the longer it gets; asks the judge nothing."""

    name = "answer_brevity"
    limit = 5

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        words = len(record.answer.split())
        return self.measured(min(1.0, self.limit / words), steps, label="brief" if words <= self.limit else "long")


@ragtrace.rag
def answer(query: str) -> str:
    return "Brasilia has been the capital of Brazil since April 1960."  # ten words


def test_a_toy_metric_is_scored_exported_and_read_back_by_the_collector() -> None:
    with capture(FakeJudge(), metrics=[AnswerBrevity()]) as captured:
        answer("What is the capital of Brazil?")
        assert captured.scores() == [{"answer_brevity": 0.5}]
        (span,) = captured.rag_spans()
    attributes = dict(span.attributes or {})
    assert attributes[semconv.eval_score("answer_brevity")] == 0.5
    assert attributes[semconv.eval_label("answer_brevity")] == "long"
    events = [(e.name, dict(e.attributes or {})) for e in span.events]
    assert wire.decode(attributes, events)["answer_brevity"]["value"] == 0.5


# -- a toy alert sink ----------------------------------------------------------------------------------


class MemorySink:
    """Keeps every notification in a list (a real sink would page someone)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.alerts: list[Alert] = []

    def send(self, alert: Alert) -> None:
        self.alerts.append(alert)

    def close(self, timeout: float = 5.0) -> None:
        return None


@pytest.fixture
def memory_sink_type() -> Iterator[str]:
    def factory(config: SinkConfig) -> Sink:
        return MemorySink(config.name)

    register_sink("memory", factory)
    yield "memory"
    unregister_sink("memory")


RULES = """
[[sinks]]
type = "memory"
name = "inbox"

[[rules]]
name = "faithfulness-low"
kind = "threshold"
metric = "faithfulness"
window = "15m"
threshold = 0.7
"""


def test_a_toy_sink_registered_by_type_is_built_from_a_rules_file(memory_sink_type: str, tmp_path: Path) -> None:
    assert memory_sink_type in sink_types()
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    watcher = Watcher(tmp_path / "c.db", rules)
    try:
        (sink,) = watcher.sinks
        assert isinstance(sink, MemorySink) and isinstance(sink, Sink)
        alert = Alert(
            time_ns=1,
            rule="faithfulness-low",
            kind="threshold",
            metric="faithfulness",
            service="shop",
            route="/ask",
            state="ALERT",
            previous_state="OK",
            value=0.4,
            threshold=0.7,
            message="mean faithfulness 0.4 < 0.7",
        )
        sink.send(alert)
        assert sink.alerts == [alert]
    finally:
        watcher.stop()


def test_a_type_taken_twice_is_refused(memory_sink_type: str) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_sink(memory_sink_type, lambda config: MemorySink(config.name))
    with pytest.raises(ValueError, match="already registered"):
        register_sink("log", lambda config: MemorySink(config.name))
