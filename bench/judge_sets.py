"""Evaluation sets that test the task rather than one construction, built from the HaluEval QA dev rows.

Each construction turns a row (knowledge, question, right_answer) into a pair of texts judged against the
row's knowledge: one grounded, one not. A row the construction cannot build from is left out (both texts,
so the classes stay paired). Everything is deterministic in the row's index.

Hard negatives (each measured separately by ``bench/judge_accuracy.py``):
- ``hn_same_kind``: the right answer against another span of the passage of the same kind (a year for a
  year, a number for a number, a name for a name), not named in the question: every word is in the passage.
- ``hn_swapped``: a sentence of the passage against the same sentence with two same-kind spans swapped (or
  one replaced by a same-kind span of another sentence): the same words, a wrong pairing.
- ``hn_negated``: a sentence of the passage against it negated ("was" -> "was not", "not" dropped).
- ``hn_neighbour``: the right answer against the right answer of the question that shares the most words
  with this one (a right answer to a neighbouring question).
- ``multi_swapped``, ``multi_negated``, ``multi_halueval``: 2-5 sentences of the passage against the same
  answer with one sentence replaced by a wrong one (a same-kind swap, a negation, or the row's HaluEval
  hallucinated answer): one wrong claim among supported ones, the usual shape of a real hallucination. They
  are also the "one wrong sentence in a long answer" construction.

Context relevance (rated by the judge's ``rate_chunks``):
- ``relevance_neighbour``: each question's own passage (relevant) against the passage of the question
  sharing the most words with it (irrelevant, yet on similar words).
- ``relevance_paraphrase``: hand-written questions whose relevant chunk answers them in other words, each
  beside a chunk that repeats the question's words without answering it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.judges.offline.text import STOPWORDS

_WORD = re.compile(r"\w+")
# HaluEval glues the passages of its two documents: "century.First for Women"; split there too.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|(?<=[a-z0-9)\"][.!?])(?=[A-Z])")
_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:of|the|de|da|van|von|and)?\s*[A-Z][\w'’-]*)*")
_AUXILIARY = re.compile(r"\b(is|was|are|were|has|had|have|can|will|could|would|does|did)\b")
_NOT = re.compile(r"\s+not\b|n't\b")
_YES_NO = frozenset({"yes", "no"})

Pair = tuple[str, str]
"""(grounded text, not grounded text)."""


def sentences(text: str) -> list[str]:
    """The text's sentences of four words or more (shorter pieces are headings and fragments)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if len(s.split()) >= 4]


def content_words(text: str) -> set[str]:
    """Lowercased words that are not stopwords."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS}


def kind_of(text: str) -> str | None:
    """``year``, ``number``, ``name`` (capitalised) or None: what a same-kind substitute must be."""
    stripped = text.strip().rstrip(".")
    if _YEAR.search(stripped):
        return "year"
    if _NUMBER.search(stripped):
        return "number"
    if stripped[:1].isupper() and stripped.lower() not in _YES_NO:
        return "name"
    return None


def spans_of_kind(text: str, kind: str) -> list[str]:
    """The spans of ``text`` of one kind, in order, without duplicates; names lose a leading stopword
    ("The Oberoi Group" -> "Oberoi Group") so a sentence's first word is not taken for a name."""
    if kind == "year":
        found = _YEAR.findall(text)
    elif kind == "number":
        found = [n for n in _NUMBER.findall(text) if not _YEAR.fullmatch(n)]
    else:
        found = []
        for match in _NAME.findall(text):
            words = match.split()
            while words and words[0].lower() in STOPWORDS:
                words = words[1:]
            if words:
                found.append(" ".join(words).rstrip(".'’"))
    return list(dict.fromkeys(f for f in found if f))


def _disjoint(a: str, b: str) -> bool:
    return not (set(_WORD.findall(a.lower())) & set(_WORD.findall(b.lower())))


def same_kind_span(row: dict[str, Any], rng: random.Random) -> Pair | None:
    """The right answer against another span of its kind in the passage, sharing no word with it and not
    named in the question; names of about the answer's length are preferred."""
    right = row["right_answer"].strip()
    kind = kind_of(right)
    if kind is None:
        return None
    question = set(_WORD.findall(row["question"].lower()))
    spans = [
        s
        for s in spans_of_kind(row["knowledge"], kind)
        if _disjoint(s, right) and not set(_WORD.findall(s.lower())) <= question
    ]
    if kind == "name":
        n = len(right.split())
        spans = [s for s in spans if abs(len(s.split()) - n) <= 1] or spans
    return (right, rng.choice(spans)) if spans else None


def swapped(sentence: str, passage: str, rng: random.Random) -> str | None:
    """``sentence`` with two of its same-kind spans swapped, or (when it has one of a kind) that span
    replaced by a same-kind span from elsewhere in ``passage``; None when neither is possible."""
    options: list[str] = []
    for kind in ("year", "number", "name"):
        own = [s for s in spans_of_kind(sentence, kind) if len(s) > 1]
        for i, a in enumerate(own):
            for b in own[i + 1 :]:
                if _disjoint(a, b) and a not in b and b not in a and _apart(sentence, a, b):
                    options.append(_swap(sentence, a, b))
        others = [s for s in spans_of_kind(passage, kind) if s not in sentence and len(s) > 1]
        for a in own:
            for b in others:
                if _disjoint(a, b):
                    options.append(sentence.replace(a, b, 1))
    options = [o for o in options if o != sentence]
    return rng.choice(options) if options else None


def _apart(text: str, a: str, b: str) -> bool:
    """Whether three words or more stand between ``a`` and ``b``: swapping neighbours in a list ("Istanbul,
    Turkey", "Ronson and Woodmansey") changes the order, not the facts."""
    i, j = text.find(a), text.find(b)
    first = a if i < j else b
    between = text[min(i, j) + len(first) : max(i, j)]
    return len(_WORD.findall(between)) >= 3


def _swap(text: str, a: str, b: str) -> str:
    marker = "\x00"
    return text.replace(a, marker, 1).replace(b, a, 1).replace(marker, b, 1)


def negated(sentence: str) -> str | None:
    """``sentence`` with its polarity flipped: its first "not"/"n't" dropped, else "not" after its first
    auxiliary verb; None when it has neither."""
    if _NOT.search(sentence):
        return _NOT.sub("", sentence, count=1)
    match = _AUXILIARY.search(sentence)
    if match is None:
        return None
    return sentence[: match.end()] + " not" + sentence[match.end() :]


def _sentence_pair(row: dict[str, Any], rng: random.Random, wrong: Callable[[str], str | None]) -> Pair | None:
    candidates = sentences(row["knowledge"])
    rng.shuffle(candidates)
    for sentence in candidates:
        changed = wrong(sentence)
        if changed is not None and changed != sentence:
            return sentence, changed
    return None


def swapped_sentence(row: dict[str, Any], rng: random.Random) -> Pair | None:
    """A sentence of the passage against it with same-kind spans swapped."""
    return _sentence_pair(row, rng, lambda s: swapped(s, row["knowledge"], rng))


def negated_sentence(row: dict[str, Any], rng: random.Random) -> Pair | None:
    """A sentence of the passage against its negation."""
    return _sentence_pair(row, rng, negated)


def multi_sentence(row: dict[str, Any], rng: random.Random, wrong_kind: str = "swapped") -> Pair | None:
    """2-5 consecutive sentences of the passage (as many as it has, up to a drawn 2-5) against the same
    answer with one of them, drawn, replaced by a wrong one of ``wrong_kind``: ``swapped`` (same-kind spans
    swapped, every word in the passage), ``negated``, or ``halueval`` (the row's HaluEval hallucinated
    answer, a natural hallucination on the same topic)."""
    found = sentences(row["knowledge"])
    if len(found) < 2:
        return None
    k = min(len(found), rng.randint(2, 5))
    start = rng.randrange(len(found) - k + 1)
    chosen = found[start : start + k]
    order = list(range(k))
    rng.shuffle(order)
    for i in order:
        if wrong_kind == "halueval":
            wrong: str | None = row["hallucinated_answer"].strip()
        elif wrong_kind == "negated":
            wrong = negated(chosen[i])
        else:
            wrong = swapped(chosen[i], row["knowledge"], rng)
        if wrong is not None and wrong != chosen[i]:
            return " ".join(chosen), " ".join([*chosen[:i], wrong, *chosen[i + 1 :]])
    return None


def nearest_question(i: int, words: Sequence[set[str]]) -> int:
    """The index of the other question sharing the most content words with question ``i`` (first on ties);
    ``words``: each question's ``content_words``."""
    mine = words[i]
    return max((j for j in range(len(words)) if j != i), key=lambda j: len(mine & words[j]))


@dataclass(frozen=True, slots=True)
class Neighbours:
    """For rows of one split: each row's nearest question (``nearest_question``) among that split's rows."""

    nearest: tuple[int, ...]

    @classmethod
    def of(cls, rows: Sequence[dict[str, Any]]) -> Neighbours:
        words = [content_words(r["question"]) for r in rows]
        return cls(tuple(nearest_question(i, words) for i in range(len(words))))


def neighbour_answer(rows: Sequence[dict[str, Any]], i: int, nearest: int) -> Pair | None:
    """Row ``i``'s right answer against the right answer of its nearest question, when the two share no word
    and the latter is not a yes/no."""
    right, other = rows[i]["right_answer"].strip(), rows[nearest]["right_answer"].strip()
    if other.lower().rstrip(".") in _YES_NO or right.lower().rstrip(".") in _YES_NO or not _disjoint(right, other):
        return None
    return right, other


ROW_CONSTRUCTIONS: dict[str, Callable[[dict[str, Any], random.Random], Pair | None]] = {
    "hn_same_kind": same_kind_span,
    "hn_swapped": swapped_sentence,
    "hn_negated": negated_sentence,
    "multi_swapped": lambda row, rng: multi_sentence(row, rng, "swapped"),
    "multi_negated": lambda row, rng: multi_sentence(row, rng, "negated"),
    "multi_halueval": lambda row, rng: multi_sentence(row, rng, "halueval"),
}
MULTI_SENTENCE_SETS: tuple[str, ...] = ("multi_swapped", "multi_negated", "multi_halueval")
"""One wrong sentence among 2-5 supported ones, by the kind of the wrong one."""
NEIGHBOUR_CONSTRUCTION = "hn_neighbour"
CONSTRUCTIONS: tuple[str, ...] = (*ROW_CONSTRUCTIONS, NEIGHBOUR_CONSTRUCTION)


def build_pairs(name: str, rows: Sequence[dict[str, Any]], indices: Sequence[int], seed: str) -> list[tuple[int, Pair]]:
    """The pairs of construction ``name`` for ``rows[i]`` over ``indices`` (neighbours found among those
    rows only, so a split never borrows from the other), with their row index."""
    out: list[tuple[int, Pair]] = []
    if name == NEIGHBOUR_CONSTRUCTION:
        subset = [rows[i] for i in indices]
        nearest = Neighbours.of(subset).nearest
        for k, i in enumerate(indices):
            pair = neighbour_answer(subset, k, nearest[k])
            if pair is not None:
                out.append((i, pair))
        return out
    build = ROW_CONSTRUCTIONS[name]
    for i in indices:
        pair = build(rows[i], random.Random(f"{seed}:{name}:{i}"))
        if pair is not None:
            out.append((i, pair))
    return out


@dataclass(frozen=True, slots=True)
class RelevanceCase:
    """A question, a chunk that answers it and one that does not."""

    row: int
    question: str
    relevant: str
    irrelevant: str


def neighbour_relevance(rows: Sequence[dict[str, Any]], indices: Sequence[int]) -> list[RelevanceCase]:
    """Each question's own passage against the passage of the question (among ``indices``) sharing the most
    words with it; pairs whose passages are the same text are left out."""
    subset = [rows[i] for i in indices]
    nearest = Neighbours.of(subset).nearest
    return [
        RelevanceCase(i, subset[k]["question"], subset[k]["knowledge"], subset[nearest[k]]["knowledge"])
        for k, i in enumerate(indices)
        if subset[k]["knowledge"] != subset[nearest[k]]["knowledge"]
    ]


PARAPHRASES: tuple[tuple[str, str, str], ...] = (
    # (question, chunk that answers it in other words, chunk that repeats its words without answering)
    (
        "What is the return window?",
        "Items can be returned within 30 days.",
        "Our store windows are cleaned every week, and what you see is what we sell.",
    ),
    (
        "How do I reset my password?",
        "To choose new login credentials, click 'Forgot sign-in details' and follow the emailed link.",
        "Passwords must be at least twelve characters long and reset tokens are stored securely.",
    ),
    (
        "When does the shop open on Sundays?",
        "Weekend trading hours: doors unlock at 10 a.m. on the last day of the week.",
        "The shop sells Sunday newspapers and opens new branches every year.",
    ),
    (
        "Who founded the company?",
        "The firm was started in 1998 by Maria Lopez, a former engineer.",
        "The company employs 300 people and was recently acquired by a larger company.",
    ),
    (
        "How much does shipping cost?",
        "Delivery is free on orders above $50; otherwise a flat fee of $4.99 applies.",
        "Shipping containers cost the port authority millions to move each year.",
    ),
    (
        "Can I pay with a credit card?",
        "We accept Visa, Mastercard and American Express at checkout.",
        "Credit card fraud is a growing problem; pay attention to suspicious emails.",
    ),
    (
        "Where is the headquarters located?",
        "The main office sits in downtown Toronto, on King Street.",
        "The headquarters building was designed by a famous architect and located near the river in plans.",
    ),
    (
        "How long is the warranty?",
        "Every device is covered against defects for two years after purchase.",
        "The warranty card is a long document printed in small type.",
    ),
    (
        "Is the medication safe during pregnancy?",
        "Expectant mothers should not take this drug; it can harm the unborn child.",
        "The medication comes in tablets and should be stored in a safe, dry place.",
    ),
    (
        "What languages does the app support?",
        "The interface is available in English, French, Spanish and Japanese.",
        "The app supports dark mode and languages are a popular topic on its forum.",
    ),
    (
        "How many people live in the city?",
        "The municipality has roughly 2.1 million inhabitants.",
        "People in the city like to live near parks, and many move there each year.",
    ),
    (
        "Why was the flight cancelled?",
        "Air traffic control grounded all departures because of a snowstorm.",
        "Flight cancellations are refunded within seven days of the cancelled flight's date.",
    ),
)
"""Hand-written: the dev rows hold no paraphrased questions, and no model here writes them."""


def paraphrase_relevance() -> list[RelevanceCase]:
    """``PARAPHRASES`` as cases (rows numbered from 0)."""
    return [RelevanceCase(i, q, good, bad) for i, (q, good, bad) in enumerate(PARAPHRASES)]
