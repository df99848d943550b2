"""The support bot: retrieve, then stream an answer, each step a ragtrace-decorated function.

``answer`` is the RAG entry point (``@ragtrace.rag``): an async generator, so the answer streams to
the caller while ragtrace accumulates it for the span. ``retrieve`` (``@ragtrace.retrieve``) returns
the chunks; ``generate`` (``@ragtrace.generate``) streams the text. Nothing else in the bot knows
about tracing.

The degradation switch: from question ``degrade_after`` on, a ``degrade_rate`` share of answers are
generated from a document that was *not* retrieved and then rewritten with invented names, numbers
and dates. The retrieved chunks on the span stay the real ones, so the judge sees an answer that no
chunk supports: a hallucination spike, as a broken prompt or a swapped model would cause.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import ragtrace

from ._corpus import Corpus, Question
from ._generation import ExtractiveGenerator, Fabricator, Generator, stream_words
from ._retrieval import Retriever


@dataclass(frozen=True, slots=True)
class DegradeSwitch:
    """Which answers go wrong: from the ``after``-th question on, each with probability ``rate``.

    The draw is seeded by the question's index, so a run is reproducible and a test can tell which
    answers were degraded.
    """

    after: int | None = None
    rate: float = 0.8
    seed: int = 7

    def __post_init__(self) -> None:
        if self.after is not None and self.after < 0:
            raise ValueError(f"degrade_after must be >= 0, got {self.after}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"degrade_rate must be in [0, 1], got {self.rate}")

    def degraded(self, index: int) -> bool:
        """True when the answer to question number ``index`` (from 0) is degraded."""
        if self.after is None or index < self.after:
            return False
        return random.Random(self.seed * 1_000_003 + index).random() < self.rate


class SupportBot:
    """A RAG support bot over a shipped document set. Safe to share between asyncio tasks."""

    def __init__(
        self,
        corpus: Corpus,
        retriever: Retriever,
        generator: Generator | None = None,
        *,
        top_k: int = 3,
        degrade: DegradeSwitch | None = None,
    ) -> None:
        self.corpus = corpus
        self.retriever = retriever
        self.generator: Generator = generator or ExtractiveGenerator()
        self.top_k = top_k
        self.degrade = degrade or DegradeSwitch()
        self._fabricator = Fabricator.from_texts([d.text for d in corpus.documents])
        self._asked = 0

    @property
    def asked(self) -> int:
        """How many questions this bot has started to answer."""
        return self._asked

    @ragtrace.rag(name="support_bot.answer")
    async def answer(self, question: str) -> AsyncIterator[str]:
        """Stream the answer to ``question``; ragtrace records query, chunks and the whole answer."""
        index = self._asked
        self._asked += 1
        degraded = self.degrade.degraded(index)
        ragtrace.record(metadata={"question_index": index, "degraded": degraded})
        chunks = await self.retrieve(question)
        if degraded:
            async for piece in self._degraded_answer(question, chunks, index):
                yield piece
            return
        async for piece in self.generate(question, [str(c["text"]) for c in chunks]):
            yield piece

    @ragtrace.retrieve(name="support_bot.retrieve")
    async def retrieve(self, question: str) -> list[dict[str, object]]:
        """The ``top_k`` documents closest to the question, as chunks (text, id, score, metadata)."""
        return [hit.as_chunk() for hit in self.retriever.search(question, self.top_k)]

    @ragtrace.generate(name="support_bot.generate")
    async def generate(self, question: str, chunks: Sequence[str]) -> AsyncIterator[str]:
        """Stream the generator's answer from ``chunks``."""
        async for piece in self.generator.stream(question, chunks):
            yield piece

    async def _degraded_answer(
        self, question: str, chunks: Sequence[dict[str, object]], index: int
    ) -> AsyncIterator[str]:
        rng = random.Random(self.degrade.seed * 7919 + index)
        retrieved = {chunk["id"] for chunk in chunks}
        wrong = rng.choice([d for d in self.retriever.documents if d.id not in retrieved])
        text = "".join([piece async for piece in self.generate(question, [wrong.text])])
        async for piece in stream_words(self._fabricator.invent(text, rng)):
            yield piece

    def question(self, index: int) -> Question:
        """The ``index``-th shipped question, cycling when ``index`` exceeds the set."""
        return self.corpus.questions[index % len(self.corpus.questions)]


async def ask(bot: SupportBot, question: str) -> str:
    """Ask one question and return the whole streamed answer."""
    return "".join([piece async for piece in bot.answer(question)])


__all__ = ["DegradeSwitch", "SupportBot", "ask"]
