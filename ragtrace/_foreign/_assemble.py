"""From a RAG root and what its subtree gathered to the ``RagRecord`` scoring sees, or the reason there is none.

* The root's own query and answer win (what the app received and returned); else the first retriever's
  query and the last generation's text.
* The chunks are every retrieval's documents in the order the retrievals started; a rerank replaces the
  documents it was given with its output (what the model saw).
* When the content is not on the spans (an instrumentation's privacy switch is on, a placeholder stands
  where a text was, a query or an answer is missing), there is no record: ``not_scored`` / ``no_content``.
  Nothing is guessed.
* Texts go through ragtrace's capture settings as the decorators' do: the ``redact`` hook, then the
  record bounds (``max_record_chunk_length``, ``max_record_chunks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import StatusCode

from ragtrace import _capture, semconv
from ragtrace._foreign import _classify, _documents
from ragtrace._foreign._parts import Release
from ragtrace._record import Chunk, RagRecord

if TYPE_CHECKING:
    from ragtrace._capture import CaptureSettings
    from ragtrace._foreign._parts import Retrieved
    from ragtrace._foreign._pending import Candidate


def assemble(candidate: Candidate, hidden: frozenset[str]) -> Release:
    """The verdict on a RAG root: its record, or why it is not scored. ``hidden``: shapes whose
    instrumentations were told to keep content off their spans."""
    span = candidate.span
    record, reason = decide(
        candidate.shape,
        span.attributes or {},
        failed=span.status.status_code is StatusCode.ERROR,
        retrieved=candidate.retrieved,
        answer=candidate.answer,
        hidden=hidden,
    )
    return Release(span, root=True, record=record, reason=reason)


def decide(
    shape: str,
    attributes: Mapping[str, Any],
    *,
    failed: bool,
    retrieved: Iterable[Retrieved],
    answer: str | None,
    hidden: frozenset[str],
) -> tuple[RagRecord | None, str | None]:
    """A RAG root's record, or ``(None, reason)`` (``semconv.NOT_SCORED_*``) when it is not scored.

    ``shape`` and ``attributes``: the root's; ``failed``: its status is ERROR; ``retrieved`` and ``answer``:
    what its subtree gathered. Works on anything that has attributes, so the collector reads stored span
    rows with it as the processor reads ended spans.
    """
    if failed:
        # The call raised: nothing to score, and no judge to blame (as for ragtrace's own RAG spans).
        return None, semconv.NOT_SCORED_APP_ERROR
    ordered = sorted(retrieved, key=lambda r: r.start)
    io = _classify.root_io(shape, attributes)
    shapes = {shape, *(r.shape for r in ordered)}
    if io.hidden or not shapes.isdisjoint(hidden) or not all(r.captured for r in ordered):
        return None, semconv.NOT_SCORED_NO_CONTENT
    query = io.query if io.query is not None else next((r.query for r in ordered if r.query is not None), None)
    answer = io.answer if io.answer is not None else answer
    if query is None or answer is None:
        return None, semconv.NOT_SCORED_NO_CONTENT
    settings = _capture.get_settings()
    chunks = merge(ordered)[: settings.max_record_chunks]
    record = RagRecord(
        query=_text(query, settings),
        chunks=tuple(_chunk(c, settings) for c in chunks),
        answer=_text(answer, settings),
    )
    return record, None


def merge(retrieved: Iterable[Retrieved]) -> list[Chunk]:
    """The documents of ``retrieved`` (in start order) as the model saw them: a rerank replaces its input."""
    chunks: list[Chunk] = []
    for result in retrieved:
        if result.replaces is not None:
            replaced = result.replaces
            chunks = [c for c in chunks if _documents.key(c) not in replaced] if replaced else []
        chunks.extend(result.chunks)
    return chunks


def _text(text: str, settings: CaptureSettings) -> str:
    return _capture.prepare_text(text, settings)[0][: settings.max_record_chunk_length]


def _chunk(chunk: Chunk, settings: CaptureSettings) -> Chunk:
    return Chunk(text=_text(chunk.text, settings), id=chunk.id, score=chunk.score, metadata=chunk.metadata)
