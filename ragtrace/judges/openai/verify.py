"""The OpenAI-compatible judge's claim verification: ``verify`` and ``support``.

Functions of the judge's ``Transport`` and the step's arguments, as ``steps``'s are. Per claim
(``mode == "per_claim"``, and always for ``support``), one yes/no VERIFY_CLAIM call per claim, sent
concurrently and scored by P(yes) from the logprobs of the answer token; the step fails when any of
its calls fails, carrying what all of them spent. Batched, one VERIFY call asks for every claim
against every chunk. A reply naming a claim or chunk the request does not have, or the wrong number
of them, is ``InvalidReply``.

Asked with the record's ``question``, the same call also rates every chunk's relevance to it (the
reply's ``relevance``, what ``rate_chunks`` would say): batched, the one VERIFY_RATED call; per claim,
the first claim's call asks VERIFY_CLAIM_RATED (its answer read as VERIFY_CLAIM's), the others as
without a question. The production suite's context_relevance reads it and makes no call of its own.
Ratings that cannot be read leave the verdicts standing and the reply's ``relevance`` None.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ragtrace._cost import Cost
from ragtrace.judges._base import JudgeError, JudgeReply, Verdict, agreeing
from ragtrace.judges.openai import prompts as _prompts
from ragtrace.judges.openai.parsing import (
    InvalidReply,
    ReplyParseError,
    align,
    index_set,
    pick,
    pick_list,
)
from ragtrace.judges.openai.replies import (
    _ChatReply,
    _ClaimAnswer,
    _read_claim_answer,
    _read_claim_word,
    _read_ratings,
    _verdict_word,
)
from ragtrace.judges.openai.transport import Transport


async def verify(
    transport: Transport,
    claims: Sequence[str],
    chunks: Sequence[str],
    *,
    mode: Literal["per_claim", "batched"],
    support_threshold: float,
    question: str | None = None,
) -> JudgeReply[list[list[Verdict]]]:
    """``value[claim][chunk]``: one yes/no question per claim (``mode == "per_claim"``, the
    calls sent concurrently) or all claims against all chunks in one call (``"batched"``).

    Per claim, the claim is SUPPORTED (at the chunk the judge names, the only chunk of a
    one-chunk record) when P(yes) >= ``support_threshold`` (0.5 unless set), P(yes) read from
    the logprobs of the answer token normalised over yes and no, or the written answer when the
    endpoint returns no logprobs; else CONTRADICTED there when the judge says the context
    contradicts it, else NEITHER. P(yes) goes with the verdicts as ``JudgeReply.support`` (at
    the chunk named, 0.0 at the others; on the shared scale, so P(yes) itself when
    ``support_threshold`` is 0.5), so faithfulness weighs each claim by it rather than
    counting cuts.
    Batched, a chunk the judge lists both as supporting and contradicting a claim counts as
    neither: a self-contradictory verdict is not evidence either way.

    With ``question``, the call (per claim: the first claim's) also rates each chunk's relevance to it,
    returned as ``JudgeReply.relevance``.

    A reply naming a claim or chunk the request does not have, or the wrong number of results,
    fails with ``invalid_reply``.
    """
    if not claims:
        return JudgeReply(value=[])
    if not chunks:
        return JudgeReply(value=[[] for _ in claims])
    if mode == "per_claim":
        reply = await _claim_answers(transport, claims, chunks, question)
        n = len(chunks)
        cut = support_threshold
        verdicts = [answer.verdicts(n, cut) for answer in reply.value]
        support = [
            [agreeing(p, v, cut) for p, v in zip(answer.probabilities(n), row, strict=True)]
            for answer, row in zip(reply.value, verdicts, strict=True)
        ]
        return JudgeReply(verdicts, reply.cost, support=support, relevance=reply.relevance)
    return await _verify_batched(transport, claims, chunks, question)


async def support(transport: Transport, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[float]]]:
    """Beyond the protocol, as ``OfflineJudge.support``: ``value[claim][chunk]``, the probability that
    the chunks support the claim, from one yes/no question per claim (whatever the judge's ``verify_mode``).

    P(yes) normalised over yes and no from the answer token's logprobs; 1.0 or 0.0 from the written
    answer when the endpoint returns no logprobs. With several chunks the claim is asked about
    all of them at once: its probability stands at the chunk the judge names, and the other
    chunks carry 0.0 (not asked about separately), so the best chunk's value is the claim's.
    """
    if not claims:
        return JudgeReply(value=[])
    if not chunks:
        return JudgeReply(value=[[] for _ in claims])
    reply = await _claim_answers(transport, claims, chunks)
    return JudgeReply([answer.probabilities(len(chunks)) for answer in reply.value], reply.cost)


async def _claim_answers(
    transport: Transport, claims: Sequence[str], chunks: Sequence[str], question: str | None = None
) -> JudgeReply[list[_ClaimAnswer]]:
    """One VERIFY_CLAIM call per claim, concurrently; the step fails when any of them fails. With
    ``question`` the first claim's call is VERIFY_CLAIM_RATED, and its ratings are the reply's ``relevance``."""
    count = len(chunks)
    schema = _prompts.verify_claim_schema(count)
    prompt = _prompts.VERIFY_CLAIM_WORD if count == 1 else _prompts.VERIFY_CLAIM

    def read(obj: Any, reply: _ChatReply) -> _ClaimAnswer:
        if prompt.word:
            return _read_claim_word(obj, reply)
        return _read_claim_answer(obj, reply, count)

    def read_rated(obj: Any, reply: _ChatReply) -> tuple[_ClaimAnswer, list[float] | None]:
        # The answer as VERIFY_CLAIM's (one chunk: no chunk number, the only chunk), then the ratings when they
        # can be read: ratings a model garbled (a chunk missing, as a 0.5B model wrote every several-chunk
        # list before they were asked under one key per chunk) cost the claim nothing; the suite asks rate_chunks.
        answer = _read_claim_answer(obj, reply, count)
        try:
            return answer, _read_ratings(obj, count)
        except ReplyParseError:
            return answer, None

    ratings: list[float] | None = None

    async def one(claim: str) -> JudgeReply[_ClaimAnswer]:
        user = _prompts.render_verify_claim(claim, chunks)
        return await transport.ask(prompt, user, read, logprobs=True, schema=schema)

    async def first(claim: str, asked: str) -> JudgeReply[_ClaimAnswer]:
        nonlocal ratings
        user = _prompts.render_verify_claim_rated(asked, claim, chunks)
        rated = await transport.ask(
            _prompts.VERIFY_CLAIM_RATED,
            user,
            read_rated,
            logprobs=True,
            schema=_prompts.verify_claim_rated_schema(count),
        )
        ratings = rated.value[1]
        return JudgeReply(rated.value[0], rated.cost)

    asks = [first(c, question) if k == 0 and question is not None else one(c) for k, c in enumerate(claims)]
    outcomes = await asyncio.gather(*asks, return_exceptions=True)
    cost = Cost()
    answers: list[_ClaimAnswer] = []
    failure: BaseException | None = None
    for outcome in outcomes:
        if isinstance(outcome, JudgeError):
            cost = cost + outcome.cost
            failure = failure or outcome
        elif isinstance(outcome, BaseException):
            failure = failure or outcome
        else:
            cost = cost + outcome.cost
            answers.append(outcome.value)
    # The calls ran concurrently: the step took as long as the slowest, not their sum.
    seconds = max((o.cost.seconds for o in outcomes if isinstance(o, (JudgeReply, JudgeError))), default=0.0)
    cost = dataclasses.replace(cost, seconds=seconds)
    if isinstance(failure, JudgeError):
        raise JudgeError(str(failure), error_type=failure.error_type, cost=cost) from failure
    if failure is not None:
        raise failure
    return JudgeReply(answers, cost, relevance=ratings)


async def _verify_batched(
    transport: Transport, claims: Sequence[str], chunks: Sequence[str], question: str | None = None
) -> JudgeReply[list[list[Verdict]]]:
    count = len(chunks)

    def read_item(item: Any) -> list[Verdict]:
        if not isinstance(item, Mapping):
            raise ReplyParseError(f"verify result is not an object: {item!r}")
        if "verdicts" in item:
            # The one other shape read as meant: a verdict word per chunk, in chunk order.
            verdicts = item["verdicts"]
            if not isinstance(verdicts, list):
                raise ReplyParseError(f"verify result needs a list of verdicts: {item!r}")
            if len(verdicts) != count:
                raise InvalidReply(f"verify result has {len(verdicts)} verdicts for {count} chunks")
            return [_verdict_word(v) for v in verdicts]
        # Both lists are required: a chunk missing from a list the reply does not hold is unread,
        # and reading it as "neither" would report the claim as a hallucination.
        supported = index_set(pick(item, "supported_by", "supported"), count, "supported_by")
        contradicted = index_set(pick(item, "contradicted_by", "contradicted"), count, "contradicted_by")
        row: list[Verdict] = []
        for number in range(1, count + 1):
            if number in supported and number not in contradicted:
                row.append(Verdict.SUPPORTED)
            elif number in contradicted and number not in supported:
                row.append(Verdict.CONTRADICTED)
            else:
                row.append(Verdict.NEITHER)
        return row

    def read(obj: Any, _: _ChatReply) -> list[list[Verdict]]:
        items = pick_list(obj, "results", "claims", "verdicts")
        return align(items, len(claims), key="claim", read=read_item, what="claim")

    if question is None:
        schema = _prompts.verify_schema(len(claims), count)
        return await transport.ask(_prompts.VERIFY, _prompts.render_verify(claims, chunks), read, schema=schema)

    def read_rated(obj: Any, reply: _ChatReply) -> tuple[list[list[Verdict]], list[float] | None]:
        # As per claim: ratings that cannot be read cost the verdicts nothing; the suite asks rate_chunks.
        verdicts = read(obj, reply)
        try:
            return verdicts, _read_ratings(obj, count)
        except ReplyParseError:
            return verdicts, None

    rated = await transport.ask(
        _prompts.VERIFY_RATED,
        _prompts.render_verify_rated(question, claims, chunks),
        read_rated,
        schema=_prompts.verify_rated_schema(len(claims), count),
    )
    return JudgeReply(rated.value[0], rated.cost, relevance=rated.value[1])
