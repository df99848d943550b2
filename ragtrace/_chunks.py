"""Chunk normalisation: whatever a retriever returned, as ``Chunk`` values, bounded and redacted.

Accepted shapes, per item: ``str``; ``bytes`` (UTF-8, invalid bytes replaced); a mapping with
``text`` / ``content`` / ``page_content`` and optional ``id`` / ``score`` / ``metadata``; an object with
``page_content`` (LangChain ``Document``), ``.node.text`` or ``.text`` (LlamaIndex ``NodeWithScore``,
``TextNode``) or ``.content`` (Haystack ``Document``), with optional ``id``/``score``/``metadata``;
a ``(chunk, score)`` pair (LangChain's ``similarity_search_with_score``); anything else becomes its
``str()`` with its type recorded in the metadata under ``semconv.DOCUMENT_METADATA_SOURCE_TYPE``.
``None`` items are skipped. Normalisation never raises: a value that cannot be read is recorded as
its ``str()`` (or a placeholder when even that fails).

A top-level value that is a collection (list, tuple, set, any sized iterable) holds many chunks; a
one-shot iterator (a generator) is *not* consumed, because the app still has to read it: pass
``chunks=`` a callable, or return a list. Any other value is one chunk.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, cast

from ragtrace import semconv
from ragtrace._capture import CaptureSettings, export_text, prepare_text
from ragtrace._record import CHUNK_TEXT_KEYS, Chunk

__all__ = ["CapturedChunk", "Normalized", "normalize_chunks", "to_text"]

_log = logging.getLogger("ragtrace")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CapturedChunk:
    """A normalised chunk: text already redacted and cut at the keep bound; ``truncated`` if cut.

    ``id_truncated``: the id was longer than ``max_attribute_length`` and is cut there, marked with
    ``semconv.TRUNCATION_MARKER``."""

    chunk: Chunk
    truncated: bool
    id_truncated: bool = False


@dataclass(frozen=True, slots=True)
class Normalized:
    """The chunks kept from one value (at most ``max_record_chunks``) and how many it held in all."""

    chunks: tuple[CapturedChunk, ...]
    total: int


def to_text(value: object, limit: int) -> str:
    """``value`` as text of at most ``limit`` characters, reading no more of it than needed.

    ``str`` is cut; bytes are decoded as UTF-8 with invalid sequences replaced (only the prefix that
    can hold ``limit`` characters is decoded); anything else goes through ``str()``. Never raises: a
    value that cannot be read (a released ``memoryview``, a raising ``__str__``) gives a placeholder
    naming its type, ``<unprintable module.Type>``.
    """
    if isinstance(value, str):
        return value[:limit] if len(value) > limit else value
    try:
        if isinstance(value, (bytes, bytearray, memoryview)):
            # A UTF-8 character is at most 4 bytes: 4 * limit bytes always hold `limit` characters.
            text = bytes(value[: 4 * limit]).decode("utf-8", errors="replace")
        else:
            text = str(value)
    except Exception:
        _log.debug("ragtrace: could not read a %s as text", type(value).__name__, exc_info=True)
        return f"<unprintable {_type_name(value)}>"[:limit]
    return text[:limit] if len(text) > limit else text


def _type_name(value: object) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"


def _score(value: object) -> float | None:
    if value is None:
        return None
    if type(value) is float:  # the common case, without the numbers.Real ABC check
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        score = float(value)
    except Exception:
        return None
    return score if math.isfinite(score) else None


def _id(value: object, limit: int) -> tuple[str | None, bool]:
    """The chunk id as text, cut at ``limit`` and marked when longer; and whether it was cut."""
    if value is None:
        return None, False
    if type(value) is str and len(value) <= limit:  # the common case, without the two calls below
        return value, False
    return export_text(to_text(value, limit + 1), False, limit)


def _metadata(value: object) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    if isinstance(value, (dict, Mapping)):
        try:
            return MappingProxyType({str(k): v for k, v in value.items()})
        except Exception:
            return _EMPTY
    return _EMPTY


def _attr(obj: object, name: str) -> Any:
    # Objects from libraries may have properties that raise; a missing field is simply absent.
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _is_text(value: object) -> bool:
    return isinstance(value, (str, bytes, bytearray, memoryview))


def _fields(item: object) -> tuple[object, object, object, object] | None:
    """(text, id, score, metadata) of a recognised chunk shape, or None for an unknown one."""
    if _is_text(item):
        return item, None, None, None
    if isinstance(item, (dict, Mapping)):  # dict first: skips the ABC check in the common case
        for key in CHUNK_TEXT_KEYS:
            text = item.get(key)
            if text is not None:
                return text, item.get("id"), item.get("score"), item.get("metadata")
        return None
    page_content = _attr(item, "page_content")
    if _is_text(page_content):  # LangChain Document
        return page_content, _attr(item, "id"), _attr(item, "score"), _attr(item, "metadata")
    node = _attr(item, "node")
    node_text = _attr(node, "text") if node is not None else None
    if _is_text(node_text):  # LlamaIndex NodeWithScore
        node_id = _attr(node, "node_id") or _attr(node, "id_")
        return node_text, node_id, _attr(item, "score"), _attr(node, "metadata")
    for text_name in ("text", "content"):  # LlamaIndex TextNode, Haystack Document, plain records
        text = _attr(item, text_name)
        if _is_text(text):
            item_id = _attr(item, "id")
            if item_id is None:
                item_id = _attr(item, "node_id") or _attr(item, "id_")
            metadata = _attr(item, "metadata")
            if metadata is None:
                metadata = _attr(item, "meta")
            return text, item_id, _attr(item, "score"), metadata
    return None


def _one(item: object, settings: CaptureSettings, score: float | None = None) -> CapturedChunk:
    found = _fields(item)
    metadata: Mapping[str, Any]
    if found is None:
        text_value: object = item
        chunk_id, id_cut = None, False
        metadata = MappingProxyType({semconv.DOCUMENT_METADATA_SOURCE_TYPE: _type_name(item)})
    else:
        text_value, raw_id, raw_score, raw_metadata = found
        chunk_id, id_cut = _id(raw_id, settings.max_attribute_length)
        if score is None:
            score = _score(raw_score)
        metadata = _metadata(raw_metadata)
    text, truncated = prepare_text(to_text(text_value, settings.read_length), settings)
    return CapturedChunk(Chunk(text=text, id=chunk_id, score=score, metadata=metadata), truncated, id_cut)


def _plain_dict(item: dict[Any, Any], settings: CaptureSettings) -> CapturedChunk | None:
    """The most common chunk, ``{"text": str, "id": str, "score": float}`` without metadata, read
    without the general path's dozen calls (a third of the decorator's own cost with 5 chunks); None
    for any other dict, which then takes the general path. Same result as ``_one``."""
    text = item.get("text")
    if type(text) is not str or item.get("metadata"):
        return None
    chunk_id = item.get("id")
    if chunk_id is not None and (type(chunk_id) is not str or len(chunk_id) > settings.max_attribute_length):
        return None
    score = item.get("score")
    if score is not None and (type(score) is not float or not math.isfinite(score)):
        return None
    if len(text) > settings.read_length:
        text = text[: settings.read_length]
    text, truncated = prepare_text(text, settings)
    return CapturedChunk(Chunk(text=text, id=chunk_id, score=score), truncated)


def _item(item: object, settings: CaptureSettings) -> CapturedChunk:
    try:
        if type(item) is dict:
            plain = _plain_dict(item, settings)
            if plain is not None:
                return plain
        if isinstance(item, tuple) and len(item) == 2 and _score(item[1]) is not None:
            return _one(item[0], settings, _score(item[1]))
        return _one(item, settings)
    except Exception:
        # Last resort: a value we could not read is still recorded, never raised into the app
        # (to_text never raises, and neither does prepare_text: the redact hook is guarded).
        _log.debug("ragtrace: could not read a chunk of type %s", type(item).__name__, exc_info=True)
        text, truncated = prepare_text(to_text(item, settings.read_length), settings)
        metadata = MappingProxyType({semconv.DOCUMENT_METADATA_SOURCE_TYPE: _type_name(item)})
        return CapturedChunk(Chunk(text=text, metadata=metadata), truncated)


def _is_collection(value: object) -> bool:
    if isinstance(value, (list, tuple, set, frozenset)):
        return True
    if _is_text(value) or isinstance(value, Mapping) or not isinstance(value, Iterable):
        return False
    # An iterable that is itself a recognised chunk (pydantic models iterate over their fields).
    return _fields(value) is None


def normalize_chunks(value: object, settings: CaptureSettings, limit: int | None = None) -> Normalized:
    """Normalise a retriever's result (one chunk or a collection of chunks) into at most ``limit``
    (default ``settings.max_record_chunks``) chunks; ``total`` counts every non-None item of a collection.

    Items beyond ``limit`` are counted, never read or redacted. Never raises; never consumes a one-shot
    iterator (``total`` is 0 for one). A collection whose iteration fails part-way keeps the chunks read
    before the failure.
    """
    if value is None:
        return Normalized((), 0)
    if limit is None:
        limit = settings.max_record_chunks
    try:
        collection = _is_collection(value)
    except Exception:
        collection = False
    if not collection:
        return Normalized((_item(value, settings),) if limit else (), 1)
    if isinstance(value, Iterator):
        return Normalized((), 0)
    kept: list[CapturedChunk] = []
    total = 0
    try:
        for item in cast(Iterable[object], value):
            if item is None:
                continue
            total += 1
            if len(kept) < limit:
                kept.append(_item(item, settings))
    except Exception:
        pass  # an app's odd container: what was read so far is kept
    return Normalized(tuple(kept), total)
