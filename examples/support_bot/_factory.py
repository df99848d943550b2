"""Building a ready bot: load the documents, index them with the offline embedder, pick a generator."""

from __future__ import annotations

from ._bot import DegradeSwitch, SupportBot
from ._corpus import DATA_FILE, load_corpus
from ._generation import ExtractiveGenerator, Generator, OpenAIGenerator
from ._retrieval import Embedder, Retriever


def offline_embedder() -> Embedder:
    """The offline judge's MiniLM embedder (unit vectors): retrieval and judging share one model."""
    from ragtrace.judges.offline import embed_texts

    return embed_texts


def build_bot(
    *,
    degrade: DegradeSwitch | None = None,
    generator: Generator | None = None,
    embedder: Embedder | None = None,
    top_k: int = 3,
    limit: int | None = None,
) -> SupportBot:
    """A bot over the shipped documents (the first ``limit`` rows when given).

    ``generator`` defaults to an OpenAI-compatible endpoint when ``SUPPORT_BOT_LLM_BASE_URL`` is set,
    else the extractive generator; ``embedder`` defaults to the offline MiniLM embedder.
    """
    corpus = load_corpus(DATA_FILE, limit=limit)
    retriever = Retriever(corpus.documents, embedder or offline_embedder())
    chosen = generator or OpenAIGenerator.from_env() or ExtractiveGenerator()
    return SupportBot(corpus, retriever, chosen, top_k=top_k, degrade=degrade)
