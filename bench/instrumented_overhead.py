"""Per-span cost of ragtrace's processor on an OpenInference-instrumented LangChain call, as a ratio to the same
pipeline without it.

One RAG call is an LCEL chain (an in-memory retriever returning 5 chunks of 1 KB, a prompt, LangChain's fake
chat model, an output parser: 9 spans) traced by OpenInference's LangChain instrumentation and exported by a
``SimpleSpanProcessor`` into an exporter that drops what it gets. The instrumentation is set up once, on a
provider whose one processor is switched, call by call, between:

  (base)  the export processor alone: the app as it is, without ragtrace;
  (rt0)   ``ScoringSpanProcessor`` in front of it, sample rate 0: every span is looked at, the chain's
          documents are read, the root is recognised, its record built and its decision put on a copy;
  (rt1)   the same at sample rate 1 with a metric that does nothing: the root is also handed to the
          background worker, which scores it and exports the scored copy from its own thread.

It prints the median time per call and per span of each, the processor's added cost per span, and the ratio
of each to (base) (goal: <= 1.1), twice: as CPU time of the process (all its threads: LangChain runs a
chain's parallel branches in a thread pool, and (rt1)'s background scoring is counted too) and as wall time.
The variants take turns call by call, so a busy neighbour or the garbage collector slows all alike; on a
busy machine the figures still move by a few percent from run to run. No assertion: this is a measurement,
the tests check behaviour.

Usage: ``.venv/bin/python bench/instrumented_overhead.py [--calls 1500]``
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from ragtrace import ScoringSpanProcessor
from ragtrace._record import RagRecord
from ragtrace.metrics._base import Score

QUERY = "How do I rotate the API keys of a service account?"
ANSWER = "Open the console, pick the account, choose Keys, then Rotate."
DOCUMENTS = [Document(f"{i} rotate keys account " + "lorem ipsum " * 85, metadata={"id": f"doc-{i}"}) for i in range(5)]
SPANS_PER_CALL = 9


class Retriever(BaseRetriever):
    """The five documents, best first (a keyword retriever with nothing to rank)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = set(re.findall(r"\w+", query.lower()))
        return [d for d in DOCUMENTS if words & set(d.page_content.split())]


def chain() -> Runnable[Any, Any]:
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    llm = FakeListChatModel(responses=[ANSWER])
    context = Retriever() | (lambda docs: "\n".join(d.page_content for d in docs))
    return {"context": context, "question": RunnablePassthrough()} | prompt | llm | StrOutputParser()


class Drop(SpanExporter):
    """An exporter that keeps nothing: the export itself is not what is timed."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class Switch(SpanProcessor):
    """The provider's one processor, pointed at the variant being timed."""

    def __init__(self, target: SpanProcessor) -> None:
        self.target = target

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.target.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        self.target.on_end(span)


class Nothing:
    """A metric that scores 1.0 at once: the worker's hand-off is timed, not a judge."""

    name = "nothing"
    direction = "higher"
    needs: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()

    async def score(self, record: RagRecord, judge: Any) -> Score:
        return Score(self.name, 1.0)


class NoJudge:
    name = "bench:none"
    capabilities: frozenset[str] = frozenset()

    async def aclose(self) -> None:
        return None


def scoring(rate: float) -> ScoringSpanProcessor:
    return ScoringSpanProcessor(
        SimpleSpanProcessor(Drop()), judge=NoJudge(), metrics=[Nothing()], sample_rate=rate, queue_size=100_000
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1500, help="calls timed per variant")
    args = parser.parse_args(argv)
    # OpenInference reads a chat message's text through a method LangChain 1.x deprecated.
    warnings.simplefilter("ignore")
    variants: dict[str, SpanProcessor] = {
        "base": SimpleSpanProcessor(Drop()),
        "rt0": scoring(0.0),
        "rt1": scoring(1.0),
    }
    switch = Switch(variants["base"])
    provider = TracerProvider()
    provider.add_span_processor(switch)
    LangChainInstrumentor().instrument(tracer_provider=provider)
    rag = chain()
    cpu: dict[str, list[int]] = {name: [] for name in variants}
    wall: dict[str, list[int]] = {name: [] for name in variants}
    for processor in variants.values():  # warm-up
        switch.target = processor
        for _ in range(30):
            rag.invoke(QUERY)
    names = list(variants)
    for call in range(args.calls):
        # One call of each variant in turn, each turn starting with another: a busy neighbour or the garbage
        # collector slows all alike.
        for name in names[call % 3 :] + names[: call % 3]:
            switch.target = variants[name]
            for each in variants.values():  # no variant's background scoring runs into another's call
                each.force_flush()
            start_cpu, start_wall = time.process_time_ns(), time.perf_counter_ns()
            rag.invoke(QUERY)
            cpu[name].append(time.process_time_ns() - start_cpu)
            wall[name].append(time.perf_counter_ns() - start_wall)
    for processor in variants.values():
        processor.shutdown()
    print(f"OpenInference-instrumented LangChain call, {SPANS_PER_CALL} spans; median of {args.calls} calls each")
    for clock, times in (("CPU time of the process", cpu), ("wall time", wall)):
        base = statistics.median(times["base"]) / 1000
        print(f"{clock}:")
        print(f"  (base) without ragtrace:       {base:8.1f} us/call {base / SPANS_PER_CALL:7.1f} us/span")
        for name, label in (("rt0", "ragtrace, sample rate 0:"), ("rt1", "ragtrace, sample rate 1:")):
            mine = statistics.median(times[name]) / 1000
            added = (mine - base) / SPANS_PER_CALL
            print(
                f"  ({name})  {label:24s} {mine:8.1f} us/call {mine / SPANS_PER_CALL:7.1f} us/span"
                f"  added {added:+6.1f} us/span  ratio {mine / base:.3f}x (goal <= 1.1x)"
            )


if __name__ == "__main__":
    main()
