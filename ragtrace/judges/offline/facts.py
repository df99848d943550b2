"""Reading facts out of text for the offline judge: numbers, dates, names, negation, lexical evidence.

Contract: every function is pure and deterministic (no model). ``numbers``, ``years``, ``months``,
``entities`` and ``has_negation`` read one kind of fact from a text; ``lexical_evidence`` compares a
claim with one context on them and on content words, giving the grounding model evidence an embedding
cannot see (a year, a number or a proper name that the context lacks or states otherwise);
``context_facts`` reads a context's side once, for every claim compared with it. The words and
sentences these read come from ``segment``; callers import both through ``text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragtrace.judges.offline.segment import (
    NEGATIONS,
    STOPWORDS,
    content_words,
    raw_words,
    split_sentences,
    stem,
    words,
)
from ragtrace.judges.offline.short_cache import short_text_cache

_MONTH_TEXT = "january february march april may june july august september october november december"

MONTHS = frozenset(_MONTH_TEXT.split())

_NUMBER = re.compile(r"(?<![A-Za-z])\d[\d,]*(?:\.\d+)?")
# "one" is left out: "one of the", "the one who" count nothing.
_NUMBER_WORD_TEXT = """two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty"""
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_NUMBER_WORD_TEXT.split(), start=2)}


# A Roman numeral that ends a name ("World War II", "Henry VIII", "Super Bowl XL"). A lone "I" is
# the pronoun far more often: it counts only after a name that does not open the sentence and is not
# a day or a month ("World War I", not "Yesterday I" or "On Monday I").
_NAME_NUMERAL = re.compile(r"\b([A-Z][a-z]+) (M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))\b(?!['\-])")
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}
_DAYS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])


def _roman_value(numeral: str) -> int:
    values = [_ROMAN_VALUES[c] for c in numeral]
    return sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0], strict=True))


def numbers(text: str) -> set[str]:
    """Numbers as written without thousands separators ("1,200" -> "1200"), years included; number
    words from two to twenty as digits ("seven" -> "7"), so "seven Emmys" meets "7 Emmys"; and a
    Roman numeral ending a name as its value ("World War II" -> "2"), so "World War I" and "Henry VII"
    are not taken for "World War II" and "Henry VIII"."""
    found = {n.replace(",", "").rstrip(".") for n in _NUMBER.findall(text)}
    found.update(_NUMBER_WORDS[w] for w in words(text) if w in _NUMBER_WORDS)
    for match in _NAME_NUMERAL.finditer(text):
        name, numeral = match.groups()
        if numeral == "I" and (name.lower() in MONTHS or name.lower() in _DAYS or _opens_sentence(text, match.start())):
            continue
        if numeral:
            found.add(str(_roman_value(numeral)))
    return found


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \"'(")
    return not before or before.endswith((".", "!", "?", ":"))


def years(text: str) -> set[str]:
    """Four-digit numbers that look like years (1000 to 2099)."""
    return {n for n in numbers(text) if _is_year(n)}


def _is_year(number: str) -> bool:
    return len(number) == 4 and number.isdigit() and 1000 <= int(number) <= 2099


def months(text: str) -> set[str]:
    """Month names mentioned."""
    return {w for w in words(text) if w in MONTHS}


def entities(text: str) -> set[str]:
    """Lowercased capitalised words that are not sentence-initial stopwords: a cheap proper-noun finder.

    The first word of a sentence counts only when it is not a stopword ("The" is not a name, "Delhi"
    is). Months are dates, not names, and are left to ``months``.
    """
    found: set[str] = set()
    for sentence in split_sentences(text) or [text]:
        tokens = raw_words(sentence)
        for i, token in enumerate(tokens):
            if not token[0].isupper():
                continue
            lowered = words(token)
            if not lowered:
                continue
            w = lowered[0]
            if w in MONTHS or (i == 0 and w in STOPWORDS) or w in STOPWORDS:
                continue
            found.add(w)
    return found


def has_negation(text: str) -> bool:
    """True when the text negates ("not", "never", "n't", ...)."""
    lowered = text.lower()
    return "n't" in lowered or any(w in NEGATIONS for w in words(lowered))


@dataclass(frozen=True, slots=True)
class Evidence:
    """Lexical facts of a claim against one context: what the context lacks or states otherwise."""

    coverage: float
    """Share of the claim's content words found in the context, in [0, 1]."""
    missing_words: int
    """Content words of the claim the context lacks."""
    missing_entities: int
    """Proper names of the claim the context never mentions."""
    missing_numbers: int
    """Numbers (years included) of the claim the context never mentions."""
    conflicting_numbers: int
    """Missing numbers of the claim where the context states another number of the same kind."""
    conflicting_months: int
    """Months of the claim the context lacks while it names another month."""


@dataclass(frozen=True, slots=True)
class ContextFacts:
    """What ``lexical_evidence`` reads of a context, read once: the grounding model compares every
    claim of a record with the same chunks (reading a long chunk's words anew for each claim made 400
    claims against three 28 KB chunks take 30 s)."""

    content_words: frozenset[str]
    tokens: frozenset[str]
    numbers: frozenset[str]
    years: frozenset[str]
    months: frozenset[str]


def context_facts(text: str) -> ContextFacts:
    """The facts of ``text``; cached for texts up to ``CACHED_TEXT_CHARS`` (windows, usual chunks)."""
    return _cached_facts(text)


@short_text_cache(maxsize=512)
def _cached_facts(text: str) -> ContextFacts:
    found = numbers(text)
    return ContextFacts(
        content_words(text),
        frozenset(words(text)),
        frozenset(found),
        frozenset(n for n in found if _is_year(n)),
        frozenset(months(text)),
    )


def lexical_evidence(claim: str, context: str | ContextFacts) -> Evidence:
    """Compare a claim with one context (its text, or its facts read once by ``context_facts``) on
    content words, names, numbers and dates."""
    claim_words = content_words(claim)
    facts = context if isinstance(context, ContextFacts) else context_facts(context)
    context_words = facts.content_words
    coverage = len(claim_words & context_words) / len(claim_words) if claim_words else 1.0
    missing_entities = sum(1 for e in entities(claim) if e not in facts.tokens and stem(e) not in context_words)
    claim_numbers = numbers(claim)
    context_numbers = facts.numbers
    missing = claim_numbers - context_numbers
    context_years = facts.years
    conflicting = 0
    for n in missing:
        is_year = _is_year(n)
        if (is_year and context_years) or (not is_year and (context_numbers - context_years)):
            conflicting += 1
    claim_months = months(claim)
    context_months = facts.months
    conflicting_months = len(claim_months - context_months) if context_months else 0
    return Evidence(
        coverage=coverage,
        missing_words=len(claim_words - context_words),
        missing_entities=missing_entities,
        missing_numbers=len(missing),
        conflicting_numbers=conflicting,
        conflicting_months=conflicting_months,
    )
