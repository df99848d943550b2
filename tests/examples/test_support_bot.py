"""The support bot example: its corpus, retrieval, extractive generator, degrade switch, and traced endpoint."""

from __future__ import annotations

import json
import random
import re
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
import uvicorn
from opentelemetry.sdk.trace import ReadableSpan
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from examples._harness import free_port
from examples.support_bot import (
    LLM_BASE_URL,
    LLM_MODEL,
    Corpus,
    DegradeSwitch,
    Document,
    ExtractiveGenerator,
    Fabricator,
    OpenAIGenerator,
    Retriever,
    SupportBot,
    ask,
    load_corpus,
    split_paragraphs,
)
from examples.support_bot._app import create_app
from ragtrace import semconv
from ragtrace.judges import Verdict
from ragtrace.testing import Captured, FakeJudge, capture


def bag_of_words(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """A deterministic stand-in embedder: hashed word counts (cosine = word overlap)."""
    out = np.zeros((len(texts), 4096), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            out[row, zlib.crc32(word.encode()) % 4096] += 1.0
    return out


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return load_corpus()


# ------------------------------------------------------------------ corpus


def test_split_paragraphs_cuts_where_halueval_glued_paragraphs() -> None:
    text = 'Arthur\'s Magazine (1844) was published in Philadelphia.First for Women is a magazine."Quoted" title here.'
    assert split_paragraphs(text) == [
        "Arthur's Magazine (1844) was published in Philadelphia.",
        "First for Women is a magazine.",
        '"Quoted" title here.',
    ]
    # An ordinary sentence boundary (full stop, space) is not a paragraph boundary.
    assert split_paragraphs("One sentence. Another one.") == ["One sentence. Another one."]


def test_shipped_corpus_has_documents_for_every_question(corpus: Corpus) -> None:
    assert len(corpus.questions) == 300
    ids = {d.id for d in corpus.documents}
    assert len(ids) == len(corpus.documents) > len(corpus.questions)
    for question in corpus.questions:
        assert question.document_ids
        assert set(question.document_ids) <= ids


def test_load_corpus_names_the_line_of_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    good = {"id": "a", "question": "q?", "answer": "x", "knowledge": "Some text."}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"id": "b", "question": "q?"}) + "\n")
    with pytest.raises(ValueError, match=r"rows\.jsonl:3: .*answer, knowledge"):
        load_corpus(path)
    assert len(load_corpus(path, limit=1).questions) == 1


# ------------------------------------------------------------------ retrieval


def test_retriever_ranks_by_cosine_best_first() -> None:
    docs = [
        Document(id="d0", text="the capital of France is Paris", source="s"),
        Document(id="d1", text="bananas are yellow fruit", source="s"),
        Document(id="d2", text="Paris hosts the Louvre museum", source="s"),
    ]
    retriever = Retriever(docs, bag_of_words)
    hits = retriever.search("Paris, capital of France", k=2)
    assert [h.document.id for h in hits] == ["d0", "d2"]
    assert hits[0].score > hits[1].score
    assert retriever.search("bananas", k=1)[0].document.id == "d1"
    chunk = hits[0].as_chunk()
    assert chunk["id"] == "d0" and chunk["text"] == docs[0].text and chunk["metadata"] == {"source": "s"}
    with pytest.raises(ValueError, match="k must be at least 1"):
        retriever.search("x", k=0)
    with pytest.raises(ValueError, match="at least one document"):
        Retriever([], bag_of_words)


@pytest.mark.slow
def test_offline_embeddings_retrieve_the_documents_that_hold_the_answer(corpus: Corpus) -> None:
    offline = pytest.importorskip("ragtrace.judges.offline")
    small = load_corpus(limit=60)
    retriever = Retriever(small.documents, offline.embed_texts)
    found = sum(any(h.document.id in q.document_ids for h in retriever.search(q.text, k=3)) for q in small.questions)
    assert found / len(small.questions) >= 0.9


# ------------------------------------------------------------------ generation


def test_extractive_answer_is_copied_from_the_chunks_and_holds_the_answer() -> None:
    chunks = [
        "The Oberoi family is an Indian family famous for hotels. It owns The Oberoi Group.",
        "The Oberoi Group is a hotel company with its head office in Delhi. It was founded in 1934.",
        "Bananas are yellow.",
    ]
    answer = ExtractiveGenerator().answer("The Oberoi Group has a head office in what city?", chunks)
    assert "Delhi" in answer
    assert "Bananas" not in answer
    for sentence in re.split(r"(?<=\.) ", answer):
        assert any(sentence in chunk for chunk in chunks)
    assert ExtractiveGenerator().answer("anything?", []) == ""


async def test_extractive_stream_reassembles_to_the_answer() -> None:
    generator = ExtractiveGenerator(sentences=1)
    chunks = ["Paris is the capital of France. Lyon is a city."]
    pieces = [p async for p in generator.stream("What is the capital of France?", chunks)]
    assert len(pieces) > 1
    assert "".join(pieces) == generator.answer("What is the capital of France?", chunks)


def test_extractive_answers_most_shipped_questions_correctly(corpus: Corpus) -> None:
    # Retrieval is taken as perfect here (the question's own documents) so this measures the generator.
    by_id = {d.id: d for d in corpus.documents}
    generator = ExtractiveGenerator()
    open_questions = [q for q in corpus.questions if q.answer.casefold() not in ("yes", "no")]
    correct = sum(
        q.answer.casefold() in generator.answer(q.text, [by_id[i].text for i in q.document_ids]).casefold()
        for q in open_questions
    )
    assert correct / len(open_questions) >= 0.85  # 241 of 276 when this was written


def test_fabricator_changes_names_numbers_and_dates_and_adds_a_fact() -> None:
    fabricator = Fabricator(["Ada Lovelace", "Grace Hopper", "Alan Turing"])
    answer = "Charles Babbage designed the engine in 1837 in London. It had 2 parts."
    invented = fabricator.invent(answer, random.Random(3))
    assert "Charles Babbage" not in invented
    assert "1837" not in invented
    first_sentence = invented.split(". ")[0]
    assert re.search(r"\b1[5-9]\d\d|20\d\d\b", first_sentence)  # still a year, a different one
    assert "This was confirmed by" in invented
    assert invented == fabricator.invent(answer, random.Random(3))
    assert invented != fabricator.invent(answer, random.Random(4))
    with pytest.raises(ValueError, match="at least two names"):
        Fabricator(["Only One"])


def test_fabricator_name_pool_comes_from_documents() -> None:
    fabricator = Fabricator.from_texts(["Ada Lovelace met Charles Babbage.", "Grace Hopper wrote code."])
    invented = fabricator.invent("Alan Turing was born in 1912.", random.Random(0))
    assert "Alan Turing" not in invented
    assert any(name in invented for name in ("Ada Lovelace", "Charles Babbage", "Grace Hopper"))


# ------------------------------------------------------------------ degrade switch


def test_degrade_switch_is_off_before_the_threshold_and_reproducible() -> None:
    switch = DegradeSwitch(after=10, rate=0.5, seed=1)
    assert not any(switch.degraded(i) for i in range(10))
    after = [switch.degraded(i) for i in range(10, 410)]
    assert 0.4 < sum(after) / len(after) < 0.6
    assert after == [DegradeSwitch(after=10, rate=0.5, seed=1).degraded(i) for i in range(10, 410)]
    assert all(DegradeSwitch(after=0, rate=1.0).degraded(i) for i in range(50))
    assert not any(DegradeSwitch(after=0, rate=0.0).degraded(i) for i in range(50))
    assert not any(DegradeSwitch().degraded(i) for i in range(50))
    with pytest.raises(ValueError, match="degrade_rate"):
        DegradeSwitch(after=1, rate=1.5)
    with pytest.raises(ValueError, match="degrade_after"):
        DegradeSwitch(after=-1)


# ------------------------------------------------------------------ the traced bot


@pytest.fixture
def spans() -> Iterator[Captured]:
    """ragtrace's in-memory set-up, scoring nothing (the global provider is never touched)."""
    with capture(FakeJudge(), sample_rate=0.0) as captured:
        yield captured


def small_bot(degrade: DegradeSwitch | None = None) -> SupportBot:
    corpus = load_corpus(limit=20)
    return SupportBot(corpus, Retriever(corpus.documents, bag_of_words), degrade=degrade)


def by_role(finished: Sequence[ReadableSpan], role: str) -> list[ReadableSpan]:
    return [s for s in finished if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == role]


def documents_of(span: ReadableSpan) -> list[tuple[object, object]]:
    attrs = span.attributes or {}
    out: list[tuple[object, object]] = []
    for i in range(10):
        if semconv.retrieval_document(i, semconv.DOCUMENT_ID) not in attrs:
            break
        out.append(
            (
                attrs[semconv.retrieval_document(i, semconv.DOCUMENT_ID)],
                attrs[semconv.retrieval_document(i, semconv.DOCUMENT_CONTENT)],
            )
        )
    return out


async def test_one_question_makes_one_trace_with_query_chunks_and_streamed_answer(
    spans: Captured,
) -> None:
    bot = small_bot()
    question = bot.question(0)
    answer = await ask(bot, question.text)
    finished = spans.spans()
    (rag_span,) = by_role(finished, semconv.ROLE_RAG)
    (retriever,) = by_role(finished, semconv.ROLE_RETRIEVE)
    (llm,) = by_role(finished, semconv.ROLE_GENERATE)
    attrs = rag_span.attributes or {}
    assert attrs[semconv.INPUT_VALUE] == question.text
    assert attrs[semconv.OUTPUT_VALUE] == answer != ""
    assert attrs[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_CHAIN
    assert json.loads(str(attrs[semconv.METADATA])) == {"question_index": 0, "degraded": False}
    # Retriever and generator are children of the RAG span, in its trace.
    assert rag_span.context is not None
    for child in (retriever, llm):
        assert child.parent is not None and child.parent.span_id == rag_span.context.span_id
    docs = documents_of(retriever)
    assert len(docs) == bot.top_k
    assert [d[0] for d in docs] == [h.document.id for h in bot.retriever.search(question.text, bot.top_k)]
    # Every sentence of a healthy answer is copied from a retrieved chunk.
    contents = " ".join(str(d[1]) for d in docs)
    assert all(sentence in contents for sentence in re.split(r"(?<=\.) ", answer.strip()))


async def test_degraded_answers_come_from_a_document_that_was_not_retrieved(spans: Captured) -> None:
    bot = small_bot(DegradeSwitch(after=1, rate=1.0))
    healthy = await ask(bot, bot.question(0).text)
    degraded = await ask(bot, bot.question(1).text)
    assert "This was confirmed by" in degraded and "This was confirmed by" not in healthy
    rag_spans = by_role(spans.spans(), semconv.ROLE_RAG)
    assert [json.loads(str((s.attributes or {})[semconv.METADATA]))["degraded"] for s in rag_spans] == [False, True]
    retrievers = by_role(spans.spans(), semconv.ROLE_RETRIEVE)
    retrieved = " ".join(str(c) for _, c in documents_of(retrievers[1]))
    # The degraded answer's first sentence is not in any retrieved chunk.
    assert degraded.split(". ")[0] not in retrieved
    assert (rag_spans[1].attributes or {})[semconv.OUTPUT_VALUE] == degraded


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """Serve an ASGI app with uvicorn on a free loopback port from a thread; yield the port; stop it."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.01)  # waiting for the bind in the server's thread; nothing is asserted about time
        assert server.started, "uvicorn did not start"
        yield server.config.port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def grounding_judge() -> FakeJudge:
    """A scripted judge: claims are sentences; a claim is supported by a chunk that contains it verbatim."""
    return FakeJudge(
        extract_claims=lambda text, question=None: [c for c in re.split(r"(?<=\.) ", text.strip()) if c],
        verify=lambda claims, chunks: [
            [Verdict.SUPPORTED if claim in chunk else Verdict.NEITHER for chunk in chunks] for claim in claims
        ],
    )


async def _serve_and_ask(bot: SupportBot, questions: Sequence[str]) -> list[str]:
    """Serve the bot's FastAPI app on a real loopback port; POST each question and read the streamed body."""
    bodies: list[str] = []
    with serving(create_app(bot)) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10.0) as client:
            health = await client.get("/healthz")
            assert health.json()["generator"] == "extractive"
            for question in questions:
                pieces: list[str] = []
                async with client.stream("POST", "/ask", json={"question": question}) as reply:
                    assert reply.status_code == 200
                    async for text in reply.aiter_text():
                        pieces.append(text)
                bodies.append("".join(pieces))
            invalid = await client.post("/ask", json={"question": ""})
            assert invalid.status_code == 422
    return bodies


async def test_fastapi_endpoint_streams_the_answer_and_the_span_is_scored() -> None:
    bot = small_bot(DegradeSwitch(after=2, rate=1.0))
    questions = [bot.question(i).text for i in range(4)]
    with capture(grounding_judge(), metrics=["faithfulness", "hallucination"]) as captured:
        bodies = await _serve_and_ask(bot, questions)
        rag_spans = captured.rag_spans()
    assert all(bodies)
    by_query = {str((s.attributes or {})[semconv.INPUT_VALUE]): s for s in rag_spans}
    assert sorted(by_query) == sorted(questions)
    faithfulness = semconv.eval_score("faithfulness")
    for index, (question, body) in enumerate(zip(questions, bodies, strict=True)):
        attrs = by_query[question].attributes or {}
        assert attrs[semconv.OUTPUT_VALUE] == body
        assert attrs[semconv.EVAL_DECISION] == semconv.DECISION_EVALUATED
        if index < 2:  # healthy: every sentence copied from a retrieved chunk
            assert attrs[faithfulness] == 1.0
        else:  # degraded: answered from a document that was not retrieved, with invented facts
            assert attrs[faithfulness] == 0.0
            assert attrs[semconv.eval_score("hallucination")] == 1.0


# ------------------------------------------------------------------ the OpenAI-compatible generator


def streaming_chat_app(seen: list[dict[str, Any]]) -> Starlette:
    """A minimal OpenAI-compatible chat endpoint that streams (SSE) the first context passage back."""

    async def completions(request: Request) -> StreamingResponse:
        body = await request.json()
        seen.append(body)
        user = body["messages"][-1]["content"]
        passage = user.split("\n\n")[0].removeprefix("Context:\n").removeprefix("[1] ")

        async def events() -> AsyncIterator[str]:
            for piece in re.findall(r"\S+\s*", passage):
                chunk = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
                yield f"data: {json.dumps(chunk)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


async def test_openai_generator_streams_from_an_openai_compatible_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LLM_BASE_URL, raising=False)
    assert OpenAIGenerator.from_env() is None  # unset: the bot falls back to the extractive generator
    seen: list[dict[str, Any]] = []
    with serving(streaming_chat_app(seen)) as port:
        monkeypatch.setenv(LLM_BASE_URL, f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv(LLM_MODEL, "test-model")
        generator = OpenAIGenerator.from_env()
        assert generator is not None and generator.name == "openai:test-model"
        chunks = ["Paris is the capital of France.", "Lyon is a city."]
        pieces = [p async for p in generator.stream("What is the capital of France?", chunks)]
        await generator.aclose()
    assert len(pieces) > 1
    assert "".join(pieces) == "Paris is the capital of France."
    (request,) = seen
    assert request["model"] == "test-model" and request["stream"] is True
    assert "Question: What is the capital of France?" in request["messages"][-1]["content"]
