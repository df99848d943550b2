"""Alignment evidence: whether a passage states a claim's words together and in its order."""

from __future__ import annotations

from ragtrace.judges.offline.alignment import Alignment, alignment, passage_tokens

PASSAGE = (
    "Smith joined the club in 1998 as a junior player. "
    "The club won the national cup in 2004 under coach Brown, after a long season."
)


def test_a_sentence_of_the_passage_is_fully_aligned() -> None:
    found = alignment("Smith joined the club in 1998 as a junior player.", passage_tokens(PASSAGE))
    assert found.order == 1.0
    assert found.margin > 0.5


def test_swapped_years_break_the_order_and_stand_apart_from_their_facts() -> None:
    right = alignment("The club won the national cup in 2004.", passage_tokens(PASSAGE))
    swapped = alignment("The club won the national cup in 1998.", passage_tokens(PASSAGE))
    assert swapped.order < right.order
    assert swapped.proximity < right.proximity
    assert swapped.margin < right.margin


def test_swapped_names_inside_one_sentence_break_the_order() -> None:
    found = alignment("Brown won the national cup in 2004 under coach Smith.", passage_tokens(PASSAGE))
    assert found.order < 1.0


def test_a_bare_answer_beside_the_question_words_outranks_another_name_of_the_passage() -> None:
    tokens = passage_tokens(PASSAGE)
    right = alignment("Who coached the club when it won the national cup? Brown", tokens)
    other = alignment("Who coached the club when it won the national cup? Smith", tokens)
    assert right.margin > other.margin
    assert right.proximity > other.proximity


def test_a_claim_the_passage_lacks_is_not_aligned_and_an_empty_passage_aligns_nothing() -> None:
    assert alignment("Jones scored 12 goals.", passage_tokens(PASSAGE)).proximity == 0.0
    assert alignment("Jones scored 12 goals.", passage_tokens("")) == Alignment(0.0, 0.0, 0.0)
