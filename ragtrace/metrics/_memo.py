"""A per-record memoizing judge: the same step with the same arguments is one call.

Metrics of a suite run concurrently and ask for overlapping steps (faithfulness, hallucination and
context_precision all need the answer's claims and the same verify matrix). The first caller starts
the call; every later or concurrent caller awaits the same task, failures included. The proxy adds
up the cost of the unique calls only.

In a suite whose metrics both verify claims and rate chunks, the record's question goes with ``verify``
to a judge that rates the record's chunks in the verification call (its ``rates_chunks_in_verify_for``,
given the number of chunks): ``relevance_in_verify`` is then True, and context_relevance reads the chunks'
ratings from that one call instead of asking ``rate_chunks``.

Every step result is also reported to the degenerate-judging monitor (``judges/_degenerate.py``), which
warns when a judge's results stop varying across records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from ragtrace.judges._base import GEvalRating, Judge, JudgeError, JudgeReply, Question, Rating, Verdict
from ragtrace.judges._capabilities import serves_every_step
from ragtrace.judges._degenerate import watch
from ragtrace.metrics._base import ZERO_COST, Cost

T = TypeVar("T")


def _freeze(value: Any) -> Hashable:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value  # type: ignore[no-any-return]


def _seen(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


@serves_every_step
class MemoJudge:
    """Wraps a judge for one record; see the module docstring. Satisfies ``Judge``."""

    def __init__(
        self, inner: Judge, *, question: str | None = None, shared_ratings: bool = False, chunks: int = 0
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.capabilities = inner.capabilities
        offers = getattr(inner, "rates_chunks_in_verify_for", None)
        self.relevance_in_verify = (
            shared_ratings and question is not None and callable(offers) and offers(chunks) is True
        )
        """``verify`` carries ``question`` to the inner judge, whose reply rates the record's ``chunks``
        (``JudgeReply.relevance``): the suite both verifies and rates chunks (``shared_ratings``) and the judge
        offers it for that many chunks."""
        self._question = question
        self.cost: Cost = ZERO_COST
        """What the unique calls cost (failed ones included)."""
        self.calls = 0
        """Unique calls made."""
        self._tasks: dict[Hashable, asyncio.Future[Any]] = {}

    def _once(self, key: Hashable, call: Callable[[], Awaitable[JudgeReply[T]]]) -> Awaitable[JudgeReply[T]]:
        task = self._tasks.get(key)
        if task is None:
            step = key[0] if isinstance(key, tuple) and key and isinstance(key[0], str) else ""
            task = asyncio.ensure_future(self._run(step, call))
            # Every caller sees a failure through its shield; a call that ends after ``close`` (its
            # callers gone) has no reader, and must not be logged as an exception nobody retrieved.
            task.add_done_callback(_seen)
            self._tasks[key] = task
        # Shielded: one caller's cancellation must not cancel the call others are awaiting.
        return asyncio.shield(task)

    async def _run(self, step: str, call: Callable[[], Awaitable[JudgeReply[T]]]) -> JudgeReply[T]:
        self.calls += 1
        try:
            reply = await call()
        except JudgeError as err:
            self.cost = self.cost + err.cost
            raise
        if isinstance(reply, JudgeReply):
            self.cost = self.cost + reply.cost
            watch(reply.judge or self.inner.name, step, reply.value)
            if reply.relevance is not None:  # the chunks rated in the verification call, watched as rate_chunks
                watch(reply.judge or self.inner.name, "rate_chunks", reply.relevance)
        return reply

    def close(self) -> None:
        """Cancel calls nobody awaits any more."""
        for task in self._tasks.values():
            if not task.done():
                task.cancel()

    # ----------------------------------------------------------------------------------------------
    # Judge steps
    # ----------------------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        return await self._once(
            ("extract_claims", text, question), lambda: self.inner.extract_claims(text, question=question)
        )

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        if self.relevance_in_verify:
            return await self._once(
                ("verify", _freeze(claims), _freeze(chunks)),
                lambda: self.inner.verify(claims, chunks, question=self._question),  # type: ignore[call-arg]
            )
        return await self._once(("verify", _freeze(claims), _freeze(chunks)), lambda: self.inner.verify(claims, chunks))

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        return await self._once(
            ("classify_claims", _freeze(claims), reference), lambda: self.inner.classify_claims(claims, reference)
        )

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        return await self._once(
            ("rate_statements", query, _freeze(statements)), lambda: self.inner.rate_statements(query, statements)
        )

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        return await self._once(("generate_questions", answer, n), lambda: self.inner.generate_questions(answer, n))

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        return await self._once(("detect_noncommittal", answer), lambda: self.inner.detect_noncommittal(answer))

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        return await self._once(("embed", _freeze(texts)), lambda: self.inner.embed(texts))

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        return await self._once(("rate_chunks", query, _freeze(chunks)), lambda: self.inner.rate_chunks(query, chunks))

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        return await self._once(("rate_answer", query, answer), lambda: self.inner.rate_answer(query, answer))

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        return await self._once(("geval_steps", criteria), lambda: self.inner.geval_steps(criteria))

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        return await self._once(
            ("geval_score", criteria, _freeze(steps), _freeze(params), score_range),
            lambda: self.inner.geval_score(criteria, steps, params, score_range),
        )

    async def aclose(self) -> None:
        """The proxy owns nothing; the inner judge belongs to the caller."""
        self.close()
