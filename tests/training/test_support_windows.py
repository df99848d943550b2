"""Windows of a chunk that the support model (training/judge) reads a claim against."""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training" / "judge"))

from support import TOP_WINDOWS, WINDOW_WORDS, best_windows, chunk_windows


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
