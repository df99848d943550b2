"""Substitution evidence: a near copy of a chunk's sentence with another of the chunk's names or numbers in
its place is not supported, and a rewording, an alias or a moved name is left to the other evidence."""

from __future__ import annotations

from ragtrace import RagRecord
from ragtrace.judges import Verdict
from ragtrace.judges.offline import OfflineJudge, grounding
from ragtrace.judges.offline.substitution import Substitution, substitution, words_of
from ragtrace.metrics import Faithfulness

MUSEUM = (
    "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Beşiktaş district "
    "in Istanbul. The poet designed the house himself. The Sultan Ahmet Mosque stands across the city."
)
SENTENCE = grounding.chunk_units(MUSEUM)[0]


def read(claim: str, sentence: str = SENTENCE, chunk: str = MUSEUM) -> Substitution | None:
    return substitution(claim, sentence, words_of(chunk))


def test_a_name_of_the_chunk_in_the_place_of_the_sentences_own_is_a_substitution() -> None:
    claim = (
        "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Sultan Ahmet "
        "Mosque district in Istanbul."
    )
    assert read(claim) == Substitution(("Sultan", "Ahmet", "Mosque"), ("Beşiktaş",))
    # The sentence itself is no substitution of itself.
    assert read(SENTENCE) is None


def test_a_number_for_a_number_and_a_run_that_reaches_the_claims_end() -> None:
    chunk = "The club was founded in 1898 in Turin. It won its first title in 1905."
    sentence = grounding.chunk_units(chunk)[0]
    assert read("The club was founded in 1905 in Turin.", sentence, chunk) == Substitution(("1905",), ("1898",))
    # A name of the chunk for the sentence's last name, only the final word copied after it.
    chunk = "Annette Carol Bening (born May 29, 1958) is an American actress. She starred beside John Candy."
    sentence = grounding.chunk_units(chunk)[0]
    claim = "Annette Carol Bening (born May 29, 1958) is an John Candy actress."
    assert read(claim, sentence, chunk) == Substitution(("John", "Candy"), ("American",))


def test_a_name_the_chunk_never_states_is_left_to_the_missing_entity_evidence() -> None:
    claim = (
        "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Kadıköy district "
        "in Istanbul."
    )
    assert read(claim) is None


def test_aliases_are_not_substitutions() -> None:
    chunk = "Leaders of the European Union met in Brussels on Monday. The EU summit ended late."
    sentence = grounding.chunk_units(chunk)[0]
    # An acronym, and a name given in part.
    assert read("Leaders of the EU met in Brussels on Monday.", sentence, chunk) is None
    chunk = "President Barack Obama spoke in Chicago on Tuesday. Obama thanked the crowd."
    sentence = grounding.chunk_units(chunk)[0]
    assert read("President Obama spoke in Chicago on Tuesday.", sentence, chunk) is None


def test_a_name_moved_within_the_sentence_is_a_rewording_and_two_names_exchanged_are_not() -> None:
    chunk = "In January, CIA drone strikes killed two of its leaders in North Waziristan, officials said."
    sentence = grounding.chunk_units(chunk)[0]
    moved = "In North Waziristan, January drone strikes killed two of its leaders, officials said."
    assert read(moved, sentence, chunk) is None
    chunk = "He is a member of the Inhumans, and was also part of the delegation sent to Earth."
    sentence = grounding.chunk_units(chunk)[0]
    exchanged = "He is a member of the Earth, and was also part of the delegation sent to Inhumans."
    assert read(exchanged, sentence, chunk) is not None


def test_a_rewording_and_a_claim_that_copies_little_are_not_read() -> None:
    # Another verb and word order: not a near copy.
    assert read("Tevfik Fikret, a Turkish poet, lived in a house in Istanbul's Beşiktaş district.") is None
    # A short claim has no frame to copy.
    assert read("Sultan Ahmet Mosque district.") is None
    # A common word in the place of a name is a rewording, not a name for a name.
    assert read("Aşiyan Museum is the house of the Turkish poet Tevfik Fikret in a quiet district in Istanbul.") is None


async def test_the_offline_judge_contradicts_a_substituted_sentence_and_supports_the_copy() -> None:
    judge = OfflineJudge()
    swapped = (
        "Aşiyan Museum is the house of the Turkish poet Tevfik Fikret at Aşiyan neighborhood of Sultan Ahmet "
        "Mosque district in Istanbul."
    )
    reply = await judge.verify([SENTENCE, swapped], [MUSEUM])
    assert reply.value[0][0] is Verdict.SUPPORTED
    assert reply.value[1][0] is Verdict.CONTRADICTED
    assert reply.support is not None
    assert reply.support[1][0] < 0.5 <= reply.support[0][0]
    # One such sentence among right ones is enough to flag the answer (least-supported claim below the cut).
    answer = f"{swapped} The poet designed the house himself."
    score = await Faithfulness().score(RagRecord.of("Where is the Aşiyan Museum?", [MUSEUM], answer), judge)
    least = min(v.support for v in score.details["claim_verdicts"] if v.support is not None)
    assert least < 0.5
    await judge.aclose()
