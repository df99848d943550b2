"""The form of a claim that joins a question and its answer, shared by every judge.

An answer to a question often keeps its meaning only beside the question ("1959" to "In what year was
Ada born?"), so a judge checks "<question>? <answer>" as one claim. The offline judge builds it from a
bare short answer and the OpenAI judge from every sentence of an answer to a question; both join with
``ANSWER_SEPARATOR``, so that ``split_answer_claim`` finds the two parts again in whichever judge's
claims a tier is asked about (the tiered judge's LLM reads the offline judge's claims).
"""

from __future__ import annotations

ANSWER_SEPARATOR = "? "
"""Joins a question (its question mark) and its answer into one claim."""


def answer_claim(question: str, answer: str) -> str:
    """``"<question>? <answer>"``: the question with one question mark, then the answer, both stripped."""
    return f"{question.strip().rstrip('?').rstrip()}{ANSWER_SEPARATOR}{answer.strip()}"


def split_answer_claim(claim: str) -> tuple[str, str] | None:
    """``(question, answer)`` of a claim made by ``answer_claim`` (the question without its mark), or
    None for a claim that is not one: split at the last separator, as answers hold no question."""
    question, separator, answer = claim.rpartition(ANSWER_SEPARATOR)
    if not (separator and question.strip() and answer.strip()):
        return None
    return question.strip(), answer.strip()
