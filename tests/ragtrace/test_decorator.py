"""The decorators on every kind of function: spans, attributes, context, exceptions, concurrency."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.semconv.attributes.exception_attributes import EXCEPTION_STACKTRACE, EXCEPTION_TYPE
from opentelemetry.trace import StatusCode

import ragtrace
from ragtrace import _capture, semconv
from ragtrace._capture import RECORDS
from ragtrace._record import RagRecord

DOC = semconv.retrieval_document


def make_provider(exporter: InMemorySpanExporter, **kwargs: Any) -> TracerProvider:
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=100_000), **kwargs)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = make_provider(exporter)
    _capture.set_tracer_provider(provider)
    yield exporter
    _capture.set_tracer_provider(None)
    _capture.set_settings(None)
    provider.shutdown()


@pytest.fixture
def records() -> Iterator[_capture.RecordStore]:
    RECORDS.acquire()
    yield RECORDS
    RECORDS.release()


def spans_by_role(exporter: InMemorySpanExporter, role: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == role]


def only(exporter: InMemorySpanExporter, role: str) -> ReadableSpan:
    [span] = spans_by_role(exporter, role)
    return span


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def doc_texts(span: ReadableSpan) -> list[str]:
    a = attrs(span)
    out = []
    i = 0
    while DOC(i, semconv.DOCUMENT_CONTENT) in a:
        out.append(a[DOC(i, semconv.DOCUMENT_CONTENT)])
        i += 1
    return out


def record_of(span: ReadableSpan, store: _capture.RecordStore) -> RagRecord | None:
    assert span.context is not None
    return store.take(span.context.trace_id, span.context.span_id)


# --------------------------------------------------------------------------------------------------
# A small decorated app, sync and async
# --------------------------------------------------------------------------------------------------


@ragtrace.retrieve(data_source="kb")
def search(query: str) -> list[dict[str, Any]]:
    return [
        {"text": f"{query} chunk one", "id": "d1", "score": 0.9, "metadata": {"src": "a.md"}},
        {"text": f"{query} chunk two", "id": "d2", "score": 0.4},
    ]


@ragtrace.generate(model="m-1")
def write(query: str, chunks: list[dict[str, Any]]) -> str:
    return f"answer to {query} from {len(chunks)}"


@ragtrace.rag
def answer(question: str) -> str:
    return write(question, search(question))


def test_sync_rag_retrieve_generate_spans_and_attributes(
    exporter: InMemorySpanExporter, records: _capture.RecordStore
) -> None:
    assert answer("why") == "answer to why from 2"

    rag = only(exporter, semconv.ROLE_RAG)
    retriever = only(exporter, semconv.ROLE_RETRIEVE)
    llm = only(exporter, semconv.ROLE_GENERATE)
    assert rag.name == "answer"
    assert retriever.parent is not None and retriever.parent.span_id == rag.context.span_id  # type: ignore[union-attr]
    assert llm.parent is not None and llm.parent.span_id == rag.context.span_id  # type: ignore[union-attr]

    r = attrs(rag)
    assert r[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_CHAIN
    assert r[semconv.INPUT_VALUE] == "why"
    assert r[semconv.OUTPUT_VALUE] == "answer to why from 2"
    assert r[semconv.RAGTRACE_CHUNK_COUNT] == 2
    assert doc_texts(rag) == ["why chunk one", "why chunk two"]
    assert r[DOC(0, semconv.DOCUMENT_ID)] == "d1"
    assert r[DOC(1, semconv.DOCUMENT_SCORE)] == 0.4
    assert json.loads(r[DOC(0, semconv.DOCUMENT_METADATA)]) == {"src": "a.md"}
    assert r[semconv.RAGTRACE_CONTENT_CAPTURED] is True
    assert r[semconv.RAGTRACE_CONTENT_TRUNCATED] is False

    t = attrs(retriever)
    assert t[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_RETRIEVER
    assert t[semconv.GEN_AI_OPERATION_NAME] == semconv.GEN_AI_OPERATION_RETRIEVAL
    assert t[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] == "why"
    assert t[semconv.GEN_AI_DATA_SOURCE_ID] == "kb"
    assert json.loads(t[semconv.GEN_AI_RETRIEVAL_DOCUMENTS]) == [{"id": "d1", "score": 0.9}, {"id": "d2", "score": 0.4}]
    assert doc_texts(retriever) == ["why chunk one", "why chunk two"]

    g = attrs(llm)
    assert g[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_LLM
    assert g[semconv.GEN_AI_OPERATION_NAME] == semconv.GEN_AI_OPERATION_CHAT
    assert g[semconv.GEN_AI_REQUEST_MODEL] == "m-1"
    assert g[semconv.INPUT_VALUE] == "why"
    assert g[semconv.OUTPUT_VALUE] == "answer to why from 2"

    rec = record_of(rag, records)
    assert rec is not None
    assert (rec.query, rec.texts, rec.answer) == ("why", ["why chunk one", "why chunk two"], "answer to why from 2")
    assert rec.chunks[0].id == "d1" and rec.chunks[0].score == 0.9
    assert record_of(rag, records) is None  # take removes it


def test_the_record_is_in_the_store_when_a_processor_sees_the_span_end(records: _capture.RecordStore) -> None:
    seen: list[RagRecord | None] = []

    class Taker(SimpleSpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            if (span.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG:
                seen.append(record_of(span, records))

    provider = TracerProvider()
    provider.add_span_processor(Taker(InMemorySpanExporter()))

    @ragtrace.rag(tracer_provider=provider)
    def f(q: str) -> str:
        return "a"

    f("q")
    assert [r.query if r else None for r in seen] == ["q"]


async def test_coroutines(exporter: InMemorySpanExporter, records: _capture.RecordStore) -> None:
    @ragtrace.retrieve
    async def asearch(query: str) -> list[str]:
        await asyncio.sleep(0)
        return [f"{query}-1", f"{query}-2"]

    @ragtrace.rag(name="bot")
    async def abot(question: str) -> str:
        chunks = await asearch(question)
        return " ".join(chunks)

    assert await abot("q") == "q-1 q-2"
    rag = only(exporter, semconv.ROLE_RAG)
    assert rag.name == "bot"
    assert doc_texts(rag) == ["q-1", "q-2"]
    assert attrs(rag)[semconv.OUTPUT_VALUE] == "q-1 q-2"
    rec = record_of(rag, records)
    assert rec is not None and rec.texts == ["q-1", "q-2"]


def test_arguments_query_by_name_callable_answer_and_chunks(exporter: InMemorySpanExporter) -> None:
    @dataclass
    class Reply:
        text: str
        sources: list[str]

    @ragtrace.rag(query="question", answer=lambda r: r.text, chunks=lambda r: r.sources)
    def bot(user: int, question: str, *, style: str = "short") -> Reply:
        return Reply(f"re: {question}", ["s1", "s2"])

    bot(7, "positional")
    bot(user=7, question="keyword", style="long")

    @ragtrace.retrieve(query=lambda req: req["q"])
    def search2(req: dict[str, str]) -> list[str]:
        return ["x"]

    search2({"q": "from a callable"})

    rags = spans_by_role(exporter, semconv.ROLE_RAG)
    assert [attrs(s)[semconv.INPUT_VALUE] for s in rags] == ["positional", "keyword"]
    assert [attrs(s)[semconv.OUTPUT_VALUE] for s in rags] == ["re: positional", "re: keyword"]
    assert doc_texts(rags[0]) == ["s1", "s2"]
    assert attrs(only(exporter, semconv.ROLE_RETRIEVE))[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] == "from a callable"


def test_decorator_chunks_replace_the_retrievers_chunks(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag(chunks=lambda r: r[1])
    def bot(q: str) -> tuple[str, list[str]]:
        search(q)
        return "a", ["own"]

    bot("q")
    assert doc_texts(only(exporter, semconv.ROLE_RAG)) == ["own"]


def test_two_retrievers_are_gathered_in_order(exporter: InMemorySpanExporter) -> None:
    @ragtrace.retrieve
    def bm25(q: str) -> list[str]:
        return ["b1", "b2"]

    @ragtrace.rag
    def bot(q: str) -> str:
        search(q)
        bm25(q)
        return "a"

    bot("q")
    rag = only(exporter, semconv.ROLE_RAG)
    assert doc_texts(rag) == ["q chunk one", "q chunk two", "b1", "b2"]
    assert attrs(rag)[semconv.RAGTRACE_CHUNK_COUNT] == 4


def test_record_sets_values_from_inside_the_call(exporter: InMemorySpanExporter, records: _capture.RecordStore) -> None:
    @ragtrace.rag
    def bot(payload: dict[str, str]) -> dict[str, str]:
        assert ragtrace.record(query=payload["q"], reference="gold", metadata={"user": "u1"})
        search(payload["q"])
        assert ragtrace.record(chunks=["extra"], metadata={"tier": 2})
        assert ragtrace.record(answer="final")
        return {"answer": "ignored"}

    bot({"q": "hello"})
    rag = only(exporter, semconv.ROLE_RAG)
    a = attrs(rag)
    assert a[semconv.INPUT_VALUE] == "hello"
    assert a[semconv.OUTPUT_VALUE] == "final"
    assert a[semconv.RAGTRACE_REFERENCE] == "gold"
    assert json.loads(a[semconv.METADATA]) == {"user": "u1", "tier": 2}
    assert doc_texts(rag) == ["hello chunk one", "hello chunk two", "extra"]
    rec = record_of(rag, records)
    assert rec is not None
    assert (rec.query, rec.answer, rec.reference) == ("hello", "final", "gold")
    assert rec.texts[-1] == "extra"
    assert dict(rec.metadata) == {"user": "u1", "tier": 2}


def test_record_of_unreadable_values_records_placeholders_and_never_raises(exporter: InMemorySpanExporter) -> None:
    view = memoryview(b"abc")
    view.release()

    @ragtrace.rag
    def bot(q: str) -> str:
        assert ragtrace.record(chunks=view, query=view, answer=view) is True
        return "a"

    assert bot("q") == "a"
    a = attrs(only(exporter, semconv.ROLE_RAG))
    placeholder = "<unprintable builtins.memoryview>"
    assert (a[DOC(0, semconv.DOCUMENT_CONTENT)], a[semconv.INPUT_VALUE], a[semconv.OUTPUT_VALUE]) == (placeholder,) * 3


def test_record_outside_a_rag_call_does_nothing(exporter: InMemorySpanExporter) -> None:
    assert ragtrace.record(query="lost") is False
    with pytest.raises(TypeError, match="mapping"):
        ragtrace.record(metadata=["not", "a", "mapping"])  # type: ignore[arg-type]


def test_generate_answer_is_the_rag_answer_when_the_rag_returns_none(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag
    def bot(q: str) -> None:
        write(q, [])

    bot("q")
    assert attrs(only(exporter, semconv.ROLE_RAG))[semconv.OUTPUT_VALUE] == "answer to q from 0"


# --------------------------------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------------------------------


def test_generator_accumulates_the_answer_and_is_not_current_across_yield(
    exporter: InMemorySpanExporter, records: _capture.RecordStore
) -> None:
    inside: list[int] = []

    @ragtrace.rag
    def stream(q: str) -> Iterator[str]:
        search(q)
        for piece in ("Hel", "lo"):
            inside.append(trace.get_current_span().get_span_context().span_id)
            yield piece

    outside = []
    result = []
    for piece in stream("q"):
        outside.append(trace.get_current_span().get_span_context().span_id)
        result.append(piece)
    assert result == ["Hel", "lo"]
    rag = only(exporter, semconv.ROLE_RAG)
    assert set(inside) == {rag.context.span_id}  # type: ignore[union-attr]
    assert rag.context.span_id not in outside  # type: ignore[union-attr]
    assert attrs(rag)[semconv.OUTPUT_VALUE] == "Hello"
    assert only(exporter, semconv.ROLE_RETRIEVE).parent.span_id == rag.context.span_id  # type: ignore[union-attr]
    rec = record_of(rag, records)
    assert rec is not None and rec.answer == "Hello" and len(rec.chunks) == 2


def test_generator_closed_early_ends_the_span_with_the_partial_answer(exporter: InMemorySpanExporter) -> None:
    closed = []

    @ragtrace.generate
    def stream(q: str) -> Iterator[str]:
        try:
            yield "a"
            yield "b"
            yield "c"
        finally:
            closed.append(True)

    gen = stream("q")
    assert next(gen) == "a"
    assert exporter.get_finished_spans() == ()
    gen.close()
    assert closed == [True]
    span = only(exporter, semconv.ROLE_GENERATE)
    assert attrs(span)[semconv.OUTPUT_VALUE] == "a"
    assert span.status.status_code is StatusCode.UNSET


def test_generator_send_throw_and_return_value_pass_through(exporter: InMemorySpanExporter) -> None:
    @ragtrace.generate
    def echo(q: str) -> Any:
        received = yield "ready"
        try:
            yield f"got {received}"
        except KeyError:
            yield "handled"
        return "done"

    gen = echo("q")
    assert next(gen) == "ready"
    assert gen.send("x") == "got x"
    assert gen.throw(KeyError("k")) == "handled"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value == "done"
    assert attrs(only(exporter, semconv.ROLE_GENERATE))[semconv.OUTPUT_VALUE] == "readygot xhandled"


def test_generator_answer_callable_reads_stream_events(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag(answer=lambda event: event.get("delta"))
    def stream(q: str) -> Iterator[dict[str, str]]:
        yield {"delta": "one "}
        yield {"other": "x"}
        yield {"delta": "two"}

    assert len(list(stream("q"))) == 3
    assert attrs(only(exporter, semconv.ROLE_RAG))[semconv.OUTPUT_VALUE] == "one two"


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_a_byte_stream_split_inside_a_character_is_decoded_whole(exporter: InMemorySpanExporter, size: int) -> None:
    data = "Grüße, 日本 🙂".encode()

    @ragtrace.generate
    def stream(q: str) -> Iterator[bytes]:
        for i in range(0, len(data), size):
            yield data[i : i + size]

    assert b"".join(stream("q")) == data
    assert attrs(only(exporter, semconv.ROLE_GENERATE))[semconv.OUTPUT_VALUE] == "Grüße, 日本 🙂"


def test_a_byte_stream_ending_inside_a_character_marks_it_replaced(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag
    def stream(q: str) -> Iterator[bytes]:
        yield b"ok "
        yield "日".encode()[:2]

    list(stream("q"))
    assert attrs(only(exporter, semconv.ROLE_RAG))[semconv.OUTPUT_VALUE] == "ok \ufffd"


def test_retriever_generator_yields_chunks(exporter: InMemorySpanExporter) -> None:
    @ragtrace.retrieve
    def stream_search(q: str) -> Iterator[Any]:
        yield "c1"
        yield ("c2", 0.5)

    @ragtrace.rag
    def bot(q: str) -> str:
        return "+".join(item if isinstance(item, str) else item[0] for item in stream_search(q))

    assert bot("q") == "c1+c2"
    retriever = only(exporter, semconv.ROLE_RETRIEVE)
    assert doc_texts(retriever) == ["c1", "c2"]
    assert attrs(retriever)[DOC(1, semconv.DOCUMENT_SCORE)] == 0.5
    assert doc_texts(only(exporter, semconv.ROLE_RAG)) == ["c1", "c2"]


async def test_async_generator_streams_and_closes_early(
    exporter: InMemorySpanExporter, records: _capture.RecordStore
) -> None:
    @ragtrace.rag
    async def astream(q: str) -> AsyncIterator[str]:
        for piece in ("x", "y", "z"):
            await asyncio.sleep(0)
            yield piece

    assert [p async for p in astream("full")] == ["x", "y", "z"]

    agen = astream("early")
    assert await agen.__anext__() == "x"
    assert trace.get_current_span().get_span_context().is_valid is False
    await agen.aclose()  # type: ignore[attr-defined]

    spans = spans_by_role(exporter, semconv.ROLE_RAG)
    assert [attrs(s)[semconv.OUTPUT_VALUE] for s in spans] == ["xyz", "x"]
    assert [getattr(record_of(s, records), "answer", None) for s in spans] == ["xyz", "x"]
    # Only the stream closed early says its answer is partial.
    assert [attrs(s).get(semconv.RAGTRACE_ANSWER_PARTIAL) for s in spans] == [None, True]


def test_rag_generator_closed_early_marks_its_answer_partial(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag
    def stream(q: str) -> Iterator[str]:
        yield from ("a", "b", "c")

    assert list(stream("whole")) == ["a", "b", "c"]
    early = stream("early")
    assert next(early) == "a"
    early.close()

    spans = spans_by_role(exporter, semconv.ROLE_RAG)
    assert [attrs(s)[semconv.OUTPUT_VALUE] for s in spans] == ["abc", "a"]
    assert [attrs(s).get(semconv.RAGTRACE_ANSWER_PARTIAL) for s in spans] == [None, True]
    assert [ragtrace.Rule.partial_answer().predicate(s, None) for s in spans] == [False, True]
    assert ragtrace.Rule.parse("partial_answer").name == "partial_answer"


async def test_async_generator_exception_mid_stream(exporter: InMemorySpanExporter) -> None:
    boom = ValueError("mid-stream")

    @ragtrace.generate
    async def astream(q: str) -> AsyncIterator[str]:
        yield "partial"
        raise boom

    got = []
    with pytest.raises(ValueError) as caught:
        async for piece in astream("q"):
            got.append(piece)
    assert caught.value is boom
    span = only(exporter, semconv.ROLE_GENERATE)
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)[semconv.OUTPUT_VALUE] == "partial"


# --------------------------------------------------------------------------------------------------
# Exceptions and signatures
# --------------------------------------------------------------------------------------------------


class AppError(Exception):
    pass


def test_exceptions_are_reraised_unchanged_and_recorded(
    exporter: InMemorySpanExporter, records: _capture.RecordStore
) -> None:
    error = AppError("no index")

    @ragtrace.rag
    def bot(q: str) -> str:
        search(q)
        raise error

    with pytest.raises(AppError) as caught:
        bot("q")
    assert caught.value is error
    rag = only(exporter, semconv.ROLE_RAG)
    assert rag.status.status_code is StatusCode.ERROR
    assert "AppError" in (rag.status.description or "")
    [event] = rag.events
    assert event.name == "exception"
    assert (event.attributes or {})[EXCEPTION_TYPE].endswith("AppError")
    assert attrs(rag)[semconv.INPUT_VALUE] == "q"
    assert doc_texts(rag) == ["q chunk one", "q chunk two"]  # what was gathered stays visible
    assert record_of(rag, records) is None  # a call that raised is not scored


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")


@pytest.mark.parametrize("redact", [None, lambda text: text])
def test_an_exception_whose_str_raises_still_marks_the_span(exporter: InMemorySpanExporter, redact: Any) -> None:
    _capture.set_settings(_capture.CaptureSettings(redact=redact))
    error = Unprintable()

    @ragtrace.rag
    def bot(q: str) -> str:
        raise error

    with pytest.raises(Unprintable) as caught:
        bot("q")
    assert caught.value is error
    rag = only(exporter, semconv.ROLE_RAG)
    assert rag.status.status_code is StatusCode.ERROR
    assert rag.status.description == "Unprintable"
    [event] = rag.events
    assert event.name == "exception"
    event_attributes = event.attributes or {}
    assert event_attributes[EXCEPTION_TYPE] == f"{__name__}.Unprintable"
    assert event_attributes[semconv.EXCEPTION_MESSAGE] == ""
    assert "raise error" in str(event_attributes[EXCEPTION_STACKTRACE])
    assert attrs(rag)[semconv.INPUT_VALUE] == "q"  # what was captured is still on the span


async def test_async_exceptions_and_generator_exceptions(exporter: InMemorySpanExporter) -> None:
    error = AppError("async")

    @ragtrace.retrieve
    async def failing(q: str) -> list[str]:
        raise error

    @ragtrace.retrieve
    def failing_gen(q: str) -> Iterator[str]:
        yield "first"
        raise error

    with pytest.raises(AppError) as caught:
        await failing("q")
    assert caught.value is error
    with pytest.raises(AppError) as caught2:
        list(failing_gen("q"))
    assert caught2.value is error
    spans = spans_by_role(exporter, semconv.ROLE_RETRIEVE)
    assert [s.status.status_code for s in spans] == [StatusCode.ERROR, StatusCode.ERROR]
    assert all(s.events[0].name == "exception" for s in spans)


def test_signatures_names_and_kinds_are_preserved() -> None:
    def plain(question: str, k: int = 3) -> str:
        """Doc."""
        return question

    async def coro(question: str) -> str:
        return question

    def gen(question: str) -> Iterator[str]:
        yield question

    async def agen(question: str) -> AsyncIterator[str]:
        yield question

    for fn, check in (
        (plain, inspect.isfunction),
        (coro, inspect.iscoroutinefunction),
        (gen, inspect.isgeneratorfunction),
        (agen, inspect.isasyncgenfunction),
    ):
        for decorator in (ragtrace.rag, ragtrace.retrieve, ragtrace.generate, ragtrace.rag(name="x")):
            wrapped = decorator(fn)
            assert check(wrapped), (fn, decorator)
            assert inspect.signature(wrapped) == inspect.signature(fn)
            assert wrapped.__name__ == fn.__name__ and wrapped.__doc__ == fn.__doc__
            assert wrapped.__wrapped__ is fn


# --------------------------------------------------------------------------------------------------
# Methods, nesting
# --------------------------------------------------------------------------------------------------


def test_methods_classmethods_and_staticmethods(exporter: InMemorySpanExporter) -> None:
    class Bot:
        prefix = "cls"

        def __init__(self) -> None:
            self.prefix = "inst"

        @ragtrace.rag
        def ask(self, question: str) -> str:
            return f"{self.prefix}:{question}"

        @classmethod
        @ragtrace.rag(query="question")
        def ask_cls(cls, question: str) -> str:
            return f"{cls.prefix}:{question}"

        @ragtrace.rag
        @classmethod
        def ask_cls_outer(cls, question: str) -> str:
            return f"{cls.prefix}:{question}"

        @ragtrace.retrieve
        @staticmethod
        def lookup(question: str) -> list[str]:
            return [question]

    bot = Bot()
    assert bot.ask("a") == "inst:a"
    assert Bot.ask_cls("b") == "cls:b"
    assert Bot.ask_cls_outer("c") == "cls:c"
    assert Bot.lookup("d") == ["d"]
    rags = spans_by_role(exporter, semconv.ROLE_RAG)
    assert [s.name for s in rags] == ["Bot.ask", "Bot.ask_cls", "Bot.ask_cls_outer"]
    assert [attrs(s)[semconv.INPUT_VALUE] for s in rags] == ["a", "b", "c"]
    assert attrs(only(exporter, semconv.ROLE_RETRIEVE))[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] == "d"


def test_nested_rag_calls_keep_their_own_chunks(exporter: InMemorySpanExporter, records: _capture.RecordStore) -> None:
    @ragtrace.rag(name="inner")
    def inner(q: str) -> str:
        search(f"inner {q}")
        return "inner answer"

    @ragtrace.rag(name="outer")
    def outer(q: str) -> str:
        search(f"outer {q}")
        inner(q)
        return "outer answer"

    outer("q")
    by_name = {s.name: s for s in spans_by_role(exporter, semconv.ROLE_RAG)}
    assert doc_texts(by_name["outer"]) == ["outer q chunk one", "outer q chunk two"]
    assert doc_texts(by_name["inner"]) == ["inner q chunk one", "inner q chunk two"]
    assert by_name["inner"].parent.span_id == by_name["outer"].context.span_id  # type: ignore[union-attr]
    inner_record = record_of(by_name["inner"], records)
    assert inner_record is not None and inner_record.answer == "inner answer"


@pytest.mark.parametrize("inner_provider", ["sampled out", "no-op"])
def test_a_nested_rag_call_that_does_not_record_adds_nothing_to_the_outer_call(
    exporter: InMemorySpanExporter, inner_provider: str
) -> None:
    provider = (
        make_provider(InMemorySpanExporter(), sampler=ALWAYS_OFF)
        if inner_provider == "sampled out"
        else trace.NoOpTracerProvider()
    )
    recorded: list[bool] = []

    @ragtrace.rag(name="inner", tracer_provider=provider)
    def inner(q: str) -> str:
        search(f"inner {q}")
        recorded.append(ragtrace.record(chunks=["inner recorded"], answer="inner answer"))
        return "inner answer"

    @ragtrace.rag(name="outer")
    def outer(q: str) -> str:
        search(f"outer {q}")
        inner(q)
        return "outer answer"

    outer("q")
    rag = only(exporter, semconv.ROLE_RAG)
    assert doc_texts(rag) == ["outer q chunk one", "outer q chunk two"]
    assert attrs(rag)[semconv.RAGTRACE_CHUNK_COUNT] == 2
    assert attrs(rag)[semconv.OUTPUT_VALUE] == "outer answer"
    assert recorded == [False]  # record() under a RAG call that does not record does nothing


# --------------------------------------------------------------------------------------------------
# Concurrency: no span ever holds another call's chunks
# --------------------------------------------------------------------------------------------------


@ragtrace.retrieve
async def tagged_search(tag: str) -> list[str]:
    await asyncio.sleep(0)
    return [f"{tag}/a", f"{tag}/b"]


@ragtrace.rag
async def tagged_bot(tag: str) -> str:
    first = await tagged_search(tag)
    await asyncio.sleep(0)
    ragtrace.record(chunks=[f"{tag}/extra"])
    await asyncio.sleep(0)
    return f"{tag}:{len(first)}"


def assert_each_rag_span_holds_only_its_own(exporter: InMemorySpanExporter, n: int) -> None:
    rags = spans_by_role(exporter, semconv.ROLE_RAG)
    assert len(rags) == n
    seen = set()
    for span in rags:
        tag = attrs(span)[semconv.INPUT_VALUE]
        assert doc_texts(span) == [f"{tag}/a", f"{tag}/b", f"{tag}/extra"]
        assert attrs(span)[semconv.OUTPUT_VALUE] == f"{tag}:2"
        seen.add(tag)
    assert len(seen) == n
    for retriever in spans_by_role(exporter, semconv.ROLE_RETRIEVE):
        parent = next(s for s in rags if s.context.span_id == retriever.parent.span_id)  # type: ignore[union-attr]
        assert doc_texts(retriever)[0].split("/")[0] == attrs(parent)[semconv.INPUT_VALUE]


async def test_100_concurrent_asyncio_tasks(exporter: InMemorySpanExporter) -> None:
    answers = await asyncio.gather(*(tagged_bot(f"task{i}") for i in range(100)))
    assert answers == [f"task{i}:2" for i in range(100)]
    assert_each_rag_span_holds_only_its_own(exporter, 100)


def test_8_threads(exporter: InMemorySpanExporter) -> None:
    barrier = threading.Barrier(8)

    @ragtrace.retrieve
    def thread_search(tag: str) -> list[str]:
        barrier.wait(timeout=10)  # all eight calls are inside a RAG span at once
        return [f"{tag}/a", f"{tag}/b"]

    @ragtrace.rag
    def thread_bot(tag: str) -> str:
        first = thread_search(tag)
        ragtrace.record(chunks=[f"{tag}/extra"])
        return f"{tag}:{len(first)}"

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(thread_bot, [f"thread{i}" for i in range(8)]))
    assert answers == [f"thread{i}:2" for i in range(8)]
    assert_each_rag_span_holds_only_its_own(exporter, 8)


# --------------------------------------------------------------------------------------------------
# Providers, no SDK, misconfiguration, hostile return values
# --------------------------------------------------------------------------------------------------


def test_without_a_recording_span_the_function_just_runs(records: _capture.RecordStore) -> None:
    exporter = InMemorySpanExporter()
    sampled_out = make_provider(exporter, sampler=ALWAYS_OFF)
    current: list[bool] = []

    @ragtrace.rag(tracer_provider=sampled_out)
    def bot(q: str) -> str:
        current.append(trace.get_current_span().get_span_context().is_valid)
        return "a" if ragtrace.record(answer="x") else "b"

    @ragtrace.rag(tracer_provider=trace.NoOpTracerProvider())
    def noop_bot(q: str) -> str:
        return "a" if ragtrace.record(answer="x") else "b"

    assert bot("q") == "b"
    assert noop_bot("q") == "b"
    assert current == [True]  # the sampled-out span is still current, so children keep its trace
    assert exporter.get_finished_spans() == ()
    assert len(records) == 0


def test_decorator_provider_wins_over_the_injected_one(exporter: InMemorySpanExporter) -> None:
    own = InMemorySpanExporter()

    @ragtrace.generate(tracer_provider=make_provider(own))
    def g(q: str) -> str:
        return "a"

    g("q")
    assert len(own.get_finished_spans()) == 1
    assert exporter.get_finished_spans() == ()


def test_misconfiguration_raises_at_decoration_time() -> None:
    def f(question: str) -> str:
        return question

    with pytest.raises(ragtrace.ConfigurationError, match="use one of"):
        ragtrace.rag(query="query")(f)
    with pytest.raises(ragtrace.ConfigurationError, match="callable"):
        ragtrace.rag(answer="text")(f)  # type: ignore[arg-type]
    with pytest.raises(ragtrace.ConfigurationError, match="data_source"):
        ragtrace.retrieve(data_source=3)  # type: ignore[arg-type]
    with pytest.raises(ragtrace.ConfigurationError, match="TracerProvider"):
        ragtrace.generate(tracer_provider="global")  # type: ignore[arg-type]
    with pytest.raises(ragtrace.ConfigurationError, match="name"):
        ragtrace.rag(name="")(f)


def test_failing_extractors_and_odd_returns_never_break_the_call(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag(query=lambda q: q.missing, answer=lambda r: r["nope"], chunks=lambda r: 1 / 0)
    def bot(q: str) -> object:
        return object()

    @ragtrace.retrieve
    def weird(q: str) -> Iterator[str]:
        return iter(["kept", "for", "the", "app"])

    sentinel = bot("q")
    assert sentinel is not None
    assert list(weird("q")) == ["kept", "for", "the", "app"]  # the one-shot iterator was not consumed
    rag = only(exporter, semconv.ROLE_RAG)
    assert semconv.INPUT_VALUE not in attrs(rag) and semconv.OUTPUT_VALUE not in attrs(rag)
    assert attrs(only(exporter, semconv.ROLE_RETRIEVE))[semconv.RAGTRACE_CHUNK_COUNT] == 0


def test_role_and_kind_survive_the_sdk_attribute_count_limit(exporter: InMemorySpanExporter) -> None:
    small = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=20))
    provider.add_span_processor(SimpleSpanProcessor(small))

    @ragtrace.rag(tracer_provider=provider, chunks=lambda r: r)
    def bot(q: str) -> list[str]:
        return [f"c{i}" for i in range(50)]

    bot("q")
    [span] = small.get_finished_spans()
    a = attrs(span)
    assert a[semconv.RAGTRACE_ROLE] == semconv.ROLE_RAG
    assert a[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_CHAIN
    assert a[semconv.INPUT_VALUE] == "q"
    assert a[semconv.RAGTRACE_CHUNK_COUNT] == 50


@pytest.mark.parametrize("limit", [32, 33, 40])
@pytest.mark.parametrize("app_attributes", [0, 3])
def test_role_and_kind_survive_any_limit_of_32_or_more_at_every_span_size(limit: int, app_attributes: int) -> None:
    small = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=limit))
    provider.add_span_processor(SimpleSpanProcessor(small))

    @ragtrace.retrieve(tracer_provider=provider, data_source="index")
    def search(q: str, n: int) -> list[dict[str, Any]]:
        return [{"text": f"c{i}", "id": str(i), "score": 0.5, "metadata": {"f": i}} for i in range(n)]

    @ragtrace.rag(tracer_provider=provider)
    def bot(q: str, n: int) -> None:
        for i in range(app_attributes):
            trace.get_current_span().set_attribute(f"app.{i}", i)
        search(q, n)

    for n in range(13):  # 4 attributes a chunk: the spans cross the limit at every offset
        bot("q", n)
    for span in small.get_finished_spans():
        a = attrs(span)
        assert a.get(semconv.RAGTRACE_ROLE) in (semconv.ROLE_RAG, semconv.ROLE_RETRIEVE), (span.name, len(a))
        assert semconv.OPENINFERENCE_SPAN_KIND in a, (span.name, len(a))
    provider.shutdown()


async def test_retrievers_in_tasks_inside_a_rag_call_are_gathered(exporter: InMemorySpanExporter) -> None:
    @ragtrace.rag
    async def fan_out(tag: str) -> str:
        results = await asyncio.gather(tagged_search(f"{tag}-x"), asyncio.create_task(tagged_search(f"{tag}-y")))
        return str(len(results))

    await fan_out("t")
    assert sorted(doc_texts(only(exporter, semconv.ROLE_RAG))) == ["t-x/a", "t-x/b", "t-y/a", "t-y/b"]


def test_a_thread_running_in_a_copied_context_adds_to_the_rag_call(exporter: InMemorySpanExporter) -> None:
    import contextvars

    @ragtrace.rag
    def bot(q: str) -> str:
        with ThreadPoolExecutor(max_workers=2) as pool:
            pool.submit(contextvars.copy_context().run, search, q).result()
            pool.submit(search, "no context").result()  # a bare thread pool does not carry the call
        return "a"

    bot("q")
    rag = only(exporter, semconv.ROLE_RAG)
    assert doc_texts(rag) == ["q chunk one", "q chunk two"]
    assert len(spans_by_role(exporter, semconv.ROLE_RETRIEVE)) == 2


async def test_callable_objects_with_async_call(exporter: InMemorySpanExporter) -> None:
    class Retriever:
        async def __call__(self, query: str) -> list[str]:
            return [query]

    wrapped = ragtrace.retrieve(Retriever())
    assert inspect.iscoroutinefunction(wrapped)
    assert await wrapped("q") == ["q"]
    assert doc_texts(only(exporter, semconv.ROLE_RETRIEVE)) == ["q"]


def test_an_abandoned_generator_ends_its_span_when_collected(exporter: InMemorySpanExporter) -> None:
    import gc

    @ragtrace.generate
    def stream(q: str) -> Iterator[str]:
        yield "one"
        yield "two"

    gen = stream("q")
    next(gen)
    del gen
    gc.collect()
    assert attrs(only(exporter, semconv.ROLE_GENERATE))[semconv.OUTPUT_VALUE] == "one"


def test_without_an_sdk_no_extractor_runs() -> None:
    calls: list[str] = []

    def spy(label: str) -> Any:
        def extractor(*args: Any, **kwargs: Any) -> Any:
            calls.append(label)
            return "x"

        return extractor

    @ragtrace.rag(
        query=spy("query"),
        answer=spy("answer"),
        chunks=spy("chunks"),
        tracer_provider=trace.NoOpTracerProvider(),
    )
    def bot(q: str) -> str:
        return q

    @ragtrace.generate(answer=spy("stream"), tracer_provider=trace.NoOpTracerProvider())
    def stream(q: str) -> Iterator[str]:
        yield q

    assert bot("q") == "q"
    assert list(stream("q")) == ["q"]
    assert calls == []


def test_a_broken_sdk_or_settings_never_breaks_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    class BrokenTracer(trace.NoOpTracer):
        def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
            raise RuntimeError("processor exploded")

    class BrokenProvider(trace.NoOpTracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            return BrokenTracer()

    @ragtrace.rag(tracer_provider=BrokenProvider())
    def bot(q: str) -> str:
        return f"fine {q}"

    assert bot("q") == "fine q"

    exporter = InMemorySpanExporter()

    @ragtrace.rag(tracer_provider=make_provider(exporter))
    def bot2(q: str) -> str:
        return "fine"

    def broken_settings() -> Any:
        raise ragtrace.ConfigurationError("RAGTRACE_MAX_RECORD_CHUNKS='x' is not an integer")

    monkeypatch.setattr(_capture, "get_settings", broken_settings)
    assert bot2("q") == "fine"
    [span] = exporter.get_finished_spans()
    assert semconv.INPUT_VALUE not in attrs(span)


def test_a_span_processor_raising_on_end_never_breaks_the_call() -> None:
    class Raising(SimpleSpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            raise RuntimeError("exporter bug")

    provider = TracerProvider()
    provider.add_span_processor(Raising(InMemorySpanExporter()))

    @ragtrace.retrieve(tracer_provider=provider)
    def search_ok(q: str) -> list[str]:
        return [q]

    assert search_ok("q") == ["q"]
