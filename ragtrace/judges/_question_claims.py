"""The form of a claim that joins a question and its answer, shared by every judge.

An answer to a question often keeps its meaning only beside the question ("1959" to "In what year was
Ada born?"), so a judge checks "<question>? <answer>" as one claim. The offline judge builds it from a
bare short answer, the OpenAI judge from a bare answer and from every sentence of an answer to a
question; both join with ``ANSWER_SEPARATOR``, so that ``split_answer_claim`` finds the two parts again
in whichever judge's claims a tier is asked about (the tiered judge's LLM reads the offline judge's).
"""

from __future__ import annotations

ANSWER_SEPARATOR = "? "
"""Joins a question (its question mark) and its answer into one claim."""

_PAIRS = (('"', '"'), ("\u201c", "\u201d"), ("(", ")"))


def answer_claim(question: str, answer: str) -> str:
    """``"<question>? <answer>"``: the question with one question mark (in place of a closing "." or
    "!" of a question written as a request), then the answer, both stripped."""
    head = question.strip()
    head = head.rstrip("?").rstrip() if head.endswith("?") else head.rstrip(".!:; ")
    return f"{head}{ANSWER_SEPARATOR}{answer.strip()}"


def split_answer_claim(claim: str) -> tuple[str, str] | None:
    """``(question, answer)`` of a claim made by ``answer_claim`` (the question without its mark), or
    None for a claim that is not one.

    The separator is the last "? " that leaves both parts with their quotes and brackets closed, so a
    question mark quoted inside a sentence ('Her album "Who? Me" came out in 1990.') splits nothing.
    """
    end = len(claim)
    while (at := claim.rfind(ANSWER_SEPARATOR, 0, end)) >= 0:
        question, answer = claim[:at].strip(), claim[at + len(ANSWER_SEPARATOR) :].strip()
        if question and answer and _closed(question) and _closed(answer):
            return question, answer
        end = at
    return None


def _closed(text: str) -> bool:
    """True when every quote and bracket ``text`` opens it also closes."""
    return all(
        text.count(opening) % 2 == 0 if opening == closing else text.count(opening) == text.count(closing)
        for opening, closing in _PAIRS
    )
