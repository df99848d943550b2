"""An app that already owns its OpenTelemetry set-up adds ragtrace without replacing anything.

The app has its TracerProvider, its resource, its own span processors and OpenAI auto-instrumentation
(``openinference-instrumentation-openai``). Adding ragtrace is one call, ``ragtrace.instrument(provider,
exporter)``, which takes the exporter whose spans should carry scores; everything else stays the app's.
The OpenAI client's LLM spans nest under the ``@ragtrace.rag`` span because the decorators use the same
provider and the current context. The judge's own calls are made with instrumentation suppressed, so
they add no spans to the app's traces, even though the judge talks to the same OpenAI-compatible server.

It runs offline: the OpenAI client and the judge point at ragtrace's stub OpenAI server
(``ragtrace.testing.StubOpenAIServer``) on 127.0.0.1. ``python examples/existing_provider.py`` prints the
span tree; ``--endpoint http://127.0.0.1:4318`` also sends the spans over OTLP/HTTP (to ``ragtrace-collector
serve``, Phoenix, ...).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from openai import OpenAI
from openai.types.chat import ChatCompletionUserMessageParam
from openai.types.shared_params import ResponseFormatJSONSchema
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv

KNOWLEDGE = [
    "The Golden Gate Bridge opened to traffic on May 27, 1937.",
    "The Golden Gate Bridge's main span is 1,280 metres long.",
    "The Brooklyn Bridge was completed in 1883 and spans the East River.",
    "Big Ben is the nickname of the Great Bell of the clock at the Palace of Westminster.",
]

ANSWER_SCHEMA: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
}


@dataclass
class App:
    """The existing app: an OpenAI client and a tiny keyword retriever, decorated with ragtrace."""

    client: OpenAI
    model: str = "gpt-4o-mini"

    @ragtrace.retrieve
    def retrieve(self, question: str) -> list[str]:
        """The two passages sharing most words with the question."""
        words = set(re.findall(r"\w+", question.lower()))
        return sorted(KNOWLEDGE, key=lambda p: -len(words & set(re.findall(r"\w+", p.lower()))))[:2]

    @ragtrace.rag(name="existing_app.answer")
    def answer(self, question: str) -> str:
        """Retrieve, then ask the model for a structured answer; OpenInference traces the model call."""
        passages = self.retrieve(question)
        prompt = (
            "\n".join(passages) + f"\n\nQuestion: {question}\nAnswer with one sentence taken from the passages above."
        )
        message: ChatCompletionUserMessageParam = {"role": "user", "content": prompt}
        reply = self.client.chat.completions.create(model=self.model, messages=[message], response_format=ANSWER_SCHEMA)
        content = reply.choices[0].message.content or "{}"
        return str(json.loads(content).get("answer", ""))


def run(base_url: str, exporter: SpanExporter, *, questions: Sequence[str], judge_base_url: str | None = None) -> None:
    """Set up the app's own tracing, add ragtrace, ask ``questions``, shut down (spans go to ``exporter``)."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    from ragtrace.judges.openai import OpenAIJudge

    # --- the app's existing set-up: its provider, its processors, its auto-instrumentation -----------
    provider = TracerProvider(resource=Resource.create({semconv.SERVICE_NAME: "existing-app"}))
    audit = InMemorySpanExporter()  # stands for any processor the app already had; ragtrace leaves it alone
    provider.add_span_processor(SimpleSpanProcessor(audit))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)

    # --- adding ragtrace: one call; the exporter's spans now carry scores -------------------------------
    judge = OpenAIJudge(base_url=judge_base_url or base_url, api_key="not-needed")
    handle = ragtrace.instrument(provider, exporter, judge=judge, sample_rate=1.0)
    try:
        app = App(OpenAI(base_url=base_url, api_key="not-needed"))
        for question in questions:
            print(f"{question} -> {app.answer(question)}", file=sys.stderr)
    finally:
        handle.shutdown()
        instrumentor.uninstrument()
        provider.shutdown()
    print(f"(the app's own processor saw {len(audit.get_finished_spans())} spans too)", file=sys.stderr)


def span_tree(spans: Sequence[ReadableSpan]) -> str:
    """The spans as an indented tree, with each span's kind and its faithfulness score when it has one."""
    children: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans if s.context is not None}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            attrs = span.attributes or {}
            kind = attrs.get(semconv.OPENINFERENCE_SPAN_KIND, "-")
            score = attrs.get(semconv.eval_score("faithfulness"))
            extra = f"  faithfulness={score:.2f}" if isinstance(score, float) else ""
            lines.append(f"{'  ' * depth}{span.name} [{kind}]{extra}")
            walk(span.context.span_id if span.context is not None else None, depth + 1)

    walk(None, 0)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the app against the stub server; print the span tree (and export over OTLP with ``--endpoint``)."""
    from ragtrace.testing import StubOpenAIServer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", help="also export over OTLP/HTTP to this base URL")
    args = parser.parse_args(argv)
    memory = InMemorySpanExporter()
    exporter: SpanExporter = memory
    if args.endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = _Both(memory, OTLPSpanExporter(endpoint=args.endpoint.rstrip("/") + "/v1/traces"))
    with StubOpenAIServer() as server:
        run(server.base_url, exporter, questions=["When did the Golden Gate Bridge open?", "What is Big Ben?"])
    print(span_tree(memory.get_finished_spans()))
    return 0


class _Both(SpanExporter):
    """Export to two exporters (the in-memory one for the printed tree, and OTLP)."""

    def __init__(self, first: SpanExporter, second: SpanExporter) -> None:
        self._exporters = (first, second)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        results = [exporter.export(spans) for exporter in self._exporters]
        ok = all(r == SpanExportResult.SUCCESS for r in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        for exporter in self._exporters:
            exporter.shutdown()


if __name__ == "__main__":
    sys.exit(main())
