"""Every name ragtrace emits is in the conventions' copy kept in tests/conventions/, or ragtrace's own.

Two checks: the ``ragtrace.semconv`` constants that are written (not marked "Read:"), and every name that
real telemetry carries (spans, span events, log records, metric points) after a RAG call is scored.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan

import ragtrace
from ragtrace import semconv
from ragtrace.environment_variables import RAGTRACE_EVALUATION_LOGS
from ragtrace.metrics import Cost, Score
from ragtrace.scoring import evaluation_logs as _eval_logs
from ragtrace.scoring.jobs import outcome_of
from ragtrace.scoring.spans import carrier_span
from ragtrace.testing import FakeJudge, capture

ROOT = Path(__file__).resolve().parents[2]
COPIES = ROOT / "tests" / "conventions"
GEN_NAMES = runpy.run_path(str(ROOT / "docs" / "gen_names.py"))


def _load(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((COPIES / name).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


GENAI, OTEL, OPENINFERENCE, OWN = (_load(f) for f in ("genai.yaml", "otel.yaml", "openinference.yaml", "ragtrace.yaml"))
CONVENTION_NAMES = {
    *GENAI["attributes"],
    *GENAI["events"],
    *GENAI["metrics"],
    *OTEL["attributes"],
    *OTEL["events"],
    *OPENINFERENCE["attributes"],
}
OWN_PREFIX: str = OWN["own_prefix"]
OUTSIDE_OWN_PREFIX = set(OWN["outside_own_prefix"])


def _allowed(name: str) -> bool:
    return name in CONVENTION_NAMES or name.startswith(OWN_PREFIX) or name in OUTSIDE_OWN_PREFIX


def test_every_copy_says_where_it_comes_from() -> None:
    for copy in (GENAI, OTEL, OPENINFERENCE):
        assert str(copy["source"]).startswith("https://github.com/")
        assert copy["version"] and copy["checked"]


# -- the constants ----------------------------------------------------------------------------------


def _written_constants() -> Iterator[tuple[str, str]]:
    """(constant, value) of every semconv string constant whose docstring does not start with "Read:"."""
    for module in GEN_NAMES["modules"]():
        body = ast.parse(inspect.getsource(module)).body
        for node, after in itertools.pairwise(body):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                value = getattr(semconv, node.target.id)
                doc = after.value.value if isinstance(after, ast.Expr) else ""  # type: ignore[attr-defined]
                if isinstance(value, str) and not str(doc).startswith("Read:"):
                    yield node.target.id, value


def _as_name(value: str) -> str | None:
    """The wire name a constant stands for, or None for a value, a JSON key or a marker (no dot in it).

    Suffixes (``document.id``, ``evaluation.score``) and prefixes (``retrieval.documents``, ``evaluations``)
    of flattened OpenInference names are checked against the flattened names of the copy.
    """
    if "." not in value and value != semconv.EVALUATIONS:
        return None
    for name in OPENINFERENCE["attributes"]:
        if name.endswith("." + value) or name.startswith(value + ".{i}."):
            return str(name)
    return value


def test_every_written_constant_is_a_convention_name_or_ragtraces_own() -> None:
    names = {constant: _as_name(value) for constant, value in _written_constants()}
    checked = {constant: name for constant, name in names.items() if name is not None}
    assert len(checked) > 40
    assert {c: n for c, n in checked.items() if not _allowed(n)} == {}


def test_the_names_ragtrace_takes_for_its_own_outside_its_prefix_are_emitted() -> None:
    # A deviation listed in ragtrace.yaml that ragtrace no longer emits must leave the list.
    values = {value for _, value in _written_constants()}
    assert values >= OUTSIDE_OWN_PREFIX


# -- real telemetry ----------------------------------------------------------------------------------

INDEX = re.compile(r"\.\d+\.")


def _normalized(name: str) -> str:
    return INDEX.sub(".{i}.", name)


@pytest.fixture
def logs(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemoryLogRecordExporter]:
    monkeypatch.setenv(RAGTRACE_EVALUATION_LOGS, "true")
    exporter = InMemoryLogRecordExporter()  # type: ignore[no-untyped-call]
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    _eval_logs.set_logger_provider(provider)
    yield exporter
    _eval_logs.set_logger_provider(None)
    provider.shutdown()


def _scored_telemetry(logs: InMemoryLogRecordExporter) -> tuple[list[ReadableSpan], set[str]]:
    """Spans of a scored RAG call (one metric scored, one failing) and of one that raised, plus the names
    on the metric points and log records."""
    judge = FakeJudge(extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]])
    with capture(judge, metrics=["faithfulness", "context_relevance", "context_recall"]) as captured:

        @ragtrace.retrieve(data_source="handbook", top_k=2, provider="openai")
        def search(q: str) -> list[dict[str, Any]]:
            return [{"text": "Paris is the capital.", "id": "d1", "score": 0.9, "metadata": {"page": 1}}]

        @ragtrace.generate(model="gpt-4o-mini", provider="openai")
        def write(q: str) -> str:
            return "Paris."

        @ragtrace.rag
        def ask(question: str) -> str:
            search(question)
            ragtrace.record(metadata={"user": "u1"}, reference="Paris")
            return write(question)

        @ragtrace.rag
        def broken(question: str) -> str:
            raise RuntimeError("no index")

        ask("What is the capital of France?")
        with pytest.raises(RuntimeError):
            broken("q")
        spans = captured.spans()
        names: set[str] = set()
        data = captured.metric_reader.get_metrics_data()
        assert data is not None
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    names.add(metric.name)
                    for point in metric.data.data_points:
                        names.update(point.attributes or {})
    for record in logs.get_finished_logs():
        names.add(str(record.log_record.event_name))
        names.update(record.log_record.attributes or {})
    return spans, names


def _span_names(span: ReadableSpan) -> set[str]:
    names = set(span.attributes or {})
    for event in span.events:
        names.add(event.name)
        names.update(event.attributes or {})
    return names


def test_every_name_on_real_telemetry_is_a_convention_name_or_ragtraces_own(
    logs: InMemoryLogRecordExporter,
) -> None:
    spans, names = _scored_telemetry(logs)
    for span in spans:
        names |= _span_names(span)
    # A carrier span (late scores) from the same codec.
    rag = next(s for s in spans if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG)
    outcome = outcome_of([Score("faithfulness", 0.5, label="partly")], Cost(), "offline:test")
    names |= _span_names(carrier_span(rag, outcome.attributes, outcome.events, start_time=1, end_time=2))
    found = {_normalized(n) for n in names}
    # The scenario reaches what this test is for: GenAI, OpenInference and log-record names.
    assert {
        semconv.GEN_AI_PROVIDER_NAME,
        semconv.GEN_AI_RETRIEVAL_TOP_K,
        semconv.GEN_AI_EVALUATION_RESULT,
        semconv.ERROR_TYPE,
        semconv.EXCEPTION_MESSAGE,
        "evaluations.{i}.evaluation.annotator_kind",
        "retrieval.documents.{i}.document.metadata",
        semconv.METRIC_EVALUATION_SCORE,
    } <= found
    assert sorted(n for n in found if not _allowed(n)) == []


def test_the_values_ragtrace_writes_are_the_conventions_values(logs: InMemoryLogRecordExporter) -> None:
    spans, _ = _scored_telemetry(logs)
    checks = {
        semconv.GEN_AI_OPERATION_NAME: GENAI["attributes"]["gen_ai.operation.name"]["values"],
        semconv.OPENINFERENCE_SPAN_KIND: OPENINFERENCE["attributes"]["openinference.span.kind"]["values"],
    }
    annotator_kinds = OPENINFERENCE["attributes"]["evaluations.{i}.evaluation.annotator_kind"]["values"]
    for span in spans:
        attributes = span.attributes or {}
        for key, allowed in checks.items():
            if key in attributes:
                assert attributes[key] in allowed, (key, attributes[key])
        for key, value in attributes.items():
            if key.endswith("." + semconv.EVALUATION_ANNOTATOR_KIND):
                assert value in annotator_kinds
