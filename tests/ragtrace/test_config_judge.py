"""configure(judge=...) and instrument(judge=...): a Judge, or a RAGTRACE_JUDGE value; anything else raises at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import _capture, semconv
from ragtrace.environment_variables import ConfigurationError
from ragtrace.judges.offline import OfflineJudge
from ragtrace.judges.openai import OpenAIJudge
from ragtrace.metrics import build_suite
from ragtrace.testing import StubOpenAIServer
from tests.ragtrace.test_processor_judges import answer, fake_judge, rag_spans

_KEYS = ("RAGTRACE_JUDGE", "RAGTRACE_JUDGE_BASE_URL", "RAGTRACE_JUDGE_API_KEY", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The judge a string names depends on these variables: start from none of them set.
    for name in _KEYS:
        monkeypatch.delenv(name, raising=False)
    yield
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)


def configure(judge: Any, **kwargs: Any) -> ragtrace.RagtraceHandle:
    return ragtrace.configure(
        judge=judge, exporter=InMemorySpanExporter(), set_global=False, export_metrics=False, **kwargs
    )


@pytest.mark.parametrize("name", ["offline", "OFFLINE", " offline "])
def test_offline_names_the_offline_judge(name: str) -> None:
    with configure(name) as handle:
        assert isinstance(handle.processor.judge, OfflineJudge)


def test_openai_builds_the_openai_judge_from_the_judge_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = InMemorySpanExporter()
    with StubOpenAIServer() as stub:
        monkeypatch.setenv("RAGTRACE_JUDGE_BASE_URL", stub.base_url)
        handle = ragtrace.configure(
            judge="openai",
            exporter=exporter,
            batch=False,
            metrics=["context_relevance"],
            sample_rate=1.0,
            set_global=False,
            export_metrics=False,
        )
        try:
            assert isinstance(handle.processor.judge, OpenAIJudge)
            answer("What is the capital of Brazil?")
            handle.force_flush()
        finally:
            handle.shutdown()
        assert [r.step for r in stub.requests] == ["rate_chunks"]
    (rag,) = rag_spans(exporter)
    assert semconv.eval_score("context_relevance") in (rag.attributes or {})


def test_openai_without_a_key_or_endpoint_raises_at_once() -> None:
    with pytest.raises(ConfigurationError, match="no API key"):
        configure("openai")
    assert _capture.get_tracer_provider() is None


@pytest.mark.parametrize(
    ("variables", "judge_type"),
    [
        ({}, OfflineJudge),
        ({"OPENAI_API_KEY": "sk-test"}, OpenAIJudge),
        ({"OPENAI_API_KEY": "sk-test", "RAGTRACE_JUDGE": "offline"}, OfflineJudge),
    ],
)
def test_auto_chooses_as_the_default_does(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], judge_type: type
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with configure("auto") as handle:
        assert isinstance(handle.processor.judge, judge_type)


def test_instrument_takes_the_same_names() -> None:
    provider = TracerProvider()
    handle = ragtrace.instrument(provider, SimpleSpanProcessor(InMemorySpanExporter()), judge="offline")
    try:
        assert isinstance(handle.processor.judge, OfflineJudge)
    finally:
        handle.shutdown()
        provider.shutdown()
    with pytest.raises(ConfigurationError, match="'auto', 'openai', 'offline' or 'tiered'"):
        ragtrace.instrument(provider, SimpleSpanProcessor(InMemorySpanExporter()), judge="ofline")


# A metric has a name and capabilities as a judge has, but no aclose: the processor failed with AttributeError.
@pytest.mark.parametrize(
    "judge", ["ofline", "", {}, {"name": "offline"}, 42, OfflineJudge, build_suite(["faithfulness"]).metrics[0]]
)
def test_anything_else_raises_at_once_naming_the_accepted_forms(judge: Any) -> None:
    accepted = r"pass 'auto', 'openai', 'offline' or 'tiered' .* or a ragtrace\.judges\.Judge"
    with pytest.raises(ConfigurationError, match=accepted):
        configure(judge)
    assert _capture.get_tracer_provider() is None  # nothing half-configured is left behind


def test_a_judge_instance_is_used_as_given() -> None:
    judge = fake_judge()
    with configure(judge) as handle:
        assert handle.processor.judge is judge


@pytest.mark.parametrize("bad", ["ofline", 42, {"model": "x"}])
def test_the_processor_takes_judge_values_as_configure_does(bad: object) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragtrace import ScoringSpanProcessor
    from ragtrace.judges.offline import OfflineJudge

    with pytest.raises(ConfigurationError, match="is not a judge"):
        ScoringSpanProcessor(InMemorySpanExporter(), judge=bad)  # type: ignore[arg-type]
    processor = ScoringSpanProcessor(InMemorySpanExporter(), judge="offline")
    assert isinstance(processor.judge, OfflineJudge)
    processor.shutdown()
