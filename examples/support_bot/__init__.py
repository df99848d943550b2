"""A realistic RAG support bot traced by ragtrace: shipped documents, dense retrieval, streamed answers.

Run it: ``python -m examples.support_bot ask --questions 20`` (prints answers) or
``python -m examples.support_bot serve`` (a FastAPI app, ``POST /ask``). See ``--help`` for the
tracing options and ``--degrade-after N`` to make it start hallucinating.
"""

from ._bot import DegradeSwitch, SupportBot, ask
from ._corpus import DATA_FILE, Corpus, Document, Question, load_corpus, split_paragraphs
from ._factory import build_bot, offline_embedder
from ._generation import (
    LLM_API_KEY,
    LLM_BASE_URL,
    LLM_MODEL,
    ExtractiveGenerator,
    Fabricator,
    Generator,
    OpenAIGenerator,
)
from ._retrieval import Embedder, Hit, Retriever
from ._runner import Answer, run_questions

__all__ = [
    "DATA_FILE",
    "LLM_API_KEY",
    "LLM_BASE_URL",
    "LLM_MODEL",
    "Answer",
    "Corpus",
    "DegradeSwitch",
    "Document",
    "Embedder",
    "ExtractiveGenerator",
    "Fabricator",
    "Generator",
    "Hit",
    "OpenAIGenerator",
    "Question",
    "Retriever",
    "SupportBot",
    "ask",
    "build_bot",
    "load_corpus",
    "offline_embedder",
    "run_questions",
    "split_paragraphs",
]
