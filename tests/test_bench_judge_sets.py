"""bench/judge_sets.py: each construction gives a wrong text of the kind it promises, from the row alone."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import judge_sets as sets

ROW = {
    "knowledge": (
        "The tower was completed in 1887 by the architect Gustave Eiffel. Eiffel died in 1923 in Paris."
        "The tower stands in Paris and was the tallest structure in the world until 1930."
    ),
    "question": "In what year did the architect of the tower die?",
    "right_answer": "1923",
    "hallucinated_answer": "The architect died in 1887.",
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def test_glued_passages_split_into_sentences() -> None:
    assert len(sets.sentences(ROW["knowledge"])) == 3


def test_same_kind_span_is_another_year_of_the_passage() -> None:
    pair = sets.same_kind_span(ROW, random.Random(0))
    assert pair is not None
    right, wrong = pair
    assert right == "1923"
    assert wrong in {"1887", "1930"} and wrong in ROW["knowledge"]


def test_a_swap_keeps_the_words_and_changes_the_sentence() -> None:
    sentence = "The tower was completed in 1887 by the architect Gustave Eiffel and he died in 1923."
    swapped = sets.swapped(sentence, ROW["knowledge"], random.Random(1))
    assert swapped is not None and swapped != sentence
    assert _words(swapped) <= _words(ROW["knowledge"]) | _words(sentence)


def test_neighbours_in_a_list_are_not_swapped() -> None:
    # Swapping "Paris, France" is a change of order, not of fact.
    assert sets.swapped("It is located in Paris, France.", "It is located in Paris, France.", random.Random(0)) is None


def test_negation_flips_polarity_both_ways() -> None:
    assert sets.negated("Eiffel was an architect.") == "Eiffel was not an architect."
    assert sets.negated("Eiffel was not a painter.") == "Eiffel was a painter."
    assert sets.negated("Eiffel designed towers.") is None


def test_multi_sentence_replaces_exactly_one_sentence() -> None:
    for kind in ("swapped", "negated", "halueval"):
        pair = sets.multi_sentence(ROW, random.Random(kind), kind)
        assert pair is not None
        right, wrong = pair
        assert right != wrong
        assert len(set(sets.sentences(right)) - set(sets.sentences(wrong))) == 1


def test_neighbour_answer_comes_from_the_question_sharing_most_words() -> None:
    rows = [
        ROW,
        {**ROW, "question": "When was the tower completed?", "right_answer": "1887"},
        {**ROW, "question": "Which river flows through the city?", "right_answer": "Seine"},
    ]
    built = sets.build_pairs(sets.NEIGHBOUR_CONSTRUCTION, rows, range(3), seed="t")
    assert (0, ("1923", "1887")) in built


def test_relevance_pairs_never_pair_a_passage_with_itself() -> None:
    rows = [ROW, {**ROW, "question": "When was the tower completed?"}, {**ROW, "knowledge": "Another text."}]
    cases = sets.neighbour_relevance(rows, range(3))
    assert all(case.relevant != case.irrelevant for case in cases)
