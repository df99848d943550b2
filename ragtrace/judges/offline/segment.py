"""Cutting text into units for the offline judge: sentences, clauses, claims and words.

Contract: every function is pure and deterministic (no model). ``split_sentences`` gives a text's
sentences (boundaries from ``pysbd``, with the boundaries it misses put back); ``extract_claims`` gives an
answer's claims (its sentences split into clauses, without questions and evasions, a bare short answer
joined to its question) and ``claim_focus`` the part of a claim to check; ``raw_words``, ``words``,
``stem`` and ``content_words`` give a text's word tokens. ``noncommittal_wording`` tells an evasion,
which is not a claim. Reading facts out of these units (numbers, dates, names, negation, evidence
against a context) is ``facts``'s job; callers import both through ``text``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import pysbd

from ragtrace.judges._noncommittal import noncommittal_wording
from ragtrace.judges._question_claims import answer_claim, split_answer_claim
from ragtrace.judges.offline.short_cache import CACHED_TEXT_CHARS as CACHED_TEXT_CHARS
from ragtrace.judges.offline.short_cache import short_text_cache

# Knowledge snippets are often glued paragraphs ("...19th century.First for Women is..."): pysbd
# keeps those as one sentence, so a space is put back first.
_GLUED = re.compile(r"(?<=[a-z0-9\)\]\"'][.!?])(?=[A-Z][a-z])")
# Words in any script ("Brasília", "Москва" are one word each). Chinese and Japanese are written
# without spaces, so each of their characters counts as a word: a run of them would otherwise be one
# "word" that never matches the same name inside a longer run of the context.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTER_OR_DIGIT = f"[^\\W_{_CJK}]"
_WORD = re.compile(f"[{_CJK}]|{_LETTER_OR_DIGIT}(?:(?:{_LETTER_OR_DIGIT}|['\\-\\.])*{_LETTER_OR_DIGIT})?")
# A period glued to a capitalised word ("El-P.Jaime Meline", "Hawaii.Aulani") ends a sentence: the
# two words are split before tokenising, so neither is lost. "U.S." keeps its periods.
_GLUED_WORD = re.compile(r"\.(?=[A-Z][a-z])")
_CLAUSE_SPLIT = re.compile(r"\s*;\s+|,\s+(?:but|while|whereas|although|though)\s+|\s+but\s+also\s+", re.IGNORECASE)
_LEADING_CONCESSION = re.compile(r"^(?:although|though|while|whereas)\s+([^,]{8,}),\s+(.{8,})$", re.IGNORECASE)
_MAX_SHORT_ANSWER_WORDS = 6
_AFFIRMATIONS = frozenset({"yes", "yes it is", "yes they are", "true", "correct"})
_DENIALS = frozenset({"no", "not", "false", "incorrect"})

_STOPWORD_TEXT = """a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had has have having he
her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves one ones s t whose known called named name
later first"""

STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Function words, and a few that HaluEval questions and answers use as frames ("known", "called")."""

NEGATIONS = frozenset({"not", "no", "never", "neither", "nor", "none", "nobody", "nothing", "cannot", "n't"})


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, stripped, non-empty, in order."""
    # Kept by the stripped text: a chunk is split as it came (its units) and stripped (its windows), and
    # pysbd on a long chunk is the costliest reading of it.
    return list(_cached_sentences(text.strip()))


@short_text_cache(maxsize=2048)
def _cached_sentences(text: str) -> tuple[str, ...]:
    return _split_sentences(text)


def _split_sentences(text: str) -> tuple[str, ...]:
    text = _GLUED.sub(" ", text.strip())
    if not text:
        return ()
    segment = _segmenter().segment
    return tuple(
        piece for block in _blocks(text) for s in segment(block) for piece in _missed_boundaries(s.strip()) if piece
    )


_BLOCK_CHARS = 2000


def _blocks(text: str) -> Iterator[str]:
    """``text`` in pieces of about ``_BLOCK_CHARS``, cut only at a sentence boundary (``_BOUNDARY``).

    pysbd's time grows with the square of its input: a 60 KB chunk took 1.3 s in one piece and
    0.15 s in these."""
    start = 0
    while len(text) - start > _BLOCK_CHARS:
        cut = next(_boundary_ends(text, start + _BLOCK_CHARS), None)
        if cut is None:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


# pysbd keeps everything after an unbalanced quote in one sentence ('...the quotation ""Et tu, Brute?,
# made famous by ... assassination. Steve Peterson is an American actor ...'): one claim, then, that
# no single chunk covers. A lowercase word of three letters or more, a full stop and a capitalised
# word is a boundary whatever the quotes say; initials, "Dr." or "U.S." never match it.
_BOUNDARY = re.compile(r"(?<![A-Za-z'])([a-z][a-z0-9]{2,})[.!?][\"\u201d\u2019)\]]*\s+(?=[\"\u201c(\[]?[A-Z])")
_LOWERCASE_ABBREVIATIONS = frozenset(
    {"etc", "approx", "est", "fig", "figs", "vol", "vols", "resp", "viz", "incl", "ibid"}
)


def _boundary_ends(text: str, pos: int = 0) -> Iterator[int]:
    """Where each ``_BOUNDARY`` from ``pos`` on ends, in order, an abbreviation's full stop excepted."""
    return (m.end() for m in _BOUNDARY.finditer(text, pos) if m.group(1) not in _LOWERCASE_ABBREVIATIONS)


def _missed_boundaries(sentence: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for end in _boundary_ends(sentence):
        pieces.append(sentence[start:end].strip())
        start = end
    pieces.append(sentence[start:].strip())
    return pieces


def split_clauses(sentence: str) -> list[str]:
    """Split one sentence into clauses that each carry a claim of their own.

    Splits at semicolons and contrastive conjunctions (", but", ", while", ...) and a leading
    concession ("Although X, Y"); a piece shorter than four words stays with its sentence, since a
    fragment is not a claim.
    """
    match = _LEADING_CONCESSION.match(sentence.strip())
    parts = [match.group(1), match.group(2)] if match else [sentence]
    clauses: list[str] = []
    for part in parts:
        pieces = [p.strip(" ,;") for p in _CLAUSE_SPLIT.split(part)]
        if len(pieces) > 1 and all(len(p.split()) >= 4 for p in pieces):
            clauses.extend(pieces)
        else:
            clauses.append(part.strip(" ,;"))
    return [c for c in clauses if c]


def is_short_answer(text: str) -> bool:
    """True for a bare answer ("Delhi", "6.213 km long") that is not a claim without its question."""
    words = text.split()
    return 0 < len(words) <= _MAX_SHORT_ANSWER_WORDS and not text.rstrip().endswith((".", "!"))


def extract_claims(text: str, question: str | None = None) -> list[str]:
    """Claims of an answer: its sentences split into clauses, without questions and evasions.

    A bare short answer is turned into one claim with its question, "<question>? <answer>" ("Which
    city ...? Delhi"), because "Delhi" alone states nothing a context could support or contradict;
    ``claim_focus`` recovers the answer from such a claim.
    """
    text = text.strip()
    if not text:
        return []
    if question and question.strip() and is_short_answer(text):
        return [answer_claim(question, text)]
    claims: list[str] = []
    for sentence in split_sentences(text):
        # A question or an evasion ("I don't know.") asserts nothing a context could support.
        if sentence.endswith("?") or noncommittal_wording(sentence):
            continue
        claims.extend(split_clauses(sentence))
    return [c for c in claims if content_words(c)]


def claim_focus(claim: str) -> str:
    """What a claim asserts: for "<question>? <answer>" the answer (the question's proposition
    for a bare "yes"), else the whole claim.

    The question of a bare answer is context that a chunk will mostly repeat whatever the answer;
    the words, names and numbers to check are the answer's.
    """
    parts = split_answer_claim(claim)
    if parts is None:
        return claim
    question, answer = parts
    # "Is X a Y? Yes" asserts the question's own proposition; "No" denies it, which word evidence
    # cannot check, so such a claim stays whole.
    word = answer.strip(".!").lower()
    if word in _AFFIRMATIONS:
        return question
    if word in _DENIALS:
        return claim
    return answer


def _unglued(text: str) -> str:
    return _GLUED_WORD.sub(". ", text)


def raw_words(text: str) -> list[str]:
    """Word tokens as written (case and possessives kept), a period glued to a capitalised word cut."""
    return _WORD.findall(_unglued(text))


def word_matches(text: str) -> Iterator[re.Match[str]]:
    """``raw_words`` as matches, each in the text it was read from (``match.string``: ``text`` with a glued
    period cut), for a reader that needs what precedes a word."""
    return _WORD.finditer(_unglued(text))


def words(text: str) -> list[str]:
    """Word tokens, lowercased, with possessives dropped ("Arthur's" -> "arthur")."""
    out: list[str] = []
    for w in raw_words(text):
        w = w.lower().rstrip(".")
        if w.endswith("'s"):
            w = w[:-2]
        if w:
            out.append(w)
    return out


def stem(word: str) -> str:
    """A light suffix stripper: enough to match "published"/"publishes", "countries"/"country"."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    return word


@short_text_cache(maxsize=1024)
def content_words(text: str) -> frozenset[str]:
    """Stemmed words that carry content: not stopwords, not bare punctuation.

    Kept for short texts (``short_text_cache``): each window of a chunk is compared with every claim."""
    return frozenset(stem(w) for w in words(text) if w not in STOPWORDS and w not in NEGATIONS)
