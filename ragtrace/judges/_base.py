"""The Judge protocol: metrics talk to a judge through steps, not prompts.

A step is one question a metric needs answered ("which of these claims does each chunk support?").
``OpenAIJudge`` answers every step with one chat or embeddings call; ``OfflineJudge`` answers the
steps it can with a local model and lists the rest as missing from ``capabilities``. A metric whose
step is missing is skipped with reason ``judge_lacks_capability``, never faked.

Every step returns a ``JudgeReply``: the value and what it cost. A step that fails raises
``JudgeError`` with a low-cardinality ``error_type``; metrics turn that into an absent score.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from ragtrace._cost import ZERO_COST, Cost

# Step names, used in ``Judge.capabilities`` and ``Metric.capabilities``: declared in the step table.
from ragtrace.judges._capabilities import ALL_CAPABILITIES as ALL_CAPABILITIES
from ragtrace.judges._capabilities import CLASSIFY_CLAIMS as CLASSIFY_CLAIMS
from ragtrace.judges._capabilities import DETECT_NONCOMMITTAL as DETECT_NONCOMMITTAL
from ragtrace.judges._capabilities import EMBED as EMBED
from ragtrace.judges._capabilities import EXTRACT_CLAIMS as EXTRACT_CLAIMS
from ragtrace.judges._capabilities import GENERATE_QUESTIONS as GENERATE_QUESTIONS
from ragtrace.judges._capabilities import GEVAL as GEVAL
from ragtrace.judges._capabilities import RATE_ANSWER as RATE_ANSWER
from ragtrace.judges._capabilities import RATE_CHUNKS as RATE_CHUNKS
from ragtrace.judges._capabilities import RATE_STATEMENTS as RATE_STATEMENTS
from ragtrace.judges._capabilities import VERIFY as VERIFY

T = TypeVar("T")


class Verdict(str, enum.Enum):
    """What one chunk says of one claim."""

    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    NEITHER = "neither"


@dataclass(frozen=True, slots=True)
class JudgeReply(Generic[T]):
    """A step's answer and what it cost.

    ``judge`` names who decided it when a judge delegates to others (the tiered judge: its offline or
    its LLM tier); a metric's score then says which tier produced it. None: the judge itself.

    ``support`` is for ``verify`` only: how sure the judge is that each chunk supports each claim, shaped
    like ``value`` (``support[claim][chunk]``), when the judge reads a probability (the offline judge's
    calibrated probability, an LLM's P("yes")). It is on one scale for every judge: 0.5 is the judge's own
    cut, so a value is at least 0.5 exactly where the verdict is SUPPORTED (``agreeing`` puts a judge's
    probability there), and a claim's best value and its verdict never tell two stories. None when the
    judge gives verdicts only; the claim metrics then count verdicts.
    """

    value: T
    cost: Cost = ZERO_COST
    judge: str | None = None
    support: list[list[float]] | None = None
    relevance: list[float] | None = None
    """For ``verify`` asked with the record's question by a judge that rates that many chunks there
    (``OpenAIJudge.rates_chunks_in_verify_for``): every chunk's relevance to the question in [0, 1], read in
    the same call, as ``rate_chunks`` rates it. None otherwise, or when the ratings could not be read."""


@dataclass(frozen=True, slots=True)
class Question:
    """A question generated from an answer alone, with the judge's noncommittal flag."""

    text: str
    noncommittal: bool


@dataclass(frozen=True, slots=True)
class Rating:
    """A judge's rating in [0, 1] with its explanation."""

    value: float
    explanation: str = ""


@dataclass(frozen=True, slots=True)
class GEvalRating:
    """A G-Eval score on the judge's scale (e.g. 1 to 5).

    ``score`` is the probability-weighted sum over the score tokens when the endpoint returned
    logprobs (``weighted=True``), else the integer the judge wrote.
    """

    score: float
    explanation: str
    weighted: bool


def agreeing(probability: float, verdict: Verdict | str, cut: float) -> float:
    """A judge's ``probability`` (its verdict drawn at ``cut``) as ``JudgeReply.support``: on the shared
    scale where 0.5 is the cut, ``[cut, 1]`` mapped linearly onto ``[0.5, 1]`` and ``[0, cut)`` onto
    ``[0, 0.5)``. A probability a rule decided against (an offline judge's word evidence, an LLM's written
    answer) is first moved to its verdict's side of the cut. ``verdict`` may be a verdict string."""
    p = min(1.0, max(0.0, probability))
    if Verdict(verdict) is Verdict.SUPPORTED:
        return 1.0 if cut >= 1.0 else 0.5 + 0.5 * (max(p, cut) - cut) / (1.0 - cut)
    if cut <= 0.0:
        return 0.0
    return min(0.5 * p / cut, math.nextafter(0.5, 0.0))


UNPARSEABLE_REPLY = "unparseable_reply"
"""``JudgeError.error_type`` of a reply that could not be parsed after the retries (metrics keep it as the
score's reason)."""


class JudgeError(Exception):
    """A judge step failed: transport, timeout, or a reply that could not be parsed after retries.

    ``error_type`` is low-cardinality (``timeout``, ``rate_limited``, ``connection``, ``http_5xx``,
    ``unparseable_reply``, ``judge_lacks_capability``, ...) and goes on the span as ``error.type``.
    """

    def __init__(self, message: str, *, error_type: str, cost: Cost = ZERO_COST) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.cost = cost


class JudgeCapabilityError(JudgeError):
    """The judge does not offer this step."""

    def __init__(self, judge: str, step: str) -> None:
        super().__init__(f"judge {judge!r} cannot {step}", error_type="judge_lacks_capability")
        self.step = step


@runtime_checkable
class Judge(Protocol):
    """The steps a metric can ask of a judge. See the module docstring for the contract."""

    name: str
    """Who judges, e.g. ``openai:gpt-4o-mini`` or ``offline:minilm-int8``; goes on the span."""

    capabilities: frozenset[str]
    """The steps this judge offers (names above)."""

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        """Split ``text`` into atomic, self-contained factual claims (``question`` gives context)."""
        ...

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        """For every claim and every chunk, what the chunk says of the claim: ``value[claim][chunk]``."""
        ...

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        """For every claim, True when the reference supports it (correct), False otherwise."""
        ...

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        """For every statement of an answer, True when it is relevant to the query."""
        ...

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        """Generate ``n`` questions the answer answers, from the answer alone, each flagged noncommittal."""
        ...

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        """True when the answer is evasive or noncommittal ("I don't know", refusals)."""
        ...

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        """Embed every text, in one call. Vectors need not be normalised."""
        ...

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        """Rate every chunk's relevance to the query in [0, 1], in one call."""
        ...

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        """Rate in [0, 1] how well the answer addresses the query."""
        ...

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        """Generate evaluation steps for G-Eval criteria."""
        ...

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        """Score ``params`` (e.g. {"input": ..., "actual_output": ...}) against the criteria and steps."""
        ...

    async def aclose(self) -> None:
        """Release connections and models. Idempotent."""
        ...
