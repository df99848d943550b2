"""Alignment evidence for the offline judge: does the passage state a claim's words *together*?

A claim that swaps two dates of a passage, or answers a question with another name the passage
mentions, uses only words the passage states: word coverage and the support model's reading of a
window both pass it. What differs is where the words stand. The passage states the right date beside
the event it dates, and the right name beside the question's words; a swapped date stands beside
another event.

Contract: pure and deterministic (no model). ``alignment`` reads one claim against one chunk as
``Alignment``: three numbers in [0, 1] (``proximity``, ``margin``, ``order``), each 1.0 when the
passage states the claim's words as the claim places them. Positions are counted in content words
(stopwords skipped), so "in the year of" does not push two facts apart. ``passage_tokens`` reads a
chunk once for every claim compared with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ragtrace.judges.offline.facts import entities
from ragtrace.judges.offline.segment import (
    NEGATIONS,
    STOPWORDS,
    claim_focus,
    raw_words,
    stem,
    words,
)
from ragtrace.judges.offline.short_cache import short_text_cache

SPREAD = 3.0
"""Content words over which a word's closeness to an anchor decays by 1/e: about half a sentence, so a
word in the anchor's clause counts nearly fully and one two sentences away hardly at all."""
ORDER_GAP = 4
"""Content words at most between two consecutive claim words for the passage to state them in order."""


@dataclass(frozen=True, slots=True)
class PassageTokens:
    """A chunk's content words in order (stemmed), each word's positions (ascending), and the positions
    that hold a number or a capitalised word (the candidates a same-kind substitute is drawn from)."""

    tokens: tuple[str, ...]
    positions: dict[str, npt.NDArray[np.int64]]
    numeric: npt.NDArray[np.int64]
    named: npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Alignment:
    """How one chunk places a claim's words.

    ``proximity``: for the claim's worst-placed anchor (a number or a name of what it asserts, else
    each of its content words), how close the passage states the claim's other content words (question
    words included) to that anchor, at the anchor's best occurrence: mean of exp(-distance / SPREAD),
    0 for a word the passage lacks.
    ``margin``: for that anchor, how much closer to those words it stands than any other number or name
    of the passage that the claim does not use, mapped to [0, 1] (0.5: as close as the best rival).
    ``order``: among the claim's content words the passage states, the share of consecutive pairs it
    states in that order within ``ORDER_GAP`` words (1.0 for a one-word claim, 0.0 when the passage
    states at most one of several words); a word the passage lacks is skipped, not counted out of
    order."""

    proximity: float
    margin: float
    order: float


def _content(tokens: Sequence[str]) -> list[str]:
    return [stem(w) for w in tokens if w not in STOPWORDS and w not in NEGATIONS]


def passage_tokens(chunk: str) -> PassageTokens:
    """The chunk's tokens; cached for chunks up to ``CACHED_TEXT_CHARS``."""
    return _cached_tokens(chunk)


@short_text_cache(maxsize=512)
def _cached_tokens(chunk: str) -> PassageTokens:
    tokens: list[str] = []
    numeric: list[int] = []
    named: list[int] = []
    for raw in raw_words(chunk):
        lowered = words(raw)
        if not lowered or lowered[0] in STOPWORDS or lowered[0] in NEGATIONS:
            continue
        if any(c.isdigit() for c in raw):
            numeric.append(len(tokens))
        elif raw[0].isupper():
            named.append(len(tokens))
        tokens.append(stem(lowered[0]))
    positions: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        positions.setdefault(t, []).append(i)
    return PassageTokens(
        tuple(tokens),
        {k: np.array(v, dtype=np.int64) for k, v in positions.items()},
        np.array(numeric, dtype=np.int64),
        np.array(named, dtype=np.int64),
    )


def _anchors(focus: str) -> list[str]:
    """The claim's numbers and names (stemmed content words), else all its content words."""
    names = {stem(e) for e in entities(focus)}
    found = []
    for raw in raw_words(focus):
        lowered = words(raw)
        if not lowered or lowered[0] in STOPWORDS or lowered[0] in NEGATIONS:
            continue
        token = stem(lowered[0])
        if any(c.isdigit() for c in raw) or token in names:
            found.append(token)
    return list(dict.fromkeys(found)) or list(dict.fromkeys(_content(words(focus))))


def _closeness_to(passage: PassageTokens, word: str) -> npt.NDArray[np.float64] | None:
    """exp(-distance / SPREAD) from every position of the passage to the nearest occurrence of ``word``;
    None when the passage lacks it."""
    spots = passage.positions.get(word)
    if spots is None:
        return None
    at = np.arange(len(passage.tokens))
    k = np.searchsorted(spots, at)
    last = len(spots) - 1
    before = np.abs(at - spots[np.maximum(k - 1, 0)])
    after = np.abs(spots[np.minimum(k, last)] - at)
    result: npt.NDArray[np.float64] = np.exp(-np.minimum(before, after) / SPREAD)
    return result


def alignment(claim: str, passage: PassageTokens) -> Alignment:
    """How ``passage`` places the words of ``claim`` (see ``Alignment``).

    Every claim word's closeness is computed once over the whole passage (linear in its length), so a
    long chunk with thousands of names costs a few vector operations per claim, not a loop per name."""
    focus = claim_focus(claim)
    claim_words = list(dict.fromkeys(_content(words(claim))))
    anchors = _anchors(focus)
    if not anchors or not passage.tokens:
        return Alignment(1.0, 1.0, 1.0) if not anchors else Alignment(0.0, 0.0, 0.0)
    close = {w: _closeness_to(passage, w) for w in claim_words}
    total = np.zeros(len(passage.tokens))
    for c in close.values():
        if c is not None:
            total += c
    used = set(claim_words)
    rivals = {
        kind: np.array([p for p in at if passage.tokens[p] not in used], dtype=np.int64)
        for kind, at in (("numeric", passage.numeric), ("named", passage.named))
    }
    worst_proximity, worst_margin = 1.0, 1.0
    for anchor in anchors:
        own_close = close.get(anchor)
        n_others = len(claim_words) - (1 if anchor in close else 0)
        if n_others:
            mean = (total - own_close if own_close is not None else total) / n_others
        else:
            mean = np.ones(len(passage.tokens))
        spots = passage.positions.get(anchor)
        own = float(np.max(mean[spots])) if spots is not None else 0.0
        rival_at = rivals["numeric" if anchor[:1].isdigit() else "named"]
        rival = float(np.max(mean[rival_at])) if len(rival_at) else 0.0
        worst_proximity = min(worst_proximity, own)
        worst_margin = min(worst_margin, 0.5 + 0.5 * (own - rival))
    return Alignment(worst_proximity, worst_margin, _order(focus, passage))


def _order(focus: str, passage: PassageTokens) -> float:
    """``Alignment.order`` of the claim's asserted words (``focus``).

    Only the words the passage states are placed: a word it lacks has no position, and its absence is the
    word evidence's to count (``text.lexical_evidence``), once. Counting it here too read a reworded verb
    ("was held on" where the passage says "was played on") as two pairs out of order, on top of one
    missing word, and pushed a restatement below the threshold."""
    content = _content(words(focus))
    if len(content) < 2:
        return 1.0
    stated = [w for w in content if w in passage.positions]
    pairs = list(itertools.pairwise(stated))
    if not pairs:
        # At most one of its words is stated: nothing is placed in the claim's order.
        return 0.0
    return sum(1 for a, b in pairs if _in_order(passage, a, b)) / len(pairs)


def _in_order(passage: PassageTokens, a: str, b: str) -> bool:
    first, later = passage.positions.get(a), passage.positions.get(b)
    if first is None or later is None:
        return False
    # The first occurrence of ``b`` after each ``a``.
    k = np.searchsorted(later, first, side="right")
    found = k < len(later)
    return bool(np.any(later[k[found]] - first[found] <= ORDER_GAP))
