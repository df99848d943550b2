"""``gen_ai.retrieval.documents``: the retrieved documents as a JSON array of ``{"id", "score"}`` objects.

The GenAI conventions give each document a string ``id`` and a number ``score``. The attribute is always
valid JSON within the export bound: when the array does not fit, whole documents are left out from the
end (the lowest ranked), never a cut in the JSON text, which no backend could parse.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from ragtrace import semconv
from ragtrace._record import Chunk

_EMPTY_ARRAY_LENGTH = 2  # "[]"


def document_object(chunk: Chunk) -> str:
    """One document as compact JSON (``_document``)."""
    return _dumps(_document(chunk))


def _document(chunk: Chunk) -> dict[str, str | float]:
    """One document: ``id`` when it is a str, ``score`` when it is a finite number.

    A missing id or score is left out rather than written as null (the conventions type them as string
    and number); a NaN or infinite score is not JSON at all.
    """
    document: dict[str, str | float] = {}
    if isinstance(chunk.id, str):
        document[semconv.RETRIEVAL_DOCUMENT_JSON_ID] = chunk.id
    score = chunk.score
    if isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score):
        document[semconv.RETRIEVAL_DOCUMENT_JSON_SCORE] = float(score)
    return document


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""Built once: ``json.dumps`` with arguments builds an encoder per call, a few microseconds each."""


def _dumps(value: object) -> str:
    return _ENCODER.encode(value)


def documents_json(chunks: Iterable[Chunk], limit: int) -> tuple[str | None, bool]:
    """The attribute's value for ``chunks`` (in rank order) in at most ``limit`` characters, and whether
    documents were left out to fit. ``None`` when not even ``[]`` fits (a limit below 2)."""
    documents = [_document(chunk) for chunk in chunks]
    if limit < _EMPTY_ARRAY_LENGTH:
        return None, bool(documents)
    # The usual case, on every decorated retrieval: everything fits, one dumps (each document alone
    # cost a dumps apiece, a third of the decorator's overhead over hand-written spans).
    whole = _dumps(documents)
    if len(whole) <= limit:
        return whole, False
    objects = [_dumps(document) for document in documents]
    length = _EMPTY_ARRAY_LENGTH
    kept = 0
    for text in objects:
        added = len(text) + (1 if kept else 0)  # the comma before every document but the first
        if length + added > limit:
            break
        length += added
        kept += 1
    return "[" + ",".join(objects[:kept]) + "]", kept < len(objects)
