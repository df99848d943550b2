"""The OpenAI-compatible judge's other steps: claims, ratings, questions, embeddings, G-Eval.

Each step is a function of the judge's ``Transport`` and the step's arguments, and ONE call: a chat
step through ``Transport.ask`` with its prompt (``prompts``) and a reader of the step's reply shape, or,
for ``embed``, one embeddings call. ``extract_claims`` makes no call for an empty text, a bare short
answer, an answer of one short sentence of one clause, or in ``sentences`` mode. ``OpenAIJudge``
answers the ``Judge`` protocol's steps with these.
Verification is ``verify``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ragtrace.judges._base import GEvalRating, JudgeReply, Question, Rating
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.parsing import (
    ReplyParseError,
    align,
    as_bool,
    as_number,
    as_str,
    pick,
    pick_list,
)
from ragtrace.judges.openai.replies import (
    _bare_answer_claim,
    _ChatReply,
    _one_fact_claim,
    _read_ratings,
    _sentence_claims,
    _vectors,
    _weighted_score,
)
from ragtrace.judges.openai.retry import Tally
from ragtrace.judges.openai.transport import Transport


async def extract_claims(
    transport: Transport, text: str, *, question: str | None, mode: Literal["llm", "sentences"]
) -> JudgeReply[list[str]]:
    """Claims of ``text``; an empty text has none (no call).

    A bare short answer to a question ("1959" to "In what year was she born?") is one claim that
    keeps the question's meaning, "<question>? <answer>" (``answer_claim``), made without a call: a
    small model asked to rewrite it may drop the question, and "1959" alone cannot be checked. An
    answer of one short sentence of one clause is already one atomic claim, joined the same way
    without a call (``_one_fact_claim``).
    """
    if not text.strip():
        return JudgeReply(value=[])
    bare = _bare_answer_claim(text, question)
    if bare is not None:
        return JudgeReply(value=[bare])
    if mode == "sentences":
        return JudgeReply(value=_sentence_claims(text, question))
    one_fact = _one_fact_claim(text, question)
    if one_fact is not None:
        return JudgeReply(value=[one_fact])

    def read(obj: Any, _: _ChatReply) -> list[str]:
        claims: list[str] = []
        for item in pick_list(obj, "claims", "statements"):
            claim = as_str(pick(item, "claim", "text", "statement") if isinstance(item, Mapping) else item, "claim")
            if claim not in claims:
                claims.append(claim)
        return claims

    return await transport.ask(_prompts.EXTRACT_CLAIMS, _prompts.render_extract_claims(text, question), read)


async def classify_claims(transport: Transport, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
    """For every claim, whether the reference supports it."""
    if not claims:
        return JudgeReply(value=[])

    def read(obj: Any, _: _ChatReply) -> list[bool]:
        items = pick_list(obj, "results", "claims")
        return align(
            items,
            len(claims),
            key="claim",
            read=lambda item: as_bool(pick(item, "correct", "supported", "verdict"), "correct"),
            what="claim",
        )

    user = _prompts.render_classify_claims(claims, reference)
    return await transport.ask(_prompts.CLASSIFY_CLAIMS, user, read, schema=_prompts.classify_schema(len(claims)))


async def rate_statements(transport: Transport, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
    """For every statement, whether it is relevant to the query."""
    if not statements:
        return JudgeReply(value=[])

    def read(obj: Any, _: _ChatReply) -> list[bool]:
        items = pick_list(obj, "results", "statements")
        return align(
            items,
            len(statements),
            key="statement",
            read=lambda item: as_bool(pick(item, "relevant", "verdict"), "relevant"),
            what="statement",
        )

    user = _prompts.render_rate_statements(query, statements)
    return await transport.ask(
        _prompts.RATE_STATEMENTS, user, read, schema=_prompts.rate_statements_schema(len(statements))
    )


async def generate_questions(transport: Transport, answer: str, n: int) -> JudgeReply[list[Question]]:
    """Up to ``n`` questions with noncommittal flags, in one call (at least one, or the step fails)."""
    if n < 1:
        raise ValueError(f"n={n}: ask for at least one question")

    def read(obj: Any, _: _ChatReply) -> list[Question]:
        questions: list[Question] = []
        for item in pick_list(obj, "questions"):
            if not isinstance(item, Mapping):
                raise ReplyParseError(f"question without its noncommittal flag: {item!r}")
            questions.append(
                Question(
                    text=as_str(pick(item, "question", "text"), "question"),
                    noncommittal=as_bool(pick(item, "noncommittal", "committal_flag"), "noncommittal"),
                )
            )
        if not questions:
            raise ReplyParseError("reply has no questions")
        return questions[:n]

    return await transport.ask(_prompts.GENERATE_QUESTIONS, _prompts.render_generate_questions(answer, n), read)


async def detect_noncommittal(transport: Transport, answer: str) -> JudgeReply[bool]:
    """Whether the answer is evasive or noncommittal."""

    def read(obj: Any, _: _ChatReply) -> bool:
        return as_bool(pick(obj, "noncommittal"), "noncommittal")

    return await transport.ask(_prompts.DETECT_NONCOMMITTAL, _prompts.render_detect_noncommittal(answer), read)


async def embed(transport: Transport, texts: Sequence[str], *, model: str) -> JudgeReply[list[list[float]]]:
    """Every text embedded by ``model`` in one embeddings call, in input order.

    A reply without one vector of finite numbers per text is asked again ``parse_retries`` times,
    then fails with ``unparseable_reply``.
    """
    if not texts:
        return JudgeReply(value=[])
    tally = Tally()
    # Endpoints reject empty strings; a space embeds as "nothing" just as well.
    inputs = [text if text.strip() else " " for text in texts]

    async def attempt() -> list[list[float]]:
        return _vectors(await transport.embeddings(model, inputs, tally), len(texts))

    return await transport.retrier.until_readable("embed", tally, attempt)


async def rate_chunks(transport: Transport, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
    """Every chunk's relevance in [0, 1], in one call."""
    if not chunks:
        return JudgeReply(value=[])

    def read(obj: Any, _: _ChatReply) -> list[float]:
        return _read_ratings(obj, len(chunks))

    user = _prompts.render_rate_chunks(query, chunks)
    return await transport.ask(_prompts.RATE_CHUNKS, user, read, schema=_prompts.rate_chunks_schema(len(chunks)))


async def rate_answer(transport: Transport, query: str, answer: str) -> JudgeReply[Rating]:
    """How well the answer addresses the query, in [0, 1], with the judge's explanation."""

    def read(obj: Any, _: _ChatReply) -> Rating:
        value = as_number(pick(obj, "score", "rating"), "score", low=0.0, high=1.0)
        explanation = obj.get("explanation", "") if isinstance(obj, Mapping) else ""
        # The endpoint's own words go on the span and into the store: scrubbed as error text is.
        return Rating(value=value, explanation=transport.scrub(str(explanation or "")))

    return await transport.ask(_prompts.RATE_ANSWER, _prompts.render_rate_answer(query, answer), read)


async def geval_steps(transport: Transport, criteria: str) -> JudgeReply[list[str]]:
    """Evaluation steps for the criteria (the caller caches them)."""

    def read(obj: Any, _: _ChatReply) -> list[str]:
        steps = [as_str(s, "step") for s in pick_list(obj, "steps", "evaluation_steps")]
        if not steps:
            raise ReplyParseError("reply has no steps")
        return steps

    return await transport.ask(_prompts.GEVAL_STEPS, _prompts.render_geval_steps(criteria), read)


async def geval_score(
    transport: Transport,
    criteria: str,
    steps: Sequence[str],
    params: Mapping[str, str],
    score_range: tuple[int, int],
) -> JudgeReply[GEvalRating]:
    """The score on ``score_range``, probability-weighted over the score token when logprobs come back."""
    low, high = score_range
    if low >= high:
        raise ValueError(f"score_range={score_range}: the low end must be below the high end")

    def read(obj: Any, reply: _ChatReply) -> GEvalRating:
        written = as_number(pick(obj, "score", "rating"), "score", low=low, high=high)
        explanation = transport.scrub(str((obj.get("explanation", "") if isinstance(obj, Mapping) else "") or ""))
        weighted = _weighted_score(reply, low, high)
        if weighted is None:
            return GEvalRating(score=float(round(written)), explanation=explanation, weighted=False)
        return GEvalRating(score=weighted, explanation=explanation, weighted=True)

    user = _prompts.render_geval_score(criteria, steps, params, score_range)
    return await transport.ask(_prompts.GEVAL_SCORE, user, read, logprobs=True)
