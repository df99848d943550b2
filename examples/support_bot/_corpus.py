"""The document set the support bot ships, and the questions with known answers asked of it.

Documents come from the HaluEval QA knowledge passages (MIT, see ``data/HaluEval_LICENSE``). Each
knowledge text is split into its source paragraphs, one document each, so retrieval has real work
to do: a question usually needs two of ~530 documents.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

DATA_FILE = Path(__file__).parent / "data" / "halueval_qa_300.jsonl"
"""The shipped question/knowledge file (300 rows)."""

# HaluEval glues paragraphs without a space ("...in the USA.First for Women is..."): a full stop
# directly followed by a capital or a quote marks a paragraph boundary.
_PARAGRAPH_BOUNDARY = re.compile(r'(?<=[a-z0-9)\]"]\.)(?=[A-Z"])')


@dataclass(frozen=True, slots=True)
class Document:
    """One indexed paragraph."""

    id: str
    text: str
    source: str
    """Id of the HaluEval row the paragraph came from."""


@dataclass(frozen=True, slots=True)
class Question:
    """A question with its known short answer and the documents that hold it."""

    id: str
    text: str
    answer: str
    document_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Corpus:
    """Documents in a stable order and the questions asked of them."""

    documents: tuple[Document, ...]
    questions: tuple[Question, ...]


def split_paragraphs(knowledge: str) -> list[str]:
    """Split a HaluEval knowledge text into its paragraphs (stripped, empty ones dropped)."""
    return [part.strip() for part in _PARAGRAPH_BOUNDARY.split(knowledge) if part.strip()]


def load_corpus(path: Path = DATA_FILE, *, limit: int | None = None) -> Corpus:
    """Read the JSONL file: every row's paragraphs become documents, every row's question a ``Question``.

    Raises ``ValueError`` naming the line when a row lacks ``id``, ``question``, ``answer`` or ``knowledge``.
    """
    documents: list[Document] = []
    questions: list[Question] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            missing = [key for key in ("id", "question", "answer", "knowledge") if not isinstance(row.get(key), str)]
            if missing:
                raise ValueError(f"{path}:{number}: missing string field(s) {', '.join(missing)}")
            ids: list[str] = []
            for index, paragraph in enumerate(split_paragraphs(row["knowledge"])):
                doc = Document(id=f"{row['id']}-p{index}", text=paragraph, source=row["id"])
                documents.append(doc)
                ids.append(doc.id)
            questions.append(
                Question(id=row["id"], text=row["question"], answer=row["answer"], document_ids=tuple(ids))
            )
            if limit is not None and len(questions) >= limit:
                break
    return Corpus(documents=tuple(documents), questions=tuple(questions))
