"""Judge steps as metrics use them: cost accounting, reply validation and the shared step helpers.

Every metric asks for the same step with exactly the same arguments (the answer's claims are always
``extract_claims(answer, question=query)``, cleaned the same way), so a memoizing judge (see
``_memo``) answers each step once per record however many metrics need it.

A judge reply of the wrong shape (a verdict row missing, a rating of 7, a NaN) raises ``ReplyError``;
the metric turns it into an absent score with reason ``unparseable_reply`` and an explanation that
says what was wrong. Nothing is guessed.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ragtrace.judges._base import JudgeError, JudgeReply, Verdict
from ragtrace.metrics._base import REASON_UNPARSEABLE, ZERO_COST, Cost

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

T = TypeVar("T")


class ReplyError(JudgeError):
    """A judge reply had the wrong shape or values; the message says what was expected."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_type=REASON_UNPARSEABLE)


class Steps:
    """Runs a metric's judge steps and adds up what they cost (also the cost of a failed step), and
    which judges decided them when a judge delegates (``JudgeReply.judge``)."""

    __slots__ = ("_deciders", "cost", "judge")

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.cost: Cost = ZERO_COST
        self._deciders: list[str] = []

    @property
    def decided_by(self) -> str | None:
        """Who decided this metric's steps when the judge says so (names joined by ``+`` when several
        did), else None."""
        return "+".join(sorted(self._deciders)) if self._deciders else None

    async def __call__(self, step: Awaitable[JudgeReply[T]]) -> T:
        return (await self.reply(step)).value

    async def reply(self, step: Awaitable[JudgeReply[T]]) -> JudgeReply[T]:
        """The whole reply (value, cost, tier, support), its cost and tier accounted as ``__call__`` does."""
        try:
            reply = await step
        except JudgeError as err:
            self.cost = self.cost + err.cost
            raise
        self.cost = self.cost + reply.cost
        if reply.judge is not None and reply.judge not in self._deciders:
            self._deciders.append(reply.judge)
        return reply


# --------------------------------------------------------------------------------------------------
# Validation of replies
# --------------------------------------------------------------------------------------------------


def clean_claims(value: Any) -> list[str]:
    """Strip claims, drop blank ones and exact duplicates (keeping the first); the order is kept."""
    if not isinstance(value, (list, tuple)):
        raise ReplyError(f"expected a list of claims, got {type(value).__name__}")
    seen: set[str] = set()
    claims: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise ReplyError(f"expected claims as strings, got {type(item).__name__}")
        text = item.strip()
        if text and text not in seen:
            seen.add(text)
            claims.append(text)
    return claims


def _checked_len(value: Any, expected: int, what: str, per: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ReplyError(f"expected a list of {what}, got {type(value).__name__}")
    if len(value) != expected:
        raise ReplyError(f"judge returned {len(value)} {what} for {expected} {per}")
    return list(value)


def check_verdicts(value: Any, n_claims: int, n_chunks: int) -> list[list[Verdict]]:
    """A ``claims x chunks`` matrix of ``Verdict`` (plain verdict strings are accepted)."""
    rows = _checked_len(value, n_claims, "verdict rows", "claims")
    matrix: list[list[Verdict]] = []
    for i, row in enumerate(rows):
        cells = _checked_len(row, n_chunks, f"verdicts in row {i}", "chunks")
        try:
            matrix.append([cell if isinstance(cell, Verdict) else Verdict(str(cell).lower()) for cell in cells])
        except ValueError:
            raise ReplyError(f"row {i} holds a verdict that is not supported/contradicted/neither") from None
    return matrix


def check_flags(value: Any, expected: int, what: str) -> list[bool]:
    """One boolean per item (no truthy guessing: only real booleans or 0/1)."""
    items = _checked_len(value, expected, what, "items")
    flags: list[bool] = []
    for item in items:
        if isinstance(item, bool):
            flags.append(item)
        elif isinstance(item, int) and item in (0, 1):
            flags.append(bool(item))
        else:
            raise ReplyError(f"expected {what} as booleans, got {item!r}")
    return flags


def check_unit(value: Any, what: str) -> float:
    """A finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReplyError(f"expected {what} as a number in [0, 1], got {value!r}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ReplyError(f"expected {what} in [0, 1], got {value!r}")
    return number


def check_ratings(value: Any, expected: int) -> list[float]:
    """One rating in [0, 1] per chunk."""
    return [check_unit(v, "chunk ratings") for v in _checked_len(value, expected, "ratings", "chunks")]


def check_vectors(value: Any, expected: int) -> list[list[float]]:
    """``expected`` finite, non-zero vectors of one dimension."""
    vectors = _checked_len(value, expected, "embeddings", "texts")
    out: list[list[float]] = []
    for vec in vectors:
        if not isinstance(vec, (list, tuple)) or not vec:
            raise ReplyError("expected every embedding as a non-empty list of numbers")
        floats = [float(x) for x in vec]
        if not all(math.isfinite(x) for x in floats) or not any(floats):
            raise ReplyError("an embedding is zero or not finite: its cosine is undefined")
        out.append(floats)
    if len({len(v) for v in out}) > 1:
        raise ReplyError("embeddings of different dimensions")
    return out


# --------------------------------------------------------------------------------------------------
# Shared steps: every metric calls these, so the arguments (and hence memo keys) always match
# --------------------------------------------------------------------------------------------------


async def answer_claims(steps: Steps, record: RagRecord) -> list[str]:
    """The answer's claims, extracted once per record (the query gives the judge context)."""
    return clean_claims(await steps(steps.judge.extract_claims(record.answer, question=record.query)))


async def reference_claims(steps: Steps, record: RagRecord) -> list[str]:
    """The reference's claims. Callers check that the record has a reference."""
    return clean_claims(await steps(steps.judge.extract_claims(record.reference or "", question=record.query)))


async def verdicts(steps: Steps, claims: Sequence[str], chunks: Sequence[str]) -> list[list[Verdict]]:
    """All claims against all chunks, one call: ``value[claim][chunk]`` (its support, unused, unchecked)."""
    reply = await steps.reply(steps.judge.verify(list(claims), list(chunks)))
    return check_verdicts(reply.value, len(claims), len(chunks))


async def verification(
    steps: Steps, claims: Sequence[str], chunks: Sequence[str]
) -> tuple[list[list[Verdict]], list[list[float]] | None]:
    """All claims against all chunks, one call: the verdicts ``[claim][chunk]`` and the judge's
    support probabilities of the same shape (None when it gives verdicts only)."""
    reply = await steps.reply(steps.judge.verify(list(claims), list(chunks)))
    matrix = check_verdicts(reply.value, len(claims), len(chunks))
    if reply.support is None:
        return matrix, None
    return matrix, check_support(reply.support, matrix)


def check_support(value: Any, matrix: Sequence[Sequence[Verdict]]) -> list[list[float]]:
    """Support shaped like the verdict ``matrix``, each a finite number in [0, 1], and agreeing with it: at
    least 0.5 exactly where the verdict is SUPPORTED (``JudgeReply.support``'s promise; a judge that breaks
    it would give a faithfulness that contradicts its own label)."""
    rows = _checked_len(value, len(matrix), "support rows", "claims")
    checked = [
        [check_unit(p, "support probabilities") for p in _checked_len(row, len(cells), f"support in row {i}", "chunks")]
        for i, (row, cells) in enumerate(zip(rows, matrix, strict=True))
    ]
    for i, (row, cells) in enumerate(zip(checked, matrix, strict=True)):
        for k, (p, verdict) in enumerate(zip(row, cells, strict=True)):
            if (p >= 0.5) is not (verdict is Verdict.SUPPORTED):
                raise ReplyError(
                    f"support {p:g} of claim {i}, chunk {k} disagrees with its verdict {verdict.value}: "
                    "a judge's support is at least 0.5 exactly where it says supported"
                )
    return checked


async def correct_flags(steps: Steps, claims: Sequence[str], reference: str) -> list[bool]:
    """For every answer claim, True when the reference supports it."""
    flags = await steps(steps.judge.classify_claims(list(claims), reference))
    return check_flags(flags, len(claims), "correctness flags")


async def chunk_ratings(steps: Steps, query: str, chunks: Sequence[str]) -> list[float]:
    """Every chunk's relevance to the query in [0, 1], one call."""
    ratings = await steps(steps.judge.rate_chunks(query, list(chunks)))
    return check_ratings(ratings, len(chunks))


async def record_chunk_ratings(steps: Steps, record: RagRecord) -> list[float]:
    """Every chunk's relevance to the record's query in [0, 1]: read from the verification call the suite
    makes anyway when the judge rates the chunks there (``MemoJudge.relevance_in_verify``; no call of its
    own), else one ``rate_chunks`` call. An answer without claims (nothing is verified), a failed
    verification or one without ratings falls back to ``rate_chunks``."""
    if getattr(steps.judge, "relevance_in_verify", False) is True and record.answer.strip():
        try:
            claims = await answer_claims(steps, record)
            if claims:
                reply = await steps.reply(steps.judge.verify(claims, record.texts))
                if reply.relevance is not None:
                    return check_ratings(reply.relevance, len(record.chunks))
        except JudgeError:
            pass  # its cost is counted; the ratings are asked on their own
    return await chunk_ratings(steps, record.query, record.texts)
