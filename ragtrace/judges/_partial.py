"""``BaseJudge``: the small public base for a judge of your own that answers only some steps.

The ``Judge`` protocol has a method per step (``ragtrace.judges._capabilities``). A judge built on this
base writes ``name`` and the step methods it answers; every other step raises ``JudgeCapabilityError`` (a
metric that needs it is absent with reason ``judge_lacks_capability``, not an error), ``capabilities`` is
derived from the methods it wrote (a step counts when all of its methods are), and ``aclose`` does
nothing unless overridden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, NoReturn

from ragtrace.judges._base import GEvalRating, JudgeCapabilityError, JudgeReply, Question, Rating, Verdict
from ragtrace.judges._capabilities import STEPS, serves_every_step

__all__ = ["BaseJudge"]


@serves_every_step
class BaseJudge:
    """Subclass it, set ``name`` and write the step methods your judge answers (see the module docstring)."""

    name: ClassVar[str] = "custom"
    capabilities: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        written = {name for klass in cls.__mro__ if klass is not BaseJudge for name in vars(klass)}
        cls.capabilities = frozenset(step.capability for step in STEPS if set(step.methods) <= written)

    def _cannot(self, step: str) -> NoReturn:
        raise JudgeCapabilityError(self.name, step)

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        self._cannot("extract_claims")

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        self._cannot("verify")

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        self._cannot("classify_claims")

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        self._cannot("rate_statements")

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        self._cannot("generate_questions")

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        self._cannot("detect_noncommittal")

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        self._cannot("embed")

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        self._cannot("rate_chunks")

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        self._cannot("rate_answer")

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        self._cannot("geval")

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        self._cannot("geval")

    async def aclose(self) -> None:
        """Nothing to release; override when the judge holds connections or models."""
