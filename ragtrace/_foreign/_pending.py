"""What ended spans gather for the span above them, until it ends: the joiner's unit of per-trace state.

Children end before their parent, so each ended span hands what it and its subtree found (retrievals, the
last generated text, RAG-root candidates waiting to learn whether a root encloses them) to its parent's
``Pending``; the parent takes it over when it ends. A ``Pending`` is mutable and only ever touched under
the joiner's lock; a ``Candidate`` is a frozen snapshot of one waiting root.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragtrace._foreign._parts import ENTRY_OVERHEAD

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._foreign._parts import Retrieved


@dataclass(frozen=True, slots=True)
class Candidate:
    """An ended root-kind span with retrieval under it, held (not yet exported) until an enclosing span ends:
    an enclosing root of its kind supersedes it; otherwise it is the topmost and so the RAG root.

    ``retrieved`` and ``answer`` are what its subtree gathered; ``size`` the bytes counted for holding it.
    """

    span: ReadableSpan
    shape: str
    retrieved: tuple[Retrieved, ...]
    answer: str | None
    size: int


class Pending:
    """What the ended spans under one open span gathered for it. Not thread-safe: the joiner's lock guards it.

    ``retrieved``: results of the topmost retrieval spans below, in the order they ended. ``answer``: the
    text of the generation that ended last (``answer_end``: its end time). ``held``: candidates below that
    no root has superseded yet. ``size``: approximate bytes of all of it.
    """

    __slots__ = ("answer", "answer_end", "held", "retrieved", "size")

    def __init__(self) -> None:
        self.retrieved: list[Retrieved] = []
        self.answer: str | None = None
        self.answer_end = -1
        self.held: list[Candidate] = []
        self.size = 0

    def add_retrieved(self, retrieved: Retrieved) -> None:
        """Add one retrieval's result."""
        self.retrieved.append(retrieved)
        self.size += retrieved.size

    def replace_retrieved(self, retrieved: Retrieved) -> None:
        """Keep only ``retrieved``: a retrieval span's own result supersedes what retrievals nested in it
        returned (an outer retriever returns what it chose of theirs)."""
        self.size += retrieved.size - sum(r.size for r in self.retrieved)
        self.retrieved = [retrieved]

    def release_held(self) -> list[Candidate]:
        """Take out the candidates held here (a root above supersedes them, or they are topmost)."""
        held, self.held = self.held, []
        self.size -= sum(c.size for c in held)
        return held

    def hold(self, candidate: Candidate) -> None:
        """Hold ``candidate`` until the span above it ends."""
        self.held.append(candidate)
        self.size += candidate.size

    @property
    def empty(self) -> bool:
        """True when nothing was gathered."""
        return not self.retrieved and not self.held and self.answer is None

    def add_answer(self, text: str, end: int) -> None:
        """Keep ``text`` if it was generated after the answer kept so far (the last generation answers)."""
        if end >= self.answer_end:
            self.size += len(text) - len(self.answer or "")
            self.answer, self.answer_end = text, end

    def absorb(self, other: Pending) -> None:
        """Take over what ``other`` (a child's gathering) holds."""
        self.retrieved.extend(other.retrieved)
        self.held.extend(other.held)
        self.size += other.size
        if other.answer is not None and other.answer_end >= self.answer_end:
            self.size -= len(self.answer or "")
            self.answer, self.answer_end = other.answer, other.answer_end
        else:
            self.size -= len(other.answer or "")


def span_size(attributes: Mapping[str, Any]) -> int:
    """Approximate bytes an ended span holds, from its ``attributes``: their string values and a fixed overhead
    per attribute."""
    return ENTRY_OVERHEAD + sum((len(v) if isinstance(v, str) else 0) + len(k) + 16 for k, v in attributes.items())
