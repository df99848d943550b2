"""Dense retrieval: cosine similarity over sentence embeddings, with numpy.

The embedder is any callable from texts to a 2-D array; the bot uses the offline judge's MiniLM
embedder (see ``_embedding.py``), so retrieval and judging share one model and no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ._corpus import Document


class Embedder(Protocol):
    """Turns texts into vectors, one row per text (need not be normalised)."""

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved document and its cosine similarity to the query."""

    document: Document
    score: float

    def as_chunk(self) -> dict[str, object]:
        """The shape ragtrace's capture understands: text, id, score, metadata."""
        return {
            "id": self.document.id,
            "text": self.document.text,
            "score": round(self.score, 6),
            "metadata": {"source": self.document.source},
        }


def _normalise(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # A zero vector (empty text) stays zero instead of becoming NaN.
    norms[norms == 0] = 1.0
    normalised: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
    return normalised


class Retriever:
    """Indexes documents once; ``search`` returns the top ``k`` by cosine, best first."""

    def __init__(self, documents: Sequence[Document], embedder: Embedder, *, batch_size: int = 64) -> None:
        if not documents:
            raise ValueError("Retriever needs at least one document")
        self._documents = tuple(documents)
        self._embedder = embedder
        rows = [
            np.asarray(embedder([d.text for d in self._documents[i : i + batch_size]]), dtype=np.float32)
            for i in range(0, len(self._documents), batch_size)
        ]
        self._matrix = _normalise(np.vstack(rows))
        self._by_id = {d.id: d for d in self._documents}

    @property
    def documents(self) -> tuple[Document, ...]:
        """Every indexed document, in index order."""
        return self._documents

    def document(self, doc_id: str) -> Document:
        """The document with this id (``KeyError`` if unknown)."""
        return self._by_id[doc_id]

    def search(self, query: str, k: int = 3) -> list[Hit]:
        """The ``k`` documents most similar to ``query``, best first (ties keep index order)."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        vector = _normalise(np.asarray(self._embedder([query]), dtype=np.float32))[0]
        scores = self._matrix @ vector
        # Stable sort on the negated score: equal scores keep index order, so results are reproducible.
        order = np.argsort(-scores, kind="stable")[:k]
        return [Hit(document=self._documents[i], score=float(scores[i])) for i in order]
