"""The stub server's reading of text: its token count, content words, overlap, sentences and embeddings.

Everything the stub answers is computed from these few rules, so a reply is deterministic and plausible
from the request alone: a token is a word or a punctuation mark (one ruler for every client measured
against the stub, not any real model's count); meaning is the set of lower-cased words without stop
words; support is the share of one text's words found in another; an embedding is a hashed bag of
content words, stable across processes. None of it is a model; all of it is cheap.
"""

from __future__ import annotations

import hashlib
import math
import re

__all__ = [
    "EMBEDDING_DIMENSIONS",
    "content_words",
    "count_tokens",
    "embed_text",
    "is_noncommittal",
    "overlap",
    "plain_words",
    "sentences",
]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NONCOMMITTAL = (
    "i don't know",
    "i do not know",
    "not sure",
    "cannot answer",
    "can't answer",
    "no information",
    "unable to",
    "i cannot say",
)
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        "a an the of in on at to for and or but is are was were be been by with from as that this it its which who "
        "what when where how why did does do has have had not no into than then there their they he she his her "
        "also about",
    )
)
EMBEDDING_DIMENSIONS = 64
"""Length of the stub's embedding vectors."""


def count_tokens(text: str) -> int:
    """The stub's token count: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` without stop words (the stub's notion of meaning)."""
    return {w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS}


def plain_words(text: str) -> list[str]:
    """The words of ``text`` that are not stop words, in order and as written (for echoing them back)."""
    return [w for w in _WORD.findall(text) if w.lower() not in _STOPWORDS]


def overlap(part: str, whole: str) -> float:
    """Share of ``part``'s content words found in ``whole`` (0 when ``part`` has none)."""
    words = content_words(part)
    if not words:
        return 0.0
    return len(words & content_words(whole)) / len(words)


def is_noncommittal(text: str) -> bool:
    """True for an evasive answer ("I don't know", ...), by phrase."""
    lowered = text.lower().replace("’", "'")
    return not text.strip() or any(phrase in lowered for phrase in _NONCOMMITTAL)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (split after . ! ?), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def embed_text(text: str) -> list[float]:
    """A deterministic unit vector: a hashed bag of content words (stable across processes)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in content_words(text) or {text.strip().lower() or "empty"}:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS
        sign = 1.0 if digest[4] & 1 else -1.0
        vector[slot] += sign
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        # Words whose signed slots cancel out: a zero vector has no cosine, so fall back to one slot.
        digest = hashlib.blake2b(text.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % EMBEDDING_DIMENSIONS] = 1.0
        norm = 1.0
    return [v / norm for v in vector]
