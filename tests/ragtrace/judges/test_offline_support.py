"""The offline support model: the windows of a chunk it reads a claim against, and the shipped
model run by onnxruntime (real weights, no fakes)."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest

from ragtrace.judges.offline.support import (
    TOP_WINDOWS,
    WINDOW_WORDS,
    SupportModel,
    best_windows,
    chunk_windows,
    default_support_model,
    reads,
)

from ._threads import at_once


def _sentences(n: int, words: int = 12) -> list[str]:
    return [" ".join([f"Sentence{i}"] + [f"w{i}x{k}" for k in range(words - 1)]) + "." for i in range(n)]


def test_a_short_chunk_is_one_window() -> None:
    assert chunk_windows("  The Eiffel Tower is in Paris.  ") == ("The Eiffel Tower is in Paris.",)
    assert chunk_windows("   ") == ()


def test_a_long_chunk_is_cut_into_overlapping_windows_of_whole_sentences() -> None:
    sentences = _sentences(40)
    windows = chunk_windows(" ".join(sentences))
    assert len(windows) > 1
    for window in windows:
        assert len(window.split()) <= WINDOW_WORDS
    # Every sentence is whole in some window, and each window overlaps the next one.
    for sentence in sentences:
        assert any(sentence in w for w in windows)
    for first, second in pairwise(windows):
        assert set(first.split(". ")) & set(second.split(". "))


def test_only_usual_chunks_keep_their_windows_cached() -> None:
    # A long chunk's windows are about twice its size: caching 4,096 of 1 MB chunks would hold gigabytes.
    from ragtrace.judges.offline import support as _offline_support
    from ragtrace.judges.offline.short_cache import CACHED_TEXT_CHARS

    _offline_support._cached_windows.cache_clear()
    long_chunk = " ".join(_sentences(200))  # twice CACHED_TEXT_CHARS: past it is what counts, not how far
    assert len(long_chunk) > CACHED_TEXT_CHARS
    assert chunk_windows(long_chunk) == chunk_windows(long_chunk)
    assert _offline_support._cached_windows.cache_info().currsize == 0
    chunk_windows(" ".join(_sentences(40)))
    assert _offline_support._cached_windows.cache_info().currsize == 1


def test_a_sentence_longer_than_a_window_is_cut_into_runs_of_words() -> None:
    long_sentence = " ".join(f"word{i}" for i in range(WINDOW_WORDS * 2 + 5)) + "."
    windows = chunk_windows(long_sentence)
    assert all(len(w.split()) <= WINDOW_WORDS for w in windows)
    assert " ".join(windows).split()[-1] == f"word{WINDOW_WORDS * 2 + 4}."


def test_the_windows_sharing_most_words_with_the_claim_are_kept_in_order() -> None:
    windows = [
        "Paris hosts the Louvre museum.",
        "The tower was completed in 1889 in Paris by Gustave Eiffel.",
        "Lyon is a city in France.",
        "Eiffel designed the tower for the 1889 World's Fair.",
        "Berlin is in Germany.",
    ]
    picked = best_windows("Gustave Eiffel completed the tower in 1889.", windows, top=2)
    assert picked == [1, 3]
    assert best_windows("anything", windows[:TOP_WINDOWS]) == list(range(TOP_WINDOWS))


@pytest.fixture(scope="module")
def model() -> SupportModel:
    return default_support_model()


EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 by Gustave Eiffel's company."
)


# Passages with a question, its answer and another span of the same passage: every word of both is in
# the passage, so only reading the question tells them apart (the length-controlled construction).
SPANS = [
    (
        "Marie Curie was a Polish-born physicist and chemist. She won the Nobel Prize in Physics in 1903 and the "
        "Nobel Prize in Chemistry in 1911. She worked in Paris at the University of Paris.",
        "In what year did Marie Curie win the Nobel Prize in Chemistry?",
        "1911",
        "1903",
    ),
    (
        "The Amazon River flows through Brazil, Peru and Colombia. It is about 6,400 km long and discharges more "
        "water than any other river. Its largest tributary is the Madeira River.",
        "What is the largest tributary of the Amazon?",
        "the Madeira River",
        "Colombia",
    ),
    (
        "Apollo 11 was the spaceflight that first landed humans on the Moon. Commander Neil Armstrong and pilot "
        "Buzz Aldrin landed the lunar module Eagle on July 20, 1969. Michael Collins flew the command module "
        "Columbia alone in lunar orbit.",
        "Who flew the command module in lunar orbit?",
        "Michael Collins",
        "Buzz Aldrin",
    ),
    (
        "The Great Barrier Reef lies off the coast of Queensland, Australia. It is composed of over 2,900 "
        "individual reefs and 900 islands. It was selected as a World Heritage Site in 1981.",
        "When was the Great Barrier Reef selected as a World Heritage Site?",
        "1981",
        "2,900",
    ),
    (
        "Johann Sebastian Bach was a German composer of the Baroque period. He was born in Eisenach in 1685 and "
        "died in Leipzig in 1750. His works include the Brandenburg Concertos.",
        "Where did Bach die?",
        "Leipzig",
        "Eisenach",
    ),
    (
        "Mount Kilimanjaro is a dormant volcano in Tanzania. It has three volcanic cones: Kibo, Mawenzi and "
        "Shira. Its summit is about 5,895 metres above sea level.",
        "How high is the summit of Kilimanjaro?",
        "about 5,895 metres",
        "Mawenzi",
    ),
    (
        "The Python programming language was created by Guido van Rossum. It was first released in 1991. "
        "Python 3.0 was released in 2008.",
        "Who created Python?",
        "Guido van Rossum",
        "1991",
    ),
    (
        "The Treaty of Versailles was signed on 28 June 1919 in the Hall of Mirrors. It ended the state of war "
        "between Germany and the Allied Powers. It was negotiated at the Paris Peace Conference.",
        "Where was the Treaty of Versailles signed?",
        "the Hall of Mirrors",
        "the Paris Peace Conference",
    ),
]


def test_the_model_reads_which_span_answers_the_question_more_often_than_not(model: SupportModel) -> None:
    # The model is a statistical reader (0.77 AUROC on the held-out length-controlled set, see
    # docs/offline-judge.md), not an oracle: on these eight it must prefer the answer in most, where a
    # reader of words alone ties every time. It gets 7 of 8 as shipped.
    wins = 0
    for passage, question, right, other in SPANS:
        logits = model.support([f"{question} {right}", f"{question} {other}"], [passage])
        assert logits.shape == (2, 1)
        wins += int(logits[0, 0] > logits[1, 0])
    assert wins > len(SPANS) // 2


def test_a_claim_the_passage_does_not_state_is_not_supported(model: SupportModel) -> None:
    logits = model.support(["The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Berlin."], [EIFFEL])
    assert logits[0, 0] > 0 > logits[1, 0]


def test_support_is_the_best_of_the_windows_read(model: SupportModel) -> None:
    filler = " ".join(f"Sentence {i} talks about the weather in a town of no note at all today." for i in range(40))
    long_chunk = f"{filler} {EIFFEL} {filler}"
    windows = chunk_windows(long_chunk)
    assert len(windows) > TOP_WINDOWS
    claim = "The Eiffel Tower was completed in 1889."
    read = best_windows(claim, windows)
    assert len(read) == TOP_WINDOWS
    assert any("1889" in windows[k] for k in read)
    logits = model.support([claim], [long_chunk, ""])
    # The chunk's support is its best window's; an empty chunk supports nothing.
    assert logits[0, 0] == pytest.approx(max(model.pair_logits([(claim, windows[k]) for k in read])))
    assert logits[0, 1] == -math.inf


def test_pairs_are_read_alike_in_any_batch(model: SupportModel) -> None:
    claims = [f"The Eiffel Tower was completed in {year}." for year in range(1880, 1900)]
    together = model.pair_logits([(c, EIFFEL) for c in claims])
    alone = np.array([model.pair_logits([(c, EIFFEL)])[0] for c in claims])
    np.testing.assert_allclose(together, alone, atol=1e-3)
    # The model reads the year, if not to the digit (1888 scores 0.12 above 1889: SUPPORT_MODEL_CARD.md);
    # the judge's number rule rejects the other years (test_offline_judge).
    right = claims.index("The Eiffel Tower was completed in 1889.")
    assert right in np.argsort(together)[-2:]
    assert together[right] > np.median(np.delete(together, right)) + 1.0


def test_claims_in_a_script_the_model_was_not_trained_on_are_not_read(model: SupportModel) -> None:
    assert reads("The Eiffel Tower is in Paris.")
    assert reads("What is the capital of Brazil? Brasília")
    assert not reads("What is the capital of Russia? Москва")
    assert not reads("莫斯科是俄罗斯的首都。")
    logits = model.support(["What is the capital of Russia? 莫斯科", "The tower is in Paris."], [EIFFEL])
    assert math.isnan(logits[0, 0])
    assert not math.isnan(logits[1, 0])


def test_the_model_loads_once_for_every_thread() -> None:
    fresh = SupportModel()
    at_once(lambda _: fresh.pair_logits([("A claim.", "A context.")]), threads=4)
    assert fresh.loads == 1
    assert default_support_model() is default_support_model()


async def test_a_remembered_reading_is_not_counted_as_a_call() -> None:
    from ragtrace.judges.offline import OfflineJudge

    judge = OfflineJudge()
    claims = ["The Eiffel Tower was completed in 1889."]
    first = await judge.support(claims, [EIFFEL])  # the tiered judge routes on this...
    again = await judge.verify(claims, [EIFFEL])  # ...then asks for the verdicts of the same reading
    other = await judge.verify(["The Eiffel Tower is in Rome."], [EIFFEL])
    assert (first.cost.embedding_calls, again.cost.embedding_calls, other.cost.embedding_calls) == (1, 0, 1)
