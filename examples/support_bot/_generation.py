"""Answer generation: an OpenAI-compatible endpoint when one is configured, else an extractive generator.

Both stream the answer as text pieces through an async iterator, which is how a chat UI receives it.
``Fabricator`` is the degradation switch's other half: it rewrites an answer with invented names,
numbers and dates, so the judge sees claims that no retrieved chunk supports.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import pysbd

LLM_BASE_URL = "SUPPORT_BOT_LLM_BASE_URL"
"""Base URL of an OpenAI-compatible chat endpoint (e.g. ``http://127.0.0.1:8000/v1``). Unset: extractive answers."""

LLM_MODEL = "SUPPORT_BOT_LLM_MODEL"
"""Chat model the bot answers with (default ``gpt-4o-mini``)."""

LLM_API_KEY = "SUPPORT_BOT_LLM_API_KEY"
"""API key for that endpoint (falls back to ``OPENAI_API_KEY``, then a placeholder for keyless servers)."""

_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be by did do does for from had has have he her his how in is it its of on or she "
        "that the their they this to was were what when where which who whom whose why with",
    )
)
_WORD = re.compile(r"[a-z0-9]+")


class Generator(Protocol):
    """Streams an answer to ``question`` grounded in ``chunks`` (rank order)."""

    @property
    def name(self) -> str:
        """Names the generator on the health endpoint, e.g. ``extractive`` or ``openai:gpt-4o-mini``."""
        ...

    def stream(self, question: str, chunks: Sequence[str]) -> AsyncIterator[str]: ...


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


async def stream_words(text: str) -> AsyncIterator[str]:
    """Yield ``text`` a word at a time (with its trailing space), as a token stream would arrive."""
    for piece in re.findall(r"\S+\s*", text):
        yield piece


@dataclass(frozen=True, slots=True)
class ExtractiveGenerator:
    """Answers with the ``sentences`` chunk sentences that share most content words with the question.

    No model: every word of the answer is copied from a chunk, so a faithful judge must find it
    grounded. Sentences are returned in chunk-rank order so the answer reads in retrieval order.
    """

    sentences: int = 2
    name: str = "extractive"

    def answer(self, question: str, chunks: Sequence[str]) -> str:
        """The extractive answer as one string (empty when there are no chunks)."""
        wanted = _content_words(question)
        segmenter = pysbd.Segmenter(language="en", clean=False)
        candidates: list[tuple[float, int, int, str]] = []
        for rank, chunk in enumerate(chunks):
            for position, sentence in enumerate(s.strip() for s in segmenter.segment(chunk)):
                if not sentence:
                    continue
                words = _content_words(sentence)
                overlap = len(wanted & words)
                # Prefer sentences that share words with the question, then higher-ranked chunks.
                score = overlap / (1.0 + 0.01 * len(words)) - 0.05 * rank
                candidates.append((score, rank, position, sentence))
        best = sorted(candidates, key=lambda c: (-c[0], c[1], c[2]))[: self.sentences]
        return " ".join(c[3] for c in sorted(best, key=lambda c: (c[1], c[2])))

    async def stream(self, question: str, chunks: Sequence[str]) -> AsyncIterator[str]:
        """Stream ``answer`` word by word."""
        async for piece in stream_words(self.answer(question, chunks)):
            yield piece


class OpenAIGenerator:
    """Streams a chat completion from any OpenAI-compatible endpoint, grounded in the chunks."""

    SYSTEM_PROMPT = (
        "You are a support assistant. Answer the question using only the context passages. "
        "Answer in one or two sentences. If the context does not contain the answer, say so."
    )

    def __init__(self, base_url: str, model: str = "gpt-4o-mini", api_key: str | None = None) -> None:
        from openai import AsyncOpenAI

        self.name = f"openai:{model}"
        self._model = model
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed")

    @classmethod
    def from_env(cls) -> OpenAIGenerator | None:
        """A generator configured by ``SUPPORT_BOT_LLM_*`` variables, or ``None`` when no base URL is set."""
        base_url = os.environ.get(LLM_BASE_URL, "").strip()
        if not base_url:
            return None
        model = os.environ.get(LLM_MODEL, "").strip() or "gpt-4o-mini"
        api_key = os.environ.get(LLM_API_KEY, "").strip() or os.environ.get("OPENAI_API_KEY", "").strip() or None
        return cls(base_url=base_url, model=model, api_key=api_key)

    async def stream(self, question: str, chunks: Sequence[str]) -> AsyncIterator[str]:
        """Stream the completion's text deltas."""
        context = "\n\n".join(f"[{i + 1}] {chunk}" for i, chunk in enumerate(chunks))
        stream = await self._client.chat.completions.create(
            model=self._model,
            messages=[
                {"role": "system", "content": self.SYSTEM_PROMPT},
                {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
            ],
            temperature=0,
            stream=True,
        )
        async for event in stream:
            if event.choices and event.choices[0].delta.content:
                yield event.choices[0].delta.content

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NUMBER = re.compile(r"(?<![\d.])\b\d+\b(?![\d.])")
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|de|van|von|da))*\s+[A-Z][a-z]+\b")


class Fabricator:
    """Rewrites an answer the way a degraded model does: wrong names, numbers and dates, plus a made-up fact.

    Deterministic for a given ``random.Random``. Names are drawn from ``name_pool`` (multi-word proper
    names found in other documents), so the invented answer reads plausibly but no chunk supports it.
    """

    def __init__(self, name_pool: Sequence[str]) -> None:
        pool = sorted(set(name_pool))
        if len(pool) < 2:
            raise ValueError("Fabricator needs at least two names to invent with")
        self._pool = pool

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> Fabricator:
        """Collect multi-word proper names from ``texts`` (e.g. every document of the corpus)."""
        return cls([m.group(0) for text in texts for m in _NAME.finditer(text)])

    def invent(self, answer: str, rng: random.Random) -> str:
        """Return ``answer`` with its facts changed and one invented sentence appended."""

        def other_name(match: re.Match[str]) -> str:
            choice = rng.choice(self._pool)
            return choice if choice != match.group(0) else self._pool[(self._pool.index(choice) + 1) % len(self._pool)]

        def other_number(match: re.Match[str]) -> str:
            value = int(match.group(0))
            if len(match.group(0)) == 4 and 1500 <= value <= 2099:  # a year: move it, keep it a year
                return str(value + rng.choice((-23, -17, -9, 9, 14, 21)))
            return str(value * 3 + rng.randint(2, 9))

        def other_month(match: re.Match[str]) -> str:
            return _MONTHS[(_MONTHS.index(match.group(0)) + rng.randint(1, 11)) % 12]

        text = _NAME.sub(other_name, answer)
        text = _NUMBER.sub(other_number, text)
        text = _MONTH.sub(other_month, text)
        invented = (
            f"This was confirmed by {rng.choice(self._pool)} on {rng.choice(_MONTHS)} {rng.randint(1, 28)}, "
            f"{rng.randint(1850, 2020)}, at a cost of {rng.randint(2, 95)} million dollars."
        )
        return f"{text.rstrip()} {invented}".strip()
