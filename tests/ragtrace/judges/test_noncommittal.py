"""The wording both judges read as asserting nothing (``ragtrace.judges._noncommittal``)."""

from __future__ import annotations

import pytest

from ragtrace.judges._noncommittal import noncommittal_wording
from ragtrace.judges.offline.text import extract_claims
from ragtrace.judges.openai.replies import _sentence_claims


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "I have no idea.",
        "No idea",
        "Unknown.",
        "Not stated.",
        "Maybe.",
        "Probably.",
        "Who knows",
        "Sorry.",
        "It isn\u2019t mentioned.",  # a curly apostrophe as models write it
        "Her birth year is not specified.",
        "The provided text does not say when she was born.",  # the sources, a negated verb of saying
        "The documents do not explicitly mention it.",
        "The context does not specify her birth year.",
        "The information is not available in the context.",
        "Not sure",
    ],
)
def test_an_evasion_or_a_refusal_is_noncommittal(text: str) -> None:
    assert noncommittal_wording(text)


@pytest.mark.parametrize(
    "text",
    [
        "No",  # answers a yes/no question
        "None",  # answers "how many?"
        "Probably Paris.",  # a hedged answer still asserts its fact
        "The document was not signed until 1787.",  # a negative fact about a document: no verb of saying
        "Ada did not say goodbye.",  # a negated verb of saying, but no source named
        "The brothers were not mentioned during the celebration as participants.",  # a fact about an event
        "An unknown artist painted it.",
        "The US Constitution's text does not mention God.",  # a text named, but not the sources
        "The vaccine was not available until 1955.",
        "Unknown Pleasures.",  # a title, not a shrug
    ],
)
def test_a_fact_is_not_noncommittal(text: str) -> None:
    assert not noncommittal_wording(text)


@pytest.mark.parametrize(
    "answer",
    ["The provided text does not say when she was born. She wrote code.", "It isn't mentioned. She wrote code."],
)
def test_both_judges_drop_the_same_refusal(answer: str) -> None:
    # The tiered judge's LLM reads the offline judge's claims: a refusal must read the same in both.
    offline = extract_claims(answer, None)
    openai = _sentence_claims(answer, None)
    assert offline == openai == ["She wrote code."]
