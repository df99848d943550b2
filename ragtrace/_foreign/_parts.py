"""The values the joiner moves around: what one ended span contributes, a root's own query and answer, and
what the processor is told to do with a span. All frozen: once read off a span, nothing changes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._record import Chunk, RagRecord

ROOT: Final = "root"
"""A span that may be a RAG root: an OpenInference CHAIN, an OpenLLMetry workflow, a GenAI workflow."""

RETRIEVAL: Final = "retrieval"
"""A span that retrieved (or reranked) documents."""

GENERATION: Final = "generation"
"""A span that generated text (an LLM call): its output answers the RAG call when the root has no answer."""

OPENINFERENCE: Final = "openinference"
RERANK: Final = "openinference.rerank"
OPENLLMETRY: Final = "openllmetry"
GEN_AI: Final = "gen_ai"
NAMED: Final = "named"
"""The shapes a span can have: whose conventions it follows (an OpenInference reranker is read apart from
its retrievers), or named by a user's root rule."""

ENTRY_OVERHEAD: Final = 200
"""Bytes counted for each entry kept beside its texts (objects, references): a rough but fixed share."""


@dataclass(frozen=True, slots=True)
class Retrieved:
    """What one retrieval (or rerank) span returned.

    ``shape``: whose conventions the span follows (their privacy switches apply). ``start``: the span's
    start time (ns), the order retrievals ran in. ``captured``: False when the instrumentation kept the
    documents' text out of the span (its privacy switch), so nothing here may be scored. ``query``: the
    query the retriever was called with, when the span says. ``replaces``: set on a rerank only: the ids
    (or texts) of the documents it was given, which its output replaces; empty when the span does not
    list them (then it replaces every document retrieved before it).
    """

    shape: str
    start: int
    chunks: tuple[Chunk, ...]
    captured: bool = True
    query: str | None = None
    replaces: frozenset[str] | None = None

    @property
    def size(self) -> int:
        """Approximate bytes held for this result (its texts, ids and a fixed overhead per entry)."""
        return ENTRY_OVERHEAD + sum(len(c.text) + len(c.id or "") + ENTRY_OVERHEAD for c in self.chunks)


@dataclass(frozen=True, slots=True)
class Io:
    """A root's own query and answer as its instrumentation put them on the span.

    ``None`` is "not on the span"; ``hidden`` is True when the instrumentation wrote a placeholder instead
    of a text it was told to hide: then nothing else may stand in for it.
    """

    query: str | None = None
    answer: str | None = None
    hidden: bool = False


@dataclass(frozen=True, slots=True)
class Release:
    """What the processor does with one span the joiner gives back.

    ``root`` False: forward it untouched (it is no RAG root). ``root`` True: a RAG root, to be decided on
    like ragtrace's own RAG spans: with ``record`` to score, or, when ``reason`` is set, not scored
    (``semconv.NOT_SCORED_*``); neither set means its record could not be built (decision ``error``).
    """

    span: ReadableSpan
    root: bool = False
    record: RagRecord | None = None
    reason: str | None = None
