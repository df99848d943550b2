"""The stub server's default answers to the ragtrace judge's steps, one function per step.

Each answer reads the user message ``ragtrace.judges.openai.prompts`` renders (its ``Title:`` sections,
``[chunk N]`` / ``[claim N]`` items and one-line fields) and returns the reply value ``OpenAIJudge``
parses for that step, deterministically from the stub's text rules (``_stub_text``): claims are the
answer's sentences; a claim is supported by a chunk holding 60% of its content words, contradicted by
one holding 30% that lacks some of them; relevance and scores are word overlap. ``ANSWERS`` maps a
step name to its answer; a step missing from it gets the generic, schema-shaped reply
(``_stub_generic``). ``yes_probability`` is the P(yes) a ``verify_claim`` (or ``verify_claim_rated``)
reply's logprobs carry. The ``_rated`` verifications add the ``rate_chunks`` ratings to their reply.

A new judge step that the stub should answer is one function here and one entry in ``ANSWERS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragtrace.judges import _base
from ragtrace.judges.openai.prompts import rating_key
from ragtrace.testing._stub_request import message_text
from ragtrace.testing._stub_text import content_words, is_noncommittal, overlap, plain_words, sentences

__all__ = ["ANSWERS", "yes_probability"]


def _section(user: str, title: str) -> str:
    """The text after ``title:`` up to the next blank-line-separated ``Title:`` header."""
    match = re.search(re.escape(title) + r":\s?(.*?)(?=\n\n[A-Z][\w ]*:\n|\Z)", user, re.DOTALL)
    return match.group(1).strip() if match else ""


def _items(part: str, label: str) -> list[str]:
    pieces = re.split(r"(?:^|\n)\[" + re.escape(label) + r" \d+\] ", part)
    return [p.strip() for p in pieces[1:]]


def _chunks(user: str) -> list[str]:
    """The ``[chunk N]`` items of the ``Context chunks:`` section (ending where a per-claim question's
    ``Statement:`` starts)."""
    return _items(_section(user, "Context chunks").split("\n\nStatement: ", 1)[0], "chunk")


def _line(user: str, title: str) -> str:
    match = re.search(r"^" + re.escape(title) + r": ?(.*)$", user, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _claims_of(text: str) -> list[str]:
    return [s for s in sentences(text) if not is_noncommittal(s)]


def _verdicts(claim: str, chunks: Sequence[str]) -> dict[str, Any]:
    supported: list[int] = []
    contradicted: list[int] = []
    claim_words = content_words(claim)
    for number, chunk in enumerate(chunks, start=1):
        share = overlap(claim, chunk)
        if share >= 0.6:
            supported.append(number)
        elif share >= 0.3 and claim_words - content_words(chunk):
            # Same topic, but the claim asserts words the chunk does not have: call it a contradiction.
            contradicted.append(number)
    return {"supported_by": supported, "contradicted_by": contradicted}


def _answer_verify(user: str) -> Any:
    chunks = _items(_section(user, "Context chunks"), "chunk")
    claims = _items(_section(user, "Claims"), "claim")
    return {"results": [{"claim": i, **_verdicts(c, chunks)} for i, c in enumerate(claims, start=1)]}


def _statement_support(user: str) -> tuple[float, float, int]:
    """(best overlap share, P(yes), best chunk number) of a verify_claim request's statement."""
    statement = _line(user, "Statement")
    chunks = _chunks(user) or [_line(user, "Context")]
    shares = [overlap(statement, chunk) for chunk in chunks]
    best = max(range(len(shares)), key=lambda i: shares[i])
    share = shares[best]
    return share, min(0.98, max(0.02, 0.5 + (share - 0.6))), best + 1


def _answer_verify_claim(user: str) -> Any:
    share, p_yes, chunk = _statement_support(user)
    if "Context chunks:" not in user:
        # One chunk: the judge asks for one word.
        return "yes" if p_yes >= 0.5 else ("contradicted" if 0.3 <= share < 0.6 else "no")
    reply: dict[str, Any] = {
        "supported": "yes" if p_yes >= 0.5 else "no",
        "contradicted": "yes" if 0.3 <= share < 0.6 else "no",
    }
    if "Context chunks:" in user:
        reply["chunk"] = chunk
    return reply


def _ratings(user: str) -> dict[str, float]:
    """Every chunk's relevance to the request's ``Question:`` line under its key, as ``rate_chunks`` answers it."""
    query = _line(user, "Question")
    chunks = _chunks(user)
    return {rating_key(i): round(overlap(query, c), 2) for i, c in enumerate(chunks, start=1)}


def _answer_verify_rated(user: str) -> Any:
    return {**_answer_verify(user), "ratings": _ratings(user)}


def _answer_verify_claim_rated(user: str) -> Any:
    share, p_yes, chunk = _statement_support(user)
    reply: dict[str, Any] = {
        "supported": "yes" if p_yes >= 0.5 else "no",
        "contradicted": "yes" if 0.3 <= share < 0.6 else "no",
    }
    if len(_chunks(user)) > 1:
        reply["chunk"] = chunk
    return {**reply, "ratings": _ratings(user)}


def yes_probability(step: str | None, messages: Sequence[Any]) -> float | None:
    if step not in ("verify_claim", "verify_claim_rated"):
        return None
    users = [message_text(m) for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
    return _statement_support(users[-1] if users else "")[1]


def _answer_classify(user: str) -> Any:
    reference = _line(user, "Reference answer")
    claims = _items(_section(user, "Claims"), "claim")
    return {"results": [{"claim": i, "correct": overlap(c, reference) >= 0.5} for i, c in enumerate(claims, start=1)]}


def _answer_rate_statements(user: str) -> Any:
    query = _line(user, "Question")
    statements = _items(_section(user, "Statements"), "statement")
    return {
        "results": [
            {"statement": i, "relevant": overlap(query, s) > 0 or overlap(s, query) > 0}
            for i, s in enumerate(statements, start=1)
        ]
    }


def _answer_questions(user: str) -> Any:
    try:
        n = int(_line(user, "Number of questions") or "3")
    except ValueError:
        n = 3
    answer = user.split("Answer:", 1)[-1].strip()
    flag = is_noncommittal(answer)
    words = plain_words(answer) or ["this"]
    openers = ("What is known about", "Which fact concerns", "What does the answer say about")
    return {
        "questions": [
            {"question": f"{openers[i % len(openers)]} {' '.join(words[i % len(words) :][:8])}?", "noncommittal": flag}
            for i in range(n)
        ]
    }


def _answer_rate_chunks(user: str) -> Any:
    return {"ratings": _ratings(user)}


def _answer_rate_answer(user: str) -> Any:
    query, answer = _line(user, "Question"), _line(user, "Answer")
    score = 0.0 if is_noncommittal(answer) else round(max(overlap(query, answer), 0.5 if answer else 0.0), 2)
    return {"explanation": "Scored by word overlap between question and answer.", "score": score}


def _answer_geval_score(user: str) -> Any:
    match = re.search(r"Score range: (\d+) to (\d+)", user)
    low, high = (int(match.group(1)), int(match.group(2))) if match else (1, 5)
    inputs = _section(user, "Inputs")
    share = overlap(_line(user, "Criteria"), inputs)
    return {"score": low + round(share * (high - low)), "explanation": "Scored by overlap with the criteria."}


ANSWERS: dict[str, Callable[[str], Any]] = {
    _base.EXTRACT_CLAIMS: lambda user: {"claims": _claims_of(user.split("Text:", 1)[-1])},
    _base.VERIFY: _answer_verify,
    "verify_claim": _answer_verify_claim,
    "verify_rated": _answer_verify_rated,
    "verify_claim_rated": _answer_verify_claim_rated,
    _base.CLASSIFY_CLAIMS: _answer_classify,
    _base.RATE_STATEMENTS: _answer_rate_statements,
    _base.GENERATE_QUESTIONS: _answer_questions,
    _base.DETECT_NONCOMMITTAL: lambda user: {"noncommittal": is_noncommittal(user.split("Answer:", 1)[-1])},
    _base.RATE_CHUNKS: _answer_rate_chunks,
    _base.RATE_ANSWER: _answer_rate_answer,
    _base.GEVAL: lambda user: {
        "steps": [
            "Read the criteria and the inputs.",
            "Check each statement of the output against the criteria.",
            "Weigh how fully the output meets the criteria.",
        ]
    },
    _base.GEVAL + "_score": _answer_geval_score,
}
