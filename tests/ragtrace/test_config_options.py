"""The option objects (``ScoringOptions``, ``CaptureOptions``, ``JoinOptions``) and the flat keywords merged into
them: resolution order (argument, else variable, else default), the checks and their messages, conflicts.
How the three entry points use them: test_config_options_wiring.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import CaptureOptions, JoinOptions, Rule, Sampler, ScoringOptions, _capture
from ragtrace._capture import RecordStore
from ragtrace._shorthands import _SAMPLING, PROCESSOR, SETUP, JoinKeywords, SamplingKeywords, merge
from ragtrace.environment_variables import ConfigurationError
from ragtrace.scoring.processor import ScoringSpanProcessor
from tests.ragtrace.foreign_rig import NoJudge
from tests.ragtrace.test_processor import Collect, NullJudge, Scripted


@pytest.fixture(autouse=True)
def _restore_capture_state() -> Iterator[None]:
    yield
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)


def processor(**kwargs: Any) -> ScoringSpanProcessor:
    kwargs.setdefault("judge", NullJudge())
    kwargs.setdefault("metrics", [Scripted()])
    return ScoringSpanProcessor(Collect(), records=RecordStore(), **kwargs)


# -- resolution: argument, else variable, else default --------------------------------------------------


def test_scoring_options_resolve_the_argument_else_the_variable_else_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judge = NullJudge()
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "17")
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "0.5")
    resolved = ScoringOptions(judge=judge, metrics=[Scripted()], max_concurrency=3).resolve()
    assert (resolved.max_concurrency, resolved.queue_size, resolved.hold_timeout) == (3, 17, 30.0)
    assert resolved.judge is judge and resolved.sampler.rate == 0.5 and resolved.suite.names == ("faithfulness",)
    assert ScoringOptions(judge=judge, metrics=[Scripted()], queue_size=5).resolve().queue_size == 5


def test_capture_options_resolve_the_argument_else_the_variable_else_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGTRACE_CAPTURE_CONTENT", "false")
    monkeypatch.setenv("RAGTRACE_MAX_RECORD_CHUNKS", "7")
    resolved = CaptureOptions(max_attribute_length=100).resolve()
    assert (resolved.capture_content, resolved.max_record_chunks, resolved.max_attribute_length) == (False, 7, 100)
    assert resolved.max_record_chunk_length == 65536
    assert CaptureOptions(capture_content=True).resolve().capture_content is True


def test_join_options_resolve_the_argument_else_the_variable_else_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRACE_JOIN_MAX_TRACES", "9")
    monkeypatch.setenv("RAGTRACE_RAG_ROOTS", "name:answer_*")
    resolved = JoinOptions(max_bytes=1000).resolve()
    assert (resolved.max_traces, resolved.max_bytes, resolved.max_seconds, resolved.recognize) == (9, 1000, 300.0, True)
    assert [r.name for r in resolved.roots] == ["name:answer_*"]
    given = JoinOptions(max_traces=2, rag_roots=[]).resolve()
    assert (given.max_traces, given.roots) == (2, ())


def test_a_wrong_variable_warns_when_resolved_not_when_the_object_is_built(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "lots")
    monkeypatch.setenv("RAGTRACE_JOIN_MAX_SECONDS", "inf")
    options, join = ScoringOptions(judge=NullJudge(), metrics=[Scripted()]), JoinOptions()
    assert warned("RAGTRACE_QUEUE_SIZE") == [] and warned("RAGTRACE_JOIN_MAX_SECONDS") == []
    assert options.resolve().queue_size == 2048 and join.resolve().max_seconds == 300.0
    assert warned("RAGTRACE_QUEUE_SIZE") and warned("RAGTRACE_JOIN_MAX_SECONDS")


# -- checks: a given value when the object is built, with the keyword's message ------------------------


@pytest.mark.parametrize(
    ("build", "keywords"),
    [
        (lambda: ScoringOptions(queue_size=0), {"queue_size": 0}),
        (lambda: ScoringOptions(max_concurrency=1.5), {"max_concurrency": 1.5}),
        (lambda: ScoringOptions(hold_timeout=math.inf), {"hold_timeout": math.inf}),
        (lambda: ScoringOptions(shutdown_timeout=0), {"shutdown_timeout": 0}),
        (lambda: CaptureOptions(capture_content="yes"), {"capture_content": "yes"}),  # type: ignore[arg-type]
        (lambda: CaptureOptions(redact="x"), {"redact": "x"}),  # type: ignore[arg-type]
        (lambda: CaptureOptions(max_record_chunks=-1), {"max_record_chunks": -1}),
        (lambda: JoinOptions(recognize="yes"), {"recognize": "yes"}),  # type: ignore[arg-type]
        (lambda: JoinOptions(rag_roots="name:x"), {"rag_roots": "name:x"}),  # type: ignore[arg-type]
        (lambda: JoinOptions(rag_roots=[42]), {"rag_roots": [42]}),  # type: ignore[list-item]
        (lambda: JoinOptions(max_traces=0), {"join_max_traces": 0}),
        (lambda: JoinOptions(max_seconds=math.nan), {"join_max_seconds": math.nan}),
    ],
)
def test_a_wrong_value_raises_when_the_object_is_built_as_its_keyword_does(
    build: Callable[[], object], keywords: dict[str, Any]
) -> None:
    with pytest.raises(ConfigurationError) as built:
        build()
    with pytest.raises(ConfigurationError) as keyword:
        ragtrace.configure(judge=NoJudge(), set_global=False, export_metrics=False, **keywords)
    assert str(built.value) == str(keyword.value)


def test_the_judge_and_the_metrics_are_checked_when_resolved() -> None:
    options = ScoringOptions(judge="ofline", metrics=["no_such_metric"])  # building them is the check
    with pytest.raises(ConfigurationError, match="unknown metric"):
        options.resolve()
    with pytest.raises(ConfigurationError, match="ofline"):
        ScoringOptions(judge="ofline", metrics=[Scripted()]).resolve()
    with pytest.raises(ConfigurationError, match="price"):
        ScoringOptions(judge=NullJudge(), metrics=[Scripted()], sampler=Sampler(1.0, budget_usd_per_day=1.0)).resolve()


def test_options_are_frozen_values_that_keep_no_iterator_of_the_caller() -> None:
    roots = (rule for rule in [Rule.name_matches("answer_*"), lambda span: False])
    join = JoinOptions(rag_roots=roots)
    assert isinstance(join.rag_roots, tuple) and all(isinstance(r, Rule) for r in join.rag_roots)
    assert join.resolve().roots == join.resolve().roots == join.rag_roots  # a generator would be used up
    metrics = ["faithfulness"]
    scoring = ScoringOptions(metrics=metrics, hold_timeout=2)
    metrics.append("hallucination")
    assert scoring.metrics == ("faithfulness",) and scoring.hold_timeout == 2.0
    assert ScoringOptions(queue_size=5) == ScoringOptions(queue_size=5)
    with pytest.raises(TypeError):
        ScoringOptions("offline")  # type: ignore[misc]  # keyword-only: new fields may come in any order
    with pytest.raises(AttributeError):
        scoring.queue_size = 1  # type: ignore[misc]


# -- the flat keywords, merged in one place ----------------------------------------------------------------


def test_every_keyword_is_a_field_of_an_option_object_or_an_argument_of_the_sampler() -> None:
    import inspect

    fields_of = {f.name for cls in (ScoringOptions, CaptureOptions) for f in fields(cls)}
    join_fields = {f.name for f in fields(JoinOptions)}
    sampler_arguments = set(inspect.signature(Sampler).parameters)
    assert set(_SAMPLING) == set(SamplingKeywords.__optional_keys__)
    assert set(_SAMPLING.values()) <= sampler_arguments
    assert {k.removeprefix("join_") for k in JoinKeywords.__optional_keys__} == join_fields
    assert SETUP - set(_SAMPLING) - set(JoinKeywords.__optional_keys__) == fields_of
    assert {f.name for f in fields(CaptureOptions)} == SETUP - PROCESSOR


def test_a_keyword_fills_a_field_its_object_leaves_unset() -> None:
    judge = NullJudge()
    options = merge(
        "configure()",
        {"judge": judge, "queue_size": None, "redact": str.upper, "join_max_traces": 4, "sample_rate": 1.0},
        SETUP,
        scoring=ScoringOptions(queue_size=5),
        join=JoinOptions(recognize=False),
    )
    assert (options.scoring.judge, options.scoring.queue_size) == (judge, 5)  # None is not given
    assert options.scoring.sampler is not None and options.scoring.sampler.rate == 1.0
    assert options.capture == CaptureOptions(redact=str.upper)
    assert options.join == JoinOptions(recognize=False, max_traces=4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scoring": ScoringOptions(queue_size=5), "queue_size": 6}, r"queue_size is given twice, as queue_size="),
        ({"scoring": ScoringOptions(judge="offline"), "judge": "offline"}, "judge is given twice"),
        ({"capture": CaptureOptions(redact=str.upper), "redact": str.lower}, "redact is given twice"),
        ({"join": JoinOptions(max_traces=3), "join_max_traces": 3}, r"as join_max_traces= and in join=JoinOptions"),
        ({"scoring": ScoringOptions(sampler=Sampler(1.0)), "sample_rate": 0.5}, "either a sampler"),
        ({"sampler": Sampler(1.0), "budget_usd": 1.0}, "either a sampler"),
        ({"scoring": {"queue_size": 5}}, r"scoring=\{'queue_size': 5\} is not a ScoringOptions"),
        ({"join": ScoringOptions()}, "is not a JoinOptions"),
    ],
)
def test_a_setting_given_both_ways_or_an_object_of_the_wrong_type_is_a_configuration_error(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ragtrace.configure(set_global=False, export_metrics=False, **kwargs)
    assert _capture.get_tracer_provider() is None
    if "capture" not in kwargs:  # the processor takes no capture settings
        with pytest.raises(ConfigurationError, match=message):
            ScoringSpanProcessor(Collect(), records=RecordStore(), **kwargs)


def test_an_unknown_keyword_is_a_type_error_and_the_processor_takes_no_capture_keyword() -> None:
    with pytest.raises(TypeError, match="configure\\(\\) got an unexpected keyword argument 'sample_rat'"):
        ragtrace.configure(sample_rat=0.5, set_global=False)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="ScoringSpanProcessor\\(\\) got an unexpected keyword argument 'redact'"):
        processor(redact=str.upper)
    with pytest.raises(TypeError, match="instrument\\(\\) got an unexpected keyword argument 'batch'"):
        ragtrace.instrument(TracerProvider(), InMemorySpanExporter(), batch=False)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("keyword", "value", "expected"),
    [
        ("sample_rate", "abc", "sample_rate='abc' is invalid: pass a number between 0 and 1"),
        ("throttle", -1, "throttle=-1 is invalid: pass a whole number >= 0, or None for no limit"),
        ("budget_tokens", 1.5, "budget_tokens=1.5 is invalid: pass a whole number >= 0, or None for no limit"),
        ("budget_usd", "x", "budget_usd='x' is invalid: pass a number of dollars >= 0, or None for no limit"),
    ],
)
def test_a_wrong_sampling_keyword_is_named_as_the_caller_wrote_it(keyword: str, value: object, expected: str) -> None:
    # Issue 29: configure(sample_rate="abc") said "rate='abc' is invalid", a name the caller never wrote.
    for call in (
        lambda: ragtrace.configure(exporter=InMemorySpanExporter(), set_global=False, **{keyword: value}),
        lambda: ragtrace.instrument(TracerProvider(), InMemorySpanExporter(), **{keyword: value}),
        lambda: processor(**{keyword: value}),
    ):
        with pytest.raises(ConfigurationError) as raised:
            call()
        assert str(raised.value) == expected
    # The Sampler's own argument keeps its own name.
    with pytest.raises(ConfigurationError, match=r"^rate='abc' is invalid"):
        Sampler(rate="abc")  # type: ignore[arg-type]
