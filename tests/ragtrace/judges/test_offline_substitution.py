"""Substitution evidence: a near copy of a chunk's sentence with another of the chunk's names or numbers in
its place is not supported, and a rewording, an alias, a coreference or a moved name is left to the other
evidence."""

from __future__ import annotations

import pytest

from ragtrace import RagRecord
from ragtrace.judges import Verdict
from ragtrace.judges.offline import OfflineJudge, grounding
from ragtrace.judges.offline import substitution as sub
from ragtrace.judges.offline.short_cache import CACHED_TEXT_CHARS
from ragtrace.judges.offline.substitution import Substitution, substitution, words_of
from ragtrace.metrics import Faithfulness

MUSEUM = (
    "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Beşiktaş district "
    "in Istanbul. The poet designed the house himself. The Sultan Ahmet Mosque stands across the city."
)
SENTENCE = grounding.chunk_units(MUSEUM)[0]
SWAPPED = (
    "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Sultan Ahmet Mosque "
    "district in Istanbul."
)


def read(claim: str, sentence: str = SENTENCE, chunk: str = MUSEUM) -> Substitution | None:
    return substitution(claim, sentence, words_of(chunk))


def first_sentence_read(claim: str, chunk: str) -> Substitution | None:
    return read(claim, grounding.chunk_units(chunk)[0], chunk)


def test_a_name_of_the_chunk_in_the_place_of_the_sentences_own_is_a_substitution() -> None:
    assert read(SWAPPED) == Substitution(("Sultan", "Ahmet", "Mosque"), ("Beşiktaş",))
    # The sentence itself is no substitution of itself.
    assert read(SENTENCE) is None


def test_a_number_for_a_number_and_a_run_that_reaches_the_claims_end() -> None:
    chunk = "The club was founded in 1898 in Turin. It won its first title in 1905."
    assert first_sentence_read("The club was founded in 1905 in Turin.", chunk) == Substitution(("1905",), ("1898",))
    chunk = "Annette Carol Bening (born May 29, 1958) is an American actress. She starred beside John Candy."
    claim = "Annette Carol Bening (born May 29, 1958) is an John Candy actress."
    assert first_sentence_read(claim, chunk) == Substitution(("John", "Candy"), ("American",))


def test_a_run_copied_on_one_side_only_is_a_rewording() -> None:
    chunk = "Smith met Rome in Paris as a junior player. Later Leeds played Milan there."
    # Each replaced name has one copied word ("in") on one side: neither is copied on both (FLANK, 2 words).
    assert first_sentence_read("Smith met Leeds in Milan as a junior player.", chunk) is None
    # The same name with the sentence copied around it: a substitution.
    assert first_sentence_read("Smith met Rome in Milan as a junior player.", chunk) == Substitution(
        ("Milan",), ("Paris",)
    )


def test_a_claim_that_copies_too_little_of_the_sentence_or_a_run_too_long_is_not_read() -> None:
    chunk = "Smith met Rome in Paris as a junior player. Later Leeds played Milan there."
    # The same substitution inside a claim whose words are 8 of 13 the sentence's: not a near copy (0.75).
    assert first_sentence_read("Yesterday morning the young Smith met Rome in Milan as a junior player.", chunk) is None
    # A run longer than MAX_RUN (5) words is a clause, not a name, however well the rest is copied.
    chunk = (
        "In the spring of 2001 the annual prize of the city went to Ann Lee at a dinner in the town hall. "
        "The Royal Society of Arts and Sciences hosted the dinner."
    )
    claim = (
        "In the spring of 2001 the annual prize of the city went to Royal Society of Arts and Sciences at a "
        "dinner in the town hall."
    )
    assert first_sentence_read(claim, chunk) is None
    assert first_sentence_read(claim.replace("Royal Society of Arts and Sciences", "Royal Society"), chunk) is not None
    assert read("") is None


def test_a_name_the_chunk_never_states_is_left_to_the_missing_entity_evidence() -> None:
    claim = SWAPPED.replace("Sultan Ahmet Mosque", "Kadıköy")
    assert read(claim) is None


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        # An acronym of the sentence's name, and a name given in part.
        (
            "The summit of the EU opened in Brussels on Monday.",
            "The summit of the European Union opened in Brussels on Monday. EU leaders spoke.",
        ),
        (
            "President Obama spoke in Chicago on Tuesday.",
            "President Barack Obama spoke in Chicago on Tuesday. Obama thanked the crowd.",
        ),
        # Periods, accents and hyphens do not make another name.
        (
            "The office moved to the US in 2001 after the merger.",
            "The office moved to the U.S. in 2001 after the merger. The US market grew.",
        ),
        (
            "He was born in Sao Paulo in 1950 to a large family.",
            "He was born in São Paulo in 1950 to a large family. Sao Paulo is big.",
        ),
        # A year and its decade.
        (
            "The band formed in the 1990s in Seattle, Washington.",
            "The band formed in 1995 in Seattle, Washington. Grunge ruled the 1990s.",
        ),
    ],
)
def test_aliases_are_not_substitutions(claim: str, chunk: str) -> None:
    assert first_sentence_read(claim, chunk) is None


@pytest.mark.parametrize(
    ("claim", "chunk"),
    [
        (
            "The President signed the bill on Monday in Washington.",
            "Biden signed the bill on Monday in Washington. The President said it was historic, and reporters "
            "asked Biden about it.",
        ),
        (
            "Tony Blair won the election in 1997 by a landslide.",
            "The Labour leader won the election in 1997 by a landslide. Tony Blair moved into Downing Street.",
        ),
    ],
)
def test_a_title_for_a_name_is_a_coreference(claim: str, chunk: str) -> None:
    assert first_sentence_read(claim, chunk) is None


def test_a_capital_that_only_opens_a_sentence_makes_no_name() -> None:
    chunk = "Researchers discovered the species in 2010 near the river. Scientists were surprised."
    assert first_sentence_read("Scientists discovered the species in 2010 near the river.", chunk) is None
    # Two capitalised words, or a name the chunk writes inside a sentence, are names where they open one.
    chunk = "Die Rhöner Säuwäntzt are a band from Hessen, Germany. They cover songs by Lonnie Donegan."
    claim = "Lonnie Donegan are a band from Hessen, Germany."
    assert first_sentence_read(claim, chunk) == Substitution(("Lonnie", "Donegan"), ("Die", "Rhöner", "Säuwäntzt"))


def test_a_name_moved_within_the_sentence_is_a_rewording_and_two_names_exchanged_are_not() -> None:
    chunk = "In January, CIA drone strikes killed two of its leaders in North Waziristan, officials said."
    moved = "In North Waziristan, January drone strikes killed two of its leaders, officials said."
    assert first_sentence_read(moved, chunk) is None
    chunk = "He is a member of the Inhumans, and was also part of the delegation sent to Earth."
    exchanged = "He is a member of the Earth, and was also part of the delegation sent to Inhumans."
    assert first_sentence_read(exchanged, chunk) is not None


def test_a_rewording_or_a_common_word_for_a_name_is_not_read() -> None:
    assert read("Tevfik Fikret, a Turkish poet, lived in a house in Istanbul's Beşiktaş district.") is None
    claim = "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of a quiet district."
    assert read(claim) is None


def test_a_sentence_too_long_to_align_is_not_read() -> None:
    long_sentence = " ".join(["word"] * (sub.MAX_SENTENCE_WORDS + 1)) + " Beşiktaş district in Istanbul."
    assert read("A word of Sultan Ahmet district in Istanbul.", long_sentence, MUSEUM + " " + long_sentence) is None


def test_verdict_of_never_supports_a_substitution_and_contradicts_it_on_topic_only() -> None:
    on_topic = [0.0] * len(grounding.FEATURES)
    on_topic[grounding.FEATURES.index("best_unit_coverage")] = 1.0
    on_topic[grounding.FEATURES.index("coverage")] = 1.0
    off_topic = list(on_topic)
    off_topic[grounding.FEATURES.index("best_unit_coverage")] = 0.0
    assert grounding.verdict_of(0.99, on_topic) is Verdict.SUPPORTED
    assert grounding.verdict_of(0.99, on_topic, substituted=True) is Verdict.CONTRADICTED
    assert grounding.verdict_of(0.99, off_topic, substituted=True) is Verdict.NEITHER
    # A bare answer is read by its own rule: the flag is not read for it.
    assert grounding.verdict_of(0.99, on_topic, named=True, substituted=True) is Verdict.SUPPORTED
    assert grounding.verdict_of(0.99, on_topic, named=False, substituted=True) is Verdict.NEITHER


async def test_the_offline_judge_contradicts_a_substituted_sentence_and_supports_the_copy() -> None:
    judge = OfflineJudge()
    reply = await judge.verify([SENTENCE, SWAPPED], [MUSEUM])
    assert reply.value[0][0] is Verdict.SUPPORTED
    assert reply.value[1][0] is Verdict.CONTRADICTED
    # One such sentence among right ones is enough to flag the answer (least-supported claim below the cut).
    answer = f"{SWAPPED} The poet designed the house himself."
    score = await Faithfulness().score(RagRecord.of("Where is the Aşiyan Museum?", [MUSEUM], answer), judge)
    verdicts = {v.claim: v.verdict for v in score.details["claim_verdicts"]}
    assert verdicts == {SWAPPED: "contradicted", "The poet designed the house himself.": "supported"}
    assert min(v.support for v in score.details["claim_verdicts"] if v.support is not None) < 0.5
    # No chunks: nothing to read, no error.
    assert (await judge.verify([SWAPPED], [])).value == [[]]
    await judge.aclose()


def test_a_chunks_words_are_read_once_and_a_long_chunks_never_kept() -> None:
    # A RAG app retrieves the same chunks again and again: their reading is kept, as the chunk's
    # sentences, facts and tokens are; a chunk past CACHED_TEXT_CHARS is read anew, so it is never kept.
    assert words_of(MUSEUM) is words_of(MUSEUM)
    long_chunk = " ".join(f"Sentence {i} names the word Unusual{i}." for i in range(250))
    assert len(long_chunk) > CACHED_TEXT_CHARS
    first = words_of(long_chunk)
    assert first == words_of(long_chunk) and first is not words_of(long_chunk)
    assert "unusual249" in first.keys
