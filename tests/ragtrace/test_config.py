"""configure() and instrument(): real OTLP over HTTP to a local receiver, OTEL_* variables, wrong settings."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import _capture, semconv
from ragtrace._export_deadline import CountingSpanExporter
from ragtrace.environment_variables import ConfigurationError
from tests.ragtrace.test_processor_judges import answer, fake_judge, rag_spans


class Receiver:
    """A real OTLP/HTTP receiver on 127.0.0.1 that keeps every request body by path."""

    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {}
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with lock:
                    outer.bodies.setdefault(self.path, []).append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[Any]:
        found = []
        for body in self.bodies.get("/v1/traces", []):
            request = ExportTraceServiceRequest.FromString(body)
            for rs in request.resource_spans:
                for ss in rs.scope_spans:
                    found.extend((rs.resource, span) for span in ss.spans)
        return found


@pytest.fixture(autouse=True)
def _restore_capture_state() -> Iterator[None]:
    # A failing test must not leave the decorators pointed at its provider for the next one.
    yield
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()


def attrs_of(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        which = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, which) if which else None
    return out


def test_configure_exports_scored_spans_over_otlp_http(receiver: Receiver) -> None:
    before = trace.get_tracer_provider()
    handle = ragtrace.configure(
        service_name="support-bot",
        endpoint=receiver.url,
        sample_rate=0.2,
        judge=fake_judge(),
        metrics=["faithfulness"],
        set_global=False,
    )
    assert _capture.get_tracer_provider() is handle.tracer_provider
    for i in range(40):
        answer(f"What is the capital of Brazil? #{i}")
    handle.shutdown()
    assert trace.get_tracer_provider() is before  # the global provider was never touched
    assert _capture.get_tracer_provider() is None
    spans = receiver.spans()
    assert len(spans) == 80
    rags = [(res, s) for res, s in spans if attrs_of(s).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG]
    assert len(rags) == 40
    decisions = [attrs_of(s)[semconv.EVAL_DECISION] for _, s in rags]
    assert set(decisions) == {semconv.DECISION_EVALUATED, semconv.DECISION_NOT_SAMPLED}
    assert 2 <= decisions.count(semconv.DECISION_EVALUATED) <= 16  # 0.2 of 40, deterministic per trace id
    for res, span in rags:
        attrs = attrs_of(span)
        if attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED:
            assert attrs[semconv.eval_score("faithfulness")] == 1.0
            assert [e.name for e in span.events] == [semconv.GEN_AI_EVALUATION_RESULT]
        else:
            assert semconv.eval_score("faithfulness") not in attrs
        assert {kv.key: kv.value.string_value for kv in res.attributes}[semconv.SERVICE_NAME] == "support-bot"
    # Score metrics went to the same endpoint over OTLP (flushed at shutdown).
    metric_names = set()
    for body in receiver.bodies.get("/v1/metrics", []):
        for rm in ExportMetricsServiceRequest.FromString(body).resource_metrics:
            for sm in rm.scope_metrics:
                metric_names.update(m.name for m in sm.metrics)
    assert {semconv.METRIC_EVALUATION_SCORE, semconv.METRIC_EVAL_DECISIONS} <= metric_names


def test_otel_variables_are_honoured_and_arguments_win(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=search")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    handle = ragtrace.configure(judge=fake_judge(), metrics=["faithfulness"], sample_rate=1.0, set_global=False)
    assert handle.meter_provider is None
    answer("q")
    handle.shutdown()
    (res, _), *_ = receiver.spans()
    resource = {kv.key: kv.value.string_value for kv in res.attributes}
    assert resource[semconv.SERVICE_NAME] == "from-env"
    assert resource["deployment.environment"] == "prod" and resource["team"] == "search"
    assert "/v1/metrics" not in receiver.bodies
    handle = ragtrace.configure(
        service_name="from-arg", exporter=InMemorySpanExporter(), judge=fake_judge(), set_global=False
    )
    assert handle.tracer_provider.resource.attributes[semconv.SERVICE_NAME] == "from-arg"
    handle.shutdown()


def test_grpc_protocol_builds_the_grpc_exporter() -> None:
    handle = ragtrace.configure(
        endpoint="http://127.0.0.1:4317",
        protocol="grpc",
        judge=fake_judge(),
        export_metrics=False,
        set_global=False,
    )
    downstream = handle.processor.downstream
    assert isinstance(downstream, BatchSpanProcessor)
    # The exporter configure() built, behind the counter that reports what a shutdown dropped.
    assert isinstance(downstream.span_exporter, CountingSpanExporter)
    assert "grpc" in type(downstream.span_exporter.inner).__module__
    handle.shutdown(timeout_millis=1000)


def test_capture_content_off_exports_no_text_but_still_scores() -> None:
    exporter = InMemorySpanExporter()
    with ragtrace.configure(
        exporter=exporter,
        judge=fake_judge(),
        metrics=["faithfulness"],
        sample_rate=1.0,
        capture_content=False,
        export_metrics=False,
        set_global=False,
    ) as handle:
        answer("What is the capital of Brazil?")
        handle.force_flush()
        (rag,) = rag_spans(exporter)
    attrs = rag.attributes or {}
    assert semconv.INPUT_VALUE not in attrs and semconv.OUTPUT_VALUE not in attrs
    assert attrs[semconv.eval_score("faithfulness")] == 1.0


def test_instrument_adds_scoring_to_an_apps_own_provider() -> None:
    provider = TracerProvider()
    other = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(other))  # the app's own, untouched processor
    scored = InMemorySpanExporter()
    handle = ragtrace.instrument(
        provider, SimpleSpanProcessor(scored), judge=fake_judge(), metrics=["faithfulness"], sample_rate=1.0
    )
    answer("What is the capital of Brazil?")
    handle.force_flush()
    (rag,) = rag_spans(scored)
    assert (rag.attributes or {})[semconv.eval_score("faithfulness")] == 1.0
    assert len(other.get_finished_spans()) == 2  # the app's processor saw the spans as before
    handle.shutdown()
    # The provider is still the app's and still works.
    with provider.get_tracer("app").start_as_current_span("after"):
        pass
    assert other.get_finished_spans()[-1].name == "after"
    provider.shutdown()


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        ({"protocol": "http/json"}, "http/protobuf"),
        ({"endpoint": "localhost:4318"}, "http://127.0.0.1:4318"),
        ({"sample_rate": 3}, "between 0 and 1"),
        ({"sampler": ragtrace.Sampler(0.5), "sample_rate": 0.1}, "Sampler"),
        ({"exporter": InMemorySpanExporter(), "endpoint": "http://x:4318"}, "not both"),
        ({"capture_content": "yes"}, "True or False"),
        ({"service_name": ""}, "non-empty"),
        ({"queue_size": 0}, "queue_size"),
        ({"budget_usd": 1.0, "judge": fake_judge(name="openai:unknown-model")}, "price"),
    ],
)
def test_wrong_settings_raise_at_once(kwargs: dict[str, Any], fix: str) -> None:
    kwargs.setdefault("judge", fake_judge())
    with pytest.raises(ConfigurationError, match=fix):
        ragtrace.configure(set_global=False, export_metrics=False, **kwargs)
    assert _capture.get_tracer_provider() is None  # nothing half-configured is left behind


def test_a_bad_otel_protocol_variable_warns_and_uses_http(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
    handle = ragtrace.configure(judge=fake_judge(), set_global=False, export_metrics=False)
    handle.shutdown()
    (message,) = warned("OTEL_EXPORTER_OTLP_PROTOCOL")
    assert "'http/protobuf' or 'grpc'" in message and "using the default (http/protobuf)" in message
    with pytest.raises(ConfigurationError, match="protocol='carrier-pigeon' is not supported"):
        ragtrace.configure(judge=fake_judge(), protocol="carrier-pigeon", set_global=False, export_metrics=False)


def test_every_variable_and_configure_argument_is_documented() -> None:
    import inspect
    from pathlib import Path

    from ragtrace import environment_variables

    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    variables = [v for n, v in vars(environment_variables).items() if n.startswith("RAGTRACE_")]
    assert len(variables) > 20
    assert [v for v in variables if f"`{v}`" not in doc] == []
    # The flat keywords arrive as **shorthands: each of them is an argument too, as is each option field.
    from dataclasses import fields

    from ragtrace._shorthands import SETUP

    arguments = [a for a in inspect.signature(ragtrace.configure).parameters if a != "shorthands"]
    arguments += sorted(SETUP)
    for options in (ragtrace.ScoringOptions, ragtrace.CaptureOptions, ragtrace.JoinOptions):
        arguments += [f.name for f in fields(options)]
    assert [a for a in arguments if f"`{a}`" not in doc] == []


def test_a_rag_span_keeps_every_chunk_it_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK's default limit of 128 attributes a span would drop chunks past ~28 silently.
    monkeypatch.delenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", raising=False)
    monkeypatch.delenv("OTEL_ATTRIBUTE_COUNT_LIMIT", raising=False)
    exporter = InMemorySpanExporter()
    handle = ragtrace.configure(
        exporter=exporter,
        batch=False,
        sample_rate=1.0,
        judge=fake_judge(),
        metrics=["faithfulness"],
        export_metrics=False,
        set_global=False,
    )

    @ragtrace.rag
    def ask(question: str) -> str:
        ragtrace.record(chunks=[{"id": f"doc-{i}", "text": f"Brasilia {i}", "score": 0.5} for i in range(200)])
        return "The capital of Brazil is Brasilia."

    ask("which chunk?")
    handle.shutdown()
    (span,) = [s for s in exporter.get_finished_spans() if s.attributes.get(semconv.RAGTRACE_ROLE) == "rag"]
    # The SDK drops the oldest attributes first: the first chunks are the ones that would go.
    contents = [span.attributes.get(semconv.retrieval_document(i, semconv.DOCUMENT_CONTENT)) for i in range(200)]
    assert contents == [f"Brasilia {i}" for i in range(200)]
    assert span.attributes[semconv.eval_score("faithfulness")] == 1.0


def test_the_app_chooses_the_attribute_limit_with_the_otel_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "16")
    handle = ragtrace.configure(
        exporter=InMemorySpanExporter(), judge=fake_judge(), export_metrics=False, set_global=False
    )
    try:
        assert handle.tracer_provider._span_limits.max_span_attributes == 16  # type: ignore[attr-defined]
    finally:
        handle.shutdown()
