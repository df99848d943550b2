"""``FakeJudge``, a scripted judge for users' tests and ours (public as ``ragtrace.testing.FakeJudge``).

``FakeJudge`` implements every step of ``ragtrace.judges.Judge``. Script each step with a value, a
mapping, or a function (sync or async) taking the step's arguments::

    judge = FakeJudge(
        extract_claims={"The sky is blue.": ["The sky is blue"]},   # text -> claims
        verify={"The sky is blue": ["supported", "neither"]},        # claim -> one verdict per chunk
        rate_chunks=[0.9, 0.1],                                      # the same reply every call
        embed=lambda texts: [[1.0, float(len(t))] for t in texts],
    )

Mappings are looked up by the step's natural key: the text for ``extract_claims``; the claim for
``verify`` (a row, or one verdict for every chunk) and ``classify_claims``; the statement for
``rate_statements``; the chunk for ``rate_chunks``; the text for ``embed``; the answer for
``detect_noncommittal``; the criteria for ``geval_steps``. A key missing from a mapping, or a step
with no script, fails the call with ``JudgeError(error_type="unscripted")`` so a test sees it.
Plain numbers are accepted for ``rate_answer`` and ``geval_score``, strings or (text, flag) pairs
for ``generate_questions``.

``support=`` scripts the support ``verify`` returns beside its verdicts (``JudgeReply.support``),
keyed by claim like ``verify`` (a row, or one number for every chunk), or a function of (claims,
chunks); unscripted, ``verify`` gives verdicts only. As for every judge, a value is at least 0.5
exactly where the verdict is "supported": faithfulness refuses support that disagrees.

``fail={"verify": "timeout"}`` makes a step raise ``JudgeError`` with that ``error_type`` (or pass
an exception instance to raise it as is). ``capabilities`` limits the steps offered; asking for
another raises ``JudgeCapabilityError``. Every call is logged in ``calls`` (step name and
arguments) and costs ``costs[step]`` (default: one chat call of 100 prompt and 20 completion
tokens; one embeddings call of 10 tokens for ``embed``), so tests can assert counts and cost sums.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ragtrace.judges._base import (
    ALL_CAPABILITIES,
    EMBED,
    GEVAL,
    GEvalRating,
    JudgeCapabilityError,
    JudgeError,
    JudgeReply,
    Question,
    Rating,
    Verdict,
)
from ragtrace.judges._capabilities import METHODS, serves_every_step
from ragtrace.metrics._base import ZERO_COST, Cost

__all__ = ["DEFAULT_CHAT_COST", "DEFAULT_EMBED_COST", "FakeCall", "FakeJudge"]

DEFAULT_CHAT_COST = Cost(chat_calls=1, prompt_tokens=100, completion_tokens=20)
"""What one scripted chat step costs unless ``costs`` says otherwise."""

DEFAULT_EMBED_COST = Cost(embedding_calls=1, prompt_tokens=10)
"""What one scripted ``embed`` call costs unless ``costs`` says otherwise."""

_STEPS = METHODS


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, Mapping):
        return MappingProxyType(dict(value))
    return value


@dataclass(frozen=True, slots=True)
class FakeCall:
    """One logged call: the step's name and the arguments it was given (lists frozen to tuples)."""

    step: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@serves_every_step
class FakeJudge:
    """A scripted judge; see the module docstring. Satisfies ``ragtrace.judges.Judge``."""

    def __init__(
        self,
        *,
        name: str = "fake",
        capabilities: Iterable[str] | None = None,
        costs: Mapping[str, Cost] | None = None,
        fail: Mapping[str, str | BaseException] | None = None,
        extract_claims: Any = None,
        verify: Any = None,
        classify_claims: Any = None,
        rate_statements: Any = None,
        generate_questions: Any = None,
        detect_noncommittal: Any = None,
        embed: Any = None,
        rate_chunks: Any = None,
        rate_answer: Any = None,
        geval_steps: Any = None,
        geval_score: Any = None,
        support: Any = None,
    ) -> None:
        self.name = name
        self.capabilities: frozenset[str] = ALL_CAPABILITIES if capabilities is None else frozenset(capabilities)
        self.scripts: dict[str, Any] = {
            "extract_claims": extract_claims,
            "verify": verify,
            "classify_claims": classify_claims,
            "rate_statements": rate_statements,
            "generate_questions": generate_questions,
            "detect_noncommittal": detect_noncommittal,
            "embed": embed,
            "rate_chunks": rate_chunks,
            "rate_answer": rate_answer,
            "geval_steps": geval_steps,
            "geval_score": geval_score,
        }
        # Not ``self.support``: judges that give probabilities have a ``support`` method of that name.
        self._support_script = support
        self.costs = dict(costs or {})
        self.fail: dict[str, str | BaseException] = dict(fail or {})
        unknown = (set(self.costs) | set(self.fail)) - set(_STEPS)
        if unknown:
            raise ValueError(f"FakeJudge: unknown steps {sorted(unknown)}; steps are {list(_STEPS)}")
        self.calls: list[FakeCall] = []
        self.closed = False

    # ----------------------------------------------------------------------------------------------
    # Call log
    # ----------------------------------------------------------------------------------------------

    def count(self, step: str | None = None) -> int:
        """Calls made, of one step or of all."""
        return sum(1 for c in self.calls if step is None or c.step == step)

    def calls_to(self, step: str) -> list[FakeCall]:
        """The logged calls of one step, in order."""
        return [c for c in self.calls if c.step == step]

    @property
    def chat_calls(self) -> int:
        """Calls of every step but ``embed``."""
        return sum(1 for c in self.calls if c.step != EMBED)

    @property
    def embedding_calls(self) -> int:
        """Calls of ``embed``."""
        return self.count(EMBED)

    @property
    def cost(self) -> Cost:
        """What every logged call cost."""
        return sum((self._cost(c.step) for c in self.calls), ZERO_COST)

    def reset(self) -> None:
        """Forget the call log."""
        self.calls.clear()

    # ----------------------------------------------------------------------------------------------

    def _cost(self, step: str) -> Cost:
        return self.costs.get(step, DEFAULT_EMBED_COST if step == EMBED else DEFAULT_CHAT_COST)

    async def _answer(self, step: str, key: Any, *args: Any, **kwargs: Any) -> Any:
        capability = GEVAL if step.startswith("geval") else step
        if capability not in self.capabilities:
            raise JudgeCapabilityError(self.name, step)
        self.calls.append(FakeCall(step, tuple(_freeze(a) for a in args), MappingProxyType(dict(kwargs))))
        failure = self.fail.get(step)
        if isinstance(failure, BaseException):
            raise failure
        if failure is not None:
            raise JudgeError(f"FakeJudge: scripted {failure} in {step}", error_type=failure, cost=self._cost(step))
        script = self.scripts[step]
        if script is None:
            raise self._unscripted(step, "no script for this step")
        if callable(script):
            value = script(*args, **kwargs)
            return await value if inspect.isawaitable(value) else value
        if isinstance(script, Mapping) and key is not _NO_KEY:
            if key not in script:
                raise self._unscripted(step, f"no entry for {key!r}")
            return script[key]
        return script

    def _unscripted(self, step: str, why: str) -> JudgeError:
        return JudgeError(f"FakeJudge {self.name!r}: {step}: {why}", error_type="unscripted", cost=self._cost(step))

    def _reply(self, step: str, value: Any) -> JudgeReply[Any]:
        return JudgeReply(value, self._cost(step))

    async def _per_item(self, step: str, items: Sequence[str], *args: Any) -> list[Any]:
        script = self.scripts[step]
        if isinstance(script, Mapping) and not callable(script):
            # Looked up item by item; the call is still one call.
            await self._answer(step, _NO_KEY, *args)
            missing = [i for i in items if i not in script]
            if missing:
                raise self._unscripted(step, f"no entry for {missing[0]!r}")
            return [script[i] for i in items]
        return list(await self._answer(step, _NO_KEY, *args))

    # ----------------------------------------------------------------------------------------------
    # Judge steps
    # ----------------------------------------------------------------------------------------------

    async def extract_claims(self, text: str, *, question: str | None = None) -> JudgeReply[list[str]]:
        return self._reply("extract_claims", await self._answer("extract_claims", text, text, question=question))

    async def verify(self, claims: Sequence[str], chunks: Sequence[str]) -> JudgeReply[list[list[Verdict]]]:
        rows = await self._per_item("verify", claims, claims, chunks)
        matrix = [[row] * len(chunks) if isinstance(row, (str, Verdict)) else row for row in rows]
        if self._support_script is None:
            return self._reply("verify", matrix)
        value: Any = matrix  # verdict strings or Verdicts, as scripted; the metrics check them
        return JudgeReply(value, self._cost("verify"), support=self._support(claims, chunks))

    def _support(self, claims: Sequence[str], chunks: Sequence[str]) -> list[list[float]]:
        script = self._support_script
        if callable(script):
            rows = list(script(claims, chunks))
        elif isinstance(script, Mapping):
            missing = [c for c in claims if c not in script]
            if missing:
                raise self._unscripted("verify", f"no support entry for {missing[0]!r}")
            rows = [script[c] for c in claims]
        else:
            rows = [script] * len(claims)
        return [[float(row)] * len(chunks) if isinstance(row, (int, float)) else list(row) for row in rows]

    async def classify_claims(self, claims: Sequence[str], reference: str) -> JudgeReply[list[bool]]:
        return self._reply("classify_claims", await self._per_item("classify_claims", claims, claims, reference))

    async def rate_statements(self, query: str, statements: Sequence[str]) -> JudgeReply[list[bool]]:
        return self._reply("rate_statements", await self._per_item("rate_statements", statements, query, statements))

    async def generate_questions(self, answer: str, n: int) -> JudgeReply[list[Question]]:
        raw = await self._answer("generate_questions", _NO_KEY, answer, n)
        questions = [
            q if isinstance(q, Question) else Question(q, False) if isinstance(q, str) else Question(q[0], bool(q[1]))
            for q in raw
        ]
        return self._reply("generate_questions", questions)

    async def detect_noncommittal(self, answer: str) -> JudgeReply[bool]:
        return self._reply("detect_noncommittal", await self._answer("detect_noncommittal", answer, answer))

    async def embed(self, texts: Sequence[str]) -> JudgeReply[list[list[float]]]:
        return self._reply("embed", await self._per_item("embed", texts, texts))

    async def rate_chunks(self, query: str, chunks: Sequence[str]) -> JudgeReply[list[float]]:
        return self._reply("rate_chunks", await self._per_item("rate_chunks", chunks, query, chunks))

    async def rate_answer(self, query: str, answer: str) -> JudgeReply[Rating]:
        value = await self._answer("rate_answer", _NO_KEY, query, answer)
        rating = value if isinstance(value, Rating) or not isinstance(value, (int, float)) else Rating(float(value))
        return self._reply("rate_answer", rating)

    async def geval_steps(self, criteria: str) -> JudgeReply[list[str]]:
        return self._reply("geval_steps", list(await self._answer("geval_steps", criteria, criteria)))

    async def geval_score(
        self,
        criteria: str,
        steps: Sequence[str],
        params: Mapping[str, str],
        score_range: tuple[int, int],
    ) -> JudgeReply[GEvalRating]:
        value = await self._answer("geval_score", _NO_KEY, criteria, steps, params, score_range)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = GEvalRating(score=float(value), explanation="", weighted=False)
        return self._reply("geval_score", value)

    async def aclose(self) -> None:
        self.closed = True


class _NoKey:
    def __repr__(self) -> str:
        return "<no key>"


_NO_KEY: Any = _NoKey()
