"""Word evidence against a near copy: a claim that copies a sentence of the chunk but puts another name or
number in the place of the sentence's own, one the chunk states elsewhere.

The usual shape of a hallucination in an answer that quotes its source: "… at Aşiyan neighborhood of Sultan
Ahmet Mosque district" where the chunk says "… of Beşiktaş district" and names the mosque two sentences on.
Every word of the claim is in the chunk and its frame is the sentence's own, so the support model (which
reads a claim much like a passage it almost copies) and the word coverage both read it as supported.

``substitution`` aligns the claim's words with the sentence's (``difflib``) and looks for one replaced run
of words that is a substitution and not a rewording:

- the claim is a near copy of the sentence: at least ``NEAR_COPY`` of its words are the sentence's, in its
  order;
- on each side of the run the claim copies the sentence: ``FLANK`` words or more, or all the way to its
  start or end;
- both sides of the run are short (``MAX_RUN`` words), of the same kind (numbers for numbers, names for
  names: a capitalised word that is not a stopword) and not one another's alias: no shared word stem, not
  one inside the other ("U.S" in "Korean-U.S"), not an acronym of the other ("EU" and "European Union");
- the chunk states the claim's words elsewhere (a name it never mentions is ``facts``' missing entity,
  already evidence), and not in the sentence itself unless the sentence's own name moved into the claim
  in exchange (two names swapped); a name of the sentence only moved ("drone strikes in January" for "CIA
  drone strikes in January") is a rewording.

Set by design, not fitted: on the calibration split of ../shared/data it fires on 78.4 % and 80.5 % of the
swapped answers (hn_swapped, multi_swapped), none of their right ones, 0.3 % of the right summaries (1 of
400: "Women in India" for "women in Mumbai") and no right QA answer; docs/offline-judge.md has the figures.

Contract: pure and deterministic; ``None`` when the rule does not apply.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ragtrace.judges.offline import segment

NEAR_COPY = 0.75
"""Share of the claim's words that must be the sentence's, in its order, for the claim to be a copy."""
MAX_RUN = 5
"""Words on either side of a substitution at most: a name or a number, not a clause."""
FLANK = 2
"""Words the claim must copy on each side of the substitution (unless it starts or ends there)."""
_MIN_CLAIM_WORDS = 4


@dataclass(frozen=True, slots=True)
class Substitution:
    """What the claim says (``claim_words``) where the sentence says ``sentence_words``."""

    claim_words: tuple[str, ...]
    sentence_words: tuple[str, ...]


def _kind(word: str) -> str | None:
    if any(c.isdigit() for c in word):
        return "number"
    if word[:1].isupper() and len(word) > 1 and word.lower() not in segment.STOPWORDS:
        return "name"
    return None


def _key(word: str) -> str:
    """A word as the alignment compares it: lowercased, without a possessive or a final period, stemmed."""
    word = word.lower().rstrip(".")
    if word.endswith(("'s", "\u2019s")):
        word = word[:-2]
    return segment.stem(word)


def _alias(said: Sequence[str], stated: Sequence[str]) -> bool:
    """Whether two runs of names may name the same thing (a shared stem, one inside the other, an acronym)."""
    a = [_key(w) for w in said if w.lower() not in segment.STOPWORDS] or [_key(w) for w in said]
    b = [_key(w) for w in stated if w.lower() not in segment.STOPWORDS] or [_key(w) for w in stated]
    if set(a) & set(b):
        return True
    joined_a, joined_b = "".join(a), "".join(b)
    if joined_a in joined_b or joined_b in joined_a:
        return True
    return joined_a == "".join(w[0] for w in b) or joined_b == "".join(w[0] for w in a)


def _same_kind(said: Sequence[str], stated: Sequence[str]) -> bool:
    """Every content word the claim puts in is a name or a number, and most of what it replaces is of that
    kind too."""
    said_kinds = [_kind(w) for w in said if w.lower() not in segment.STOPWORDS]
    stated_kinds = [_kind(w) for w in stated if w.lower() not in segment.STOPWORDS]
    if not said_kinds or not stated_kinds or None in said_kinds:
        return False
    named = [k for k in stated_kinds if k is not None]
    return set(said_kinds) == set(named) and 2 * len(named) >= len(stated_kinds)


def substitution(claim: str, sentence: str, chunk_keys: Collection[str]) -> Substitution | None:
    """The name or number ``claim`` puts in the place of ``sentence``'s own (module docstring), else None.

    ``sentence``: the chunk's sentence the claim is read around; ``chunk_keys``: the keys (``words_of``)
    of the whole chunk."""
    said = segment.raw_words(claim)
    if len(said) < _MIN_CLAIM_WORDS:
        return None
    stated = segment.raw_words(sentence)
    said_keys, stated_keys = [_key(w) for w in said], [_key(w) for w in stated]
    matcher = difflib.SequenceMatcher(None, said_keys, stated_keys, autojunk=False)
    if sum(block.size for block in matcher.get_matching_blocks()) < NEAR_COPY * len(said):
        return None
    ops = matcher.get_opcodes()
    for k, (op, i1, i2, j1, j2) in enumerate(ops):
        if op != "replace" or not (i2 - i1 <= MAX_RUN and j2 - j1 <= MAX_RUN):
            continue
        run, replaced = said[i1:i2], stated[j1:j2]
        if not _same_kind(run, replaced) or _alias(run, replaced):
            continue
        if not _copied_beside(ops, k, len(said)):
            continue
        run_keys = {_key(w) for w in run}
        if not run_keys <= set(chunk_keys):
            continue
        # Moved within the sentence, not swapped: unless the sentence's name went into the claim in exchange.
        if run_keys <= set(stated_keys) and not {_key(w) for w in replaced if _kind(w)} & set(said_keys):
            continue
        return Substitution(tuple(run), tuple(replaced))
    return None


def _copied_beside(ops: Sequence[tuple[str, int, int, int, int]], k: int, claim_words: int) -> bool:
    """Whether the claim copies the sentence on both sides of the replaced run ``ops[k]``: ``FLANK`` words,
    or every word from the run to the claim's start or end ("… is an John Candy actress.")."""
    _, i1, i2, _, _ = ops[k]

    def copied(j: int) -> bool:
        if not 0 <= j < len(ops) or ops[j][0] != "equal":
            return False
        _, start, end, _, _ = ops[j]
        return end - start >= FLANK or start == 0 or end == claim_words

    return (i1 == 0 or copied(k - 1)) and (i2 == claim_words or copied(k + 1))


def words_of(chunk: str) -> frozenset[str]:
    """The keys of a chunk's words, as ``substitution`` looks a claim's words up in it."""
    return frozenset(_key(w) for w in segment.raw_words(chunk))
