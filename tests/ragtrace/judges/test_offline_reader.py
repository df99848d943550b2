"""The offline answer reader: where an answer occurs among a pair's tokens, the span scores its margin is
read from, and the shipped model run by onnxruntime (real weights, no fakes)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragtrace.judges.offline.grounding import FEATURES, bare_answer_named, read_answers
from ragtrace.judges.offline.reader import (
    MAX_ANSWER_PIECES,
    AnswerReader,
    answer_forms,
    answer_pieces,
    best_span,
    continuation_ids,
    default_answer_reader,
    occurrences,
    span_margin,
)
from ragtrace.judges.offline.support import chunk_windows, encode_pairs, load_tokenizer

from ._threads import at_once
from .test_offline_support import EIFFEL, SPANS


def test_an_answer_is_found_in_the_passage_only() -> None:
    tokenizer = load_tokenizer()
    ids, _, types = encode_pairs(tokenizer, [("When was the tower in Paris completed?", EIFFEL)])
    paris = answer_pieces(tokenizer, "Paris.")  # a closing full stop is not part of the answer
    assert paris == answer_pieces(tokenizer, "paris")  # the tokenizer is uncased
    found = occurrences(ids[0].tolist(), types[0].tolist(), paris)
    # "Paris" is in the question and once in the passage: only the passage's counts.
    assert len(found) == 1
    start, end = found[0]
    assert types[0][start] == 1 and ids[0][start : end + 1].tolist() == paris
    assert occurrences(ids[0].tolist(), types[0].tolist(), answer_pieces(tokenizer, "Berlin")) == []
    assert occurrences(ids[0].tolist(), types[0].tolist(), []) == []


def test_an_answer_ends_on_a_words_end_and_may_end_the_passage() -> None:
    tokenizer = load_tokenizer()
    continuations = continuation_ids(tokenizer)
    ids, _, types = encode_pairs(tokenizer, [("Who?", "A Washingtonian met Washington")])
    row, kinds = ids[0].tolist(), types[0].tolist()
    washington = answer_pieces(tokenizer, "Washington")
    found = occurrences(row, kinds, washington, continuations)
    # Only the last word: "Washingtonian" goes on after "washington" (its next piece is a "##" piece).
    assert len(occurrences(row, kinds, washington)) == 2
    assert found == [(len(row) - 1 - len(washington), len(row) - 2)]  # the last passage token, before [SEP]


def test_the_margin_is_the_answers_best_span_against_the_best_of_all() -> None:
    start = np.array([0.0, 1.0, 3.0, 0.5, 2.0, 0.0])
    end = np.array([0.0, 0.5, 1.0, 4.0, 0.0, 0.0])
    passage = np.array([False, True, True, True, True, False])
    # The best span starts at 2 and ends at 3 (3 + 4); a span ends at or after its start.
    assert best_span(start, end, passage) == 7.0
    assert span_margin(start, end, passage, [(2, 3)]) == 0.0
    assert span_margin(start, end, passage, [(4, 4)]) == -5.0
    # The best of an answer's occurrences counts.
    assert span_margin(start, end, passage, [(4, 4), (1, 3)]) == -2.0
    assert math.isnan(span_margin(start, end, passage, []))
    # Tokens outside the passage (the question, [CLS], [SEP]) are never a span.
    start[0] = 100.0
    assert best_span(start, end, passage) == 7.0


def test_no_span_is_longer_than_the_cap() -> None:
    n = MAX_ANSWER_PIECES + 1
    start, end = np.zeros(n), np.zeros(n)
    passage = np.ones(n, dtype=bool)
    start[0], end[n - 2] = 5.0, 5.0
    assert best_span(start, end, passage) == 10.0  # exactly MAX_ANSWER_PIECES pieces: a span
    end[n - 2], end[n - 1] = 0.0, 5.0
    assert best_span(start, end, passage) == 5.0  # one more: not a span


@pytest.fixture(scope="module")
def reader() -> AnswerReader:
    return default_answer_reader()


def test_the_reader_prefers_the_span_that_answers_the_question(reader: AnswerReader) -> None:
    # A statistical reader (0.94 AUROC on the calibration split's same-kind spans, READER_MODEL_CARD.md),
    # not an oracle: it gets 7 of these 8 as shipped (it prefers another span to "the Hall of Mirrors"),
    # and the answer is its own choice in 6. A reader of words alone ties every time.
    items = [(q, a, p) for p, q, right, other in SPANS for a in (right, other)]
    margins = reader.margins(items)
    assert not np.isnan(margins).any()
    assert (margins <= 0).all()
    right, other = margins[0::2], margins[1::2]
    assert (right > other).sum() >= len(SPANS) - 1
    assert (right == 0).sum() >= len(SPANS) // 2


def test_the_issues_year_of_another_event_is_not_the_answer(reader: AnswerReader) -> None:
    passage = (
        "The Eiffel Tower was designed by the engineer Gustave Eiffel, whose company began building it in 1887. "
        "Gustave Eiffel died in Paris in 1923."
    )
    question = "In what year did the tower's architect die?"
    right, wrong = reader.margins([(question, "1923", passage), (question, "1887", passage)])
    assert right == 0.0  # the reader's own choice
    assert wrong < right - 0.5  # 1.1 below as shipped


def test_an_answer_is_read_with_or_without_its_article(reader: AnswerReader) -> None:
    assert answer_forms(" the Madeira River ") == ("the Madeira River", "Madeira River")
    assert answer_forms("An Lushan") == ("An Lushan", "Lushan")
    assert answer_forms("Theodore") == ("Theodore",)
    passage, question = SPANS[1][0], SPANS[1][1]
    with_article, without = reader.margins(
        [(question, "the Madeira River", passage), (question, "Madeira River", passage)]
    )
    assert with_article == without == 0.0


def test_an_answer_the_passage_does_not_state_is_not_read(reader: AnswerReader) -> None:
    margins = reader.margins([("Where is the tower?", "Berlin", EIFFEL), ("Where is the tower?", "Paris", EIFFEL)])
    assert math.isnan(margins[0])
    assert not math.isnan(margins[1])


def test_a_long_passage_is_read_in_the_windows_that_state_the_answer(reader: AnswerReader) -> None:
    filler = " ".join(f"Sentence {i} talks about the weather in a town of no note at all today." for i in range(40))
    passage = f"{filler} {EIFFEL} {filler}"
    windows = chunk_windows(passage)
    assert len(windows) > 2 and sum("1889" in w for w in windows) < len(windows)
    question = "When was the Eiffel Tower completed?"
    right, other, absent = reader.margins(
        [(question, "1889", passage), (question, "Sentence 3", passage), (question, "1923", passage)]
    )
    # The year is read in a window far from the passage's start, and is the reader's own choice there.
    assert right == 0.0
    assert other < right
    assert math.isnan(absent)


def test_an_answer_longer_than_any_span_is_not_read(reader: AnswerReader) -> None:
    passage = SPANS[2][0]
    long_answer = " ".join(passage.split()[:30])  # more than MAX_ANSWER_PIECES word pieces, all in the passage
    assert len(answer_pieces(load_tokenizer(), long_answer)) > MAX_ANSWER_PIECES
    short_answer = " ".join(passage.split()[:3])
    long_margin, short_margin = reader.margins(
        [("What was Apollo 11?", a, passage) for a in (long_answer, short_answer)]
    )
    assert math.isnan(long_margin)
    assert not math.isnan(short_margin)


def test_only_bare_answers_joined_to_their_question_are_read(reader: AnswerReader) -> None:
    claims = [
        "What is the largest tributary of the Amazon? the Madeira River",  # a bare answer: read
        "What is the largest tributary of the Amazon? Colombia",  # another span: read, far below
        "Its largest tributary is the Madeira River.",  # a sentence: not read
        "Does the Amazon flow through Peru? Yes",  # yes/no: not read
        "What is the capital of Russia? Москва",  # a script the models do not read
    ]
    margins = read_answers(reader, claims, [SPANS[1][0], EIFFEL])
    assert margins.shape == (5, 2)
    assert margins[0, 0] == 0.0 and margins[1, 0] < -1.0
    assert np.isnan(margins[2:]).all()
    assert np.isnan(margins[:, 1]).all()  # the second chunk states neither answer
    assert np.isnan(read_answers(None, claims, [SPANS[1][0]])).all()


def test_a_named_bare_answer_the_reader_ranks_below_its_cut_is_not_the_answer() -> None:
    claim = "Where did Bach die? Eisenach"
    values = [0.0] * len(FEATURES)
    values[FEATURES.index("coverage")] = 1.0
    values[FEATURES.index("model_support")] = 5.0
    values[FEATURES.index("answer_reading")] = -2.0
    assert bare_answer_named(claim, values, min_logit=0.0, min_margin=-3.0) is True
    assert bare_answer_named(claim, values, min_logit=0.0, min_margin=-1.0) is False
    values[FEATURES.index("answer_reading")] = math.nan  # the chunk does not state it: the reader abstains
    assert bare_answer_named(claim, values, min_logit=0.0, min_margin=-1.0) is True


def test_the_reader_loads_once_for_every_thread() -> None:
    fresh = AnswerReader()
    results = at_once(lambda _: float(fresh.margins([("Where is the tower?", "Paris", EIFFEL)])[0]), threads=4)
    assert fresh.loads == 1
    assert len(results) == 4 and len(set(results)) == 1 and not math.isnan(results[0])
