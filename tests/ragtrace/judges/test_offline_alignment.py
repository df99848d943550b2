"""Alignment evidence: whether a passage states a claim's words together and in its order."""

from __future__ import annotations

import math

from ragtrace.judges.offline import aligned, grounding
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


def test_a_word_the_passage_lacks_is_skipped_not_counted_out_of_order() -> None:
    # "signed" for "joined": one word the passage does not state; the rest stands in the claim's order.
    reworded = alignment("Smith signed with the club in 1998 as a junior player.", passage_tokens(PASSAGE))
    assert reworded.order == 1.0
    # The same stated words out of the passage's order still break it.
    shuffled = alignment("A junior player, Smith signed with the club in 1998.", passage_tokens(PASSAGE))
    assert shuffled.order < 1.0


def test_a_claim_the_passage_states_one_word_of_has_no_order() -> None:
    assert alignment("Jones signed with Arsenal in 1998.", passage_tokens(PASSAGE)).order == 0.0


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


def test_the_aligned_logit_keeps_nan_for_a_claim_the_model_does_not_read() -> None:
    assert math.isnan(aligned.aligned_logit(math.nan, Alignment(1.0, 1.0, 1.0), 1.0, False))


def test_a_covered_claim_placed_as_the_passage_places_it_scores_above_a_rearranged_one() -> None:
    for answer in (False, True):
        placed = aligned.aligned_logit(2.0, Alignment(0.5, 0.7, 1.0), 1.0, answer)
        rearranged = aligned.aligned_logit(2.0, Alignment(0.2, 0.3, 0.8), 1.0, answer)
        assert placed > rearranged


def test_alignment_does_not_move_a_claim_the_chunk_does_not_cover() -> None:
    for answer in (False, True):
        low = aligned.aligned_logit(1.0, Alignment(0.0, 0.0, 0.0), 0.8, answer)
        high = aligned.aligned_logit(1.0, Alignment(1.0, 1.0, 1.0), 0.8, answer)
        assert low == high == 1.0
        assert aligned.aligned_logit(3.0, Alignment(0.0, 0.0, 0.0), 0.8, answer) > low


def test_a_sentence_reworded_in_another_order_keeps_the_models_logit() -> None:
    # "The capital of Brazil is Brasilia." against "Brazil ... Its capital is Brasilia": order 0.
    assert aligned.aligned_logit(1.5, Alignment(0.2, 0.3, 0.0), 1.0, False) == 1.5
    assert aligned.aligned_logit(1.5, Alignment(0.2, 0.3, aligned.NEAR_COPY), 1.0, False) != 1.5


def test_a_near_copy_out_of_order_is_not_restated_and_a_rewording_is() -> None:
    values = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 3.0, 1.0]
    assert grounding.restated(values)
    values[grounding.FEATURES.index("order")] = 0.8
    assert not grounding.restated(values)
    values[grounding.FEATURES.index("order")] = 0.4
    assert grounding.restated(values)
