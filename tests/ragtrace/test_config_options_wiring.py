"""``configure()``, ``instrument()`` and ``ScoringSpanProcessor`` given the option objects behave as given the
flat keywords, and the join settings reach the processor from ``configure()`` and ``instrument()``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import CaptureOptions, JoinOptions, Rule, Sampler, ScoringOptions, _capture, semconv
from ragtrace._capture import RecordStore
from ragtrace.scoring.processor import ScoringSpanProcessor
from tests.ragtrace.foreign_rig import NoJudge, Seen
from tests.ragtrace.test_foreign_joiner import chain, retrieve
from tests.ragtrace.test_processor import Collect, NullJudge, Scripted


@pytest.fixture(autouse=True)
def _restore_capture_state() -> Iterator[None]:
    yield
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)


# -- the objects behave as the keywords ------------------------------------------------------------------


def test_the_processor_given_the_objects_is_the_processor_given_the_keywords() -> None:
    judge, metric = NullJudge(), Scripted()
    sampler = Sampler(1.0)
    by_keywords = ScoringSpanProcessor(
        Collect(),
        records=RecordStore(),
        judge=judge, metrics=[metric], sampler=sampler, queue_size=7, max_concurrency=2, hold_timeout=3,
        shutdown_timeout=4, recognize=True, join_max_traces=9, join_max_bytes=99, join_max_seconds=5,
    )  # fmt: skip
    by_objects = ScoringSpanProcessor(
        Collect(),
        scoring=ScoringOptions(
            judge=judge,
            metrics=[metric],
            sampler=sampler,
            queue_size=7,
            max_concurrency=2,
            hold_timeout=3,
            shutdown_timeout=4,
        ),
        join=JoinOptions(recognize=True, max_traces=9, max_bytes=99, max_seconds=5),
        records=RecordStore(),
    )
    try:
        for p in (by_keywords, by_objects):
            assert (p.judge, p.sampler, p.metric_names) == (judge, sampler, (metric.name,))
            assert (p.queue_size, p.max_concurrency, p.hold_timeout, p.shutdown_timeout) == (7, 2, 3.0, 4.0)
        assert by_keywords._joiner is not None and by_objects._joiner is not None
        assert by_keywords._joiner.settings == by_objects._joiner.settings
        assert by_objects._joiner.settings.max_traces == 9
    finally:
        by_keywords.shutdown()
        by_objects.shutdown()


def test_configure_given_the_objects_scores_and_captures_as_given_the_keywords() -> None:
    from tests.ragtrace.test_processor_judges import answer, fake_judge, rag_spans

    results = []
    for kwargs in (
        {"judge": fake_judge(), "metrics": ["faithfulness"], "sample_rate": 1.0, "max_record_chunks": 1},
        {
            "scoring": ScoringOptions(judge=fake_judge(), metrics=["faithfulness"], sampler=Sampler(1.0)),
            "capture": CaptureOptions(max_record_chunks=1),
        },
    ):
        exporter = InMemorySpanExporter()
        handle = ragtrace.configure(exporter=exporter, batch=False, export_metrics=False, set_global=False, **kwargs)
        assert _capture.get_settings().max_record_chunks == 1
        answer("What is the capital of Brazil?")
        handle.shutdown()
        (span,) = rag_spans(exporter)
        score = (span.attributes or {})[semconv.eval_score("faithfulness")]
        # What each span carries (one chunk of the two kept): the same attributes both ways.
        carried = sorted((s.name, sorted(s.attributes or {})) for s in exporter.get_finished_spans())
        results.append((score, carried))
    assert results[0] == results[1] and results[0][0] == 1.0


def test_configure_hands_its_resolved_judge_to_the_processor_and_builds_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragtrace.judges import _default

    built: list[object] = []
    real = _default.as_judge

    def counting(value: Any) -> Any:
        judge = real(value)
        if judge is not value:
            built.append(judge)
        return judge

    monkeypatch.setattr(_default, "as_judge", counting)
    handle = ragtrace.configure(
        judge="offline", exporter=InMemorySpanExporter(), export_metrics=False, set_global=False
    )
    try:
        assert built == [handle.processor.judge]
    finally:
        handle.shutdown()


# -- the join settings reach the processor from configure() and instrument() -------------------------------


def _scored_roots(tracer_provider: TracerProvider, exporter: InMemorySpanExporter, processor: Any) -> list[str]:
    # A span a rag_roots rule names, with a retrieval under it: a root only by the rule.
    tracer = tracer_provider.get_tracer("t")
    with tracer.start_as_current_span("answer_1"):
        retrieve(tracer, "doc")
    assert processor.force_flush(20_000)
    return [s.name for s in exporter.get_finished_spans() if semconv.EVAL_DECISION in (s.attributes or {})]


@pytest.mark.parametrize(
    "join",
    [
        {"join": JoinOptions(rag_roots=[Rule.name_matches("answer_*")], max_traces=5)},
        {"rag_roots": [Rule.name_matches("answer_*")], "join_max_traces": 5},
    ],
)
def test_configure_passes_the_join_settings_to_the_processor(join: dict[str, Any]) -> None:
    exporter = InMemorySpanExporter()
    common: dict[str, Any] = {"judge": NoJudge(), "metrics": [Seen()], "sample_rate": 1.0}
    handle = ragtrace.configure(
        exporter=exporter, batch=False, export_metrics=False, set_global=False, **common, **join
    )
    try:
        assert handle.processor._joiner is not None and handle.processor._joiner.settings.max_traces == 5
        assert _scored_roots(handle.tracer_provider, exporter, handle.processor) == ["answer_1"]
    finally:
        handle.shutdown()
    plain = InMemorySpanExporter()
    handle = ragtrace.configure(exporter=plain, batch=False, export_metrics=False, set_global=False, **common)
    try:
        assert _scored_roots(handle.tracer_provider, plain, handle.processor) == []  # only by the rule
    finally:
        handle.shutdown()


@pytest.mark.parametrize("join", [{"join": JoinOptions(recognize=False)}, {"recognize": False}])
def test_instrument_passes_the_join_settings_to_the_processor(join: dict[str, Any]) -> None:
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    handle = ragtrace.instrument(provider, exporter, judge=NoJudge(), metrics=[Seen()], sample_rate=1.0, **join)
    try:
        assert handle.processor.join_stats is None  # recognition off: no joiner
        tracer = provider.get_tracer("t")
        with trace.use_span(chain(tracer, "top"), end_on_exit=True):
            retrieve(tracer, "doc")
        assert handle.processor.force_flush(20_000)
        assert [s for s in exporter.get_finished_spans() if semconv.EVAL_DECISION in (s.attributes or {})] == []
    finally:
        handle.shutdown()
        provider.shutdown()
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    roots = JoinOptions(rag_roots=[Rule.name_matches("answer_*")])
    handle = ragtrace.instrument(provider, exporter, judge=NoJudge(), metrics=[Seen()], sample_rate=1.0, join=roots)
    try:
        assert _scored_roots(provider, exporter, handle.processor) == ["answer_1"]
    finally:
        handle.shutdown()
        provider.shutdown()


def test_capture_takes_scoring_options_and_fills_them_from_its_arguments() -> None:
    from ragtrace import ConfigurationError
    from ragtrace.testing import FakeJudge, capture

    judge = FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])
    with capture(scoring=ScoringOptions(judge=judge, metrics=["faithfulness"])) as captured:

        @ragtrace.rag
        def ask(question: str) -> str:
            ragtrace.record(chunks=["Paris is in France."])
            return "Paris is in France."

        ask("Where is Paris?")
        assert captured.scores() == [{"faithfulness": 1.0}]
    with (
        pytest.raises(ConfigurationError, match="judge given both"),
        capture(judge, scoring=ScoringOptions(judge=judge)),
    ):
        pass
