"""Embedding answer relevancy with the noncommittal gate.

answer_relevancy_embedding = mean over i of cos(E(query), E(q_i)), where q_1..q_N are questions the
judge generates from the answer alone (default N = 3) in one call that also flags each question
noncommittal; then one embeddings call embeds the query and the questions together.

Gate (``noncommittal``): ``"any"`` (default) scores 0 when any question is flagged, ``"all"`` only when
every one is (as ragas does), ``"off"`` never. A gated score is 0 with label ``noncommittal`` and needs
no embeddings call. Cosines are reported as computed, negative ones included.

Fallback, for a judge without ``generate_questions`` but with ``embed`` and ``detect_noncommittal``
(the offline judge): cos(E(query), E(answer)), gated by ``detect_noncommittal(answer)``. The method
used is in ``details["method"]``: ``generated_questions`` or ``answer_embedding``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from ragtrace._exceptions import ConfigurationError
from ragtrace.judges._base import DETECT_NONCOMMITTAL, EMBED, GENERATE_QUESTIONS, Question
from ragtrace.metrics._base import DETAIL_METHOD, REASON_JUDGE_LACKS_CAPABILITY, Score
from ragtrace.metrics._metric import JudgeMetric
from ragtrace.metrics._steps import ReplyError, Steps, check_vectors

if TYPE_CHECKING:
    from ragtrace._record import RagRecord
    from ragtrace.judges._base import Judge

__all__ = ["METHOD_ANSWER_EMBEDDING", "METHOD_GENERATED_QUESTIONS", "AnswerRelevancyEmbedding", "cosine", "gated"]

Gate = Literal["any", "all", "off"]

METHOD_GENERATED_QUESTIONS = "generated_questions"
"""``details["method"]``: questions generated from the answer, embedded with the query."""

METHOD_ANSWER_EMBEDDING = "answer_embedding"
"""``details["method"]``: the answer itself embedded with the query (judge without question generation)."""

LABEL_NONCOMMITTAL = "noncommittal"


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two non-zero vectors of one dimension (not clipped)."""
    # Scaled by their largest component first: cosine does not change, and huge components no
    # longer overflow the squares to inf/inf = NaN.
    scale_a, scale_b = max(abs(x) for x in a), max(abs(y) for y in b)
    a = [x / scale_a for x in a]
    b = [y / scale_b for y in b]
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b)))


def gated(flags: Sequence[bool], gate: Gate) -> bool:
    """Whether the noncommittal flags zero the score under ``gate``."""
    if gate == "off" or not flags:
        return False
    return any(flags) if gate == "any" else all(flags)


class AnswerRelevancyEmbedding(JudgeMetric):
    """How well the answer answers the query, measured by embeddings; see the module docstring."""

    name = "answer_relevancy_embedding"
    value_range = (-1.0, 1.0)  # a mean cosine: the contract reports it as computed, never clipped
    capabilities = frozenset({GENERATE_QUESTIONS, EMBED})
    uses_query = True

    def __init__(self, n: int = 3, noncommittal: Gate = "any") -> None:
        if not isinstance(n, int) or n < 1:
            raise ConfigurationError(f"answer_relevancy_embedding: n={n!r}: set n to a whole number >= 1 (default 3)")
        if noncommittal not in ("any", "all", "off"):
            raise ConfigurationError(
                f"answer_relevancy_embedding: noncommittal={noncommittal!r}: use 'any' (default), 'all' or 'off'"
            )
        self.n = n
        self.noncommittal: Gate = noncommittal

    def _fallback_steps(self) -> frozenset[str]:
        return frozenset({EMBED}) if self.noncommittal == "off" else frozenset({EMBED, DETECT_NONCOMMITTAL})

    def _check_judge(self, judge: Judge) -> Score | None:
        if self.capabilities <= judge.capabilities or self._fallback_steps() <= judge.capabilities:
            return None
        return self.absent(
            "skipped",
            REASON_JUDGE_LACKS_CAPABILITY,
            f"judge {judge.name!r} can neither generate_questions+embed nor "
            + "+".join(sorted(self._fallback_steps())),
        )

    async def _measure(self, record: RagRecord, steps: Steps) -> Score:
        if self.capabilities <= steps.judge.capabilities:
            return await self._by_questions(record, steps)
        return await self._by_answer(record, steps)

    async def _by_questions(self, record: RagRecord, steps: Steps) -> Score:
        reply = await steps(steps.judge.generate_questions(record.answer, self.n))
        if not isinstance(reply, (list, tuple)) or not all(isinstance(q, Question) for q in reply):
            raise ReplyError("expected a list of generated questions")
        questions = [q for q in reply if q.text.strip()][: self.n]
        if not questions:
            raise ReplyError("the judge generated no question from the answer")
        flags = [q.noncommittal for q in questions]
        details: dict[str, object] = {
            DETAIL_METHOD: METHOD_GENERATED_QUESTIONS,
            "questions": [q.text for q in questions],
            "noncommittal_flags": flags,
        }
        if gated(flags, self.noncommittal):
            return self._gated(steps, details, f"{sum(flags)} of {len(flags)} generated questions noncommittal")
        texts = [record.query, *(q.text for q in questions)]
        vectors = check_vectors(await steps(steps.judge.embed(texts)), len(texts))
        cosines = [cosine(vectors[0], v) for v in vectors[1:]]
        value = math.fsum(cosines) / len(cosines)
        details["cosines"] = cosines
        return self.measured(
            value,
            steps,
            explanation=f"mean cosine of the query with {len(cosines)} questions generated from the answer",
            details=details,
        )

    async def _by_answer(self, record: RagRecord, steps: Steps) -> Score:
        details: dict[str, object] = {DETAIL_METHOD: METHOD_ANSWER_EMBEDDING}
        texts = [record.query, record.answer]
        if self.noncommittal == "off":
            raw = await steps(steps.judge.embed(texts))
        else:
            raw, evasive = await asyncio.gather(
                steps(steps.judge.embed(texts)), steps(steps.judge.detect_noncommittal(record.answer))
            )
            if not isinstance(evasive, bool):
                raise ReplyError(f"expected the noncommittal flag as a boolean, got {evasive!r}")
            details["noncommittal_flags"] = [evasive]
            if evasive:
                return self._gated(steps, details, "the answer is noncommittal")
        vectors = check_vectors(raw, 2)
        value = cosine(vectors[0], vectors[1])
        details["cosines"] = [value]
        return self.measured(
            value, steps, explanation="cosine of the query with the answer (no question generation)", details=details
        )

    def _gated(self, steps: Steps, details: dict[str, object], why: str) -> Score:
        return self.measured(0.0, steps, label=LABEL_NONCOMMITTAL, explanation=f"{why}: scored 0", details=details)
