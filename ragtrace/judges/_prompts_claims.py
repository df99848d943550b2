"""The claim steps' prompts: extracting claims, verifying them against the context (all at once, or one
yes/no question per claim) and classifying them against a reference answer; each with its reply
schema, the per-request schemas with the item numbers as enums, and the user-message renderers.

Re-exported by ``_prompts`` (the import surface, whose docstring says why the prompts look as they do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace.judges import _base
from ragtrace.judges._prompts_base import BOOL as _BOOL
from ragtrace.judges._prompts_base import INT as _INT
from ragtrace.judges._prompts_base import STR as _STR
from ragtrace.judges._prompts_base import StepPrompt, numbered
from ragtrace.judges._prompts_base import array_schema as _array
from ragtrace.judges._prompts_base import numbers_schema as _numbers
from ragtrace.judges._prompts_base import object_schema as _object
from ragtrace.judges._question_claims import split_answer_claim

EXTRACT_CLAIMS = StepPrompt(
    step=_base.EXTRACT_CLAIMS,
    instructions=(
        "Split the text into atomic, self-contained factual claims: one fact each, pronouns replaced by what "
        "they refer to, so each can be checked alone. Each claim must keep the question's meaning: when the "
        "text answers the question with a bare name, number, date or yes/no, write a claim that states what "
        "the question asks together with that answer. Skip statements that assert nothing (greetings, hedges, "
        "\"I don't know\"). Keep the text's language."
    ),
    shape='{"claims": [<claim sentence>, ...]}',
    schema=_object(claims=_array(_STR)),
)

VERIFY = StepPrompt(
    step=_base.VERIFY,
    instructions=(
        "For each numbered claim, say which numbered context chunks support it (the claim follows from the "
        "chunk) and which contradict it (the chunk states something incompatible). Chunks in neither list "
        "say neither. Judge by the chunks only, not by your own knowledge. One result per claim."
    ),
    shape=(
        '{"results": [{"claim": <claim number>, "supported_by": [<chunk number>, ...], '
        '"contradicted_by": [<chunk number>, ...]}, ...]} with exactly one result per claim'
    ),
    schema=_object(
        results=_array(_object(claim=_INT, supported_by=_array(_INT), contradicted_by=_array(_INT))),
    ),
)

VERIFY_CLAIM_STEP = "verify_claim"
"""Step name of the one-question-per-claim verification (a part of ``verify``, not a step of its own)."""

# One yes/no question per claim: what a 0.5B-7B model answers best, and the answer's first token
# carries P(yes) in its logprobs. With one chunk the reply is one word, asked for in plain text: on
# HaluEval QA (80 train-split records) a 0.5B model's P(yes) separated right from hallucinated answers
# with AUROC 0.766 asked this way (0.771 without the "contradicted" word), 0.729 with the same words in
# a JSON schema and 0.655 with the question in the system prompt. The question comes last.
VERIFY_CLAIM_WORD = StepPrompt(
    step=VERIFY_CLAIM_STEP,
    instructions=(
        "You check statements against a context. Reply with one word: yes if the context supports the "
        "statement, no if it does not, contradicted if the context states the opposite."
    ),
    shape="yes | no | contradicted",
    schema=_object(),
    word=True,
)

# With several chunks the reply also names the chunk it rests on (an enum of the request's numbers),
# so it is JSON; the answer comes first so that its token sits at a known place.
VERIFY_CLAIM = StepPrompt(
    step=VERIFY_CLAIM_STEP,
    instructions=(
        "You check statements against a context. Say whether the context supports the statement (states "
        "it or clearly implies it), whether it contradicts it (states the opposite), and which chunk your "
        "answer rests on."
    ),
    shape='{"supported": <"yes" or "no">, "contradicted": <"yes" or "no">}',
    schema=_object(
        supported={"type": "string", "enum": ["yes", "no"]}, contradicted={"type": "string", "enum": ["yes", "no"]}
    ),
)

CLASSIFY_CLAIMS = StepPrompt(
    step=_base.CLASSIFY_CLAIMS,
    instructions=(
        "For each numbered claim, say whether the reference answer supports it (correct: true) or not "
        "(false: contradicted by or absent from the reference). One result per claim."
    ),
    shape='{"results": [{"claim": <claim number>, "correct": <true or false>}, ...]} with one result per claim',
    schema=_object(results=_array(_object(claim=_INT, correct=_BOOL))),
)

_YES_NO = {"type": "string", "enum": ["yes", "no"]}


def verify_schema(n_claims: int, n_chunks: int) -> dict[str, Any]:
    """VERIFY's schema for one request: claim and chunk numbers as enums of the numbers it has."""
    chunk = _numbers(n_chunks)
    return _object(
        results=_array(_object(claim=_numbers(n_claims), supported_by=_array(chunk), contradicted_by=_array(chunk)))
    )


def verify_claim_schema(n_chunks: int) -> dict[str, Any]:
    """VERIFY_CLAIM's schema: yes/no answers, and with several chunks the number of the one it rests on."""
    if n_chunks <= 1:
        return _object(supported=_YES_NO, contradicted=_YES_NO)
    return _object(supported=_YES_NO, contradicted=_YES_NO, chunk=_numbers(n_chunks))


def classify_schema(n_claims: int) -> dict[str, Any]:
    return _object(results=_array(_object(claim=_numbers(n_claims), correct=_BOOL)))


def render_extract_claims(text: str, question: str | None) -> str:
    head = f"Question: {question}\n" if question else ""
    return f"{head}Text: {text}"


def render_verify(claims: Sequence[str], chunks: Sequence[str]) -> str:
    return f"Context chunks:\n{numbered('chunk', chunks)}\n\nClaims:\n{numbered('claim', claims)}"


def render_verify_claim(claim: str, chunks: Sequence[str]) -> str:
    statement = render_statement(claim)
    if len(chunks) == 1:
        return f"Context: {chunks[0]}\n\nStatement: {statement}\n\nIs the statement supported by the context?"
    return (
        f"Context chunks:\n{numbered('chunk', chunks)}\n\nStatement: {statement}\n\n"
        "Is the statement supported by the context? Which chunk does your answer rest on?"
    )


def render_statement(claim: str) -> str:
    """A claim as the per-claim question shows it: a question joined to its answer (``answer_claim``)
    marked "<question>? Answer: <answer>", any other claim as it is.

    Chosen on the calibration split (bench/verify_prompt_choice.py, HaluEval QA dev rows 0-199): a
    0.5B model's P(yes) separated right from hallucinated answers with AUROC 0.842 marked this way
    against 0.812 with the claim as it is (+0.031, interval [+0.015, +0.047]); on the length-controlled
    set 0.626 against 0.634 (-0.009 [-0.032, +0.014], within noise).
    """
    parts = split_answer_claim(claim)
    return claim if parts is None else f"{parts[0]}? Answer: {parts[1]}"


def render_classify_claims(claims: Sequence[str], reference: str) -> str:
    return f"Reference answer: {reference}\n\nClaims:\n{numbered('claim', claims)}"
