"""The table of judge steps: the one place a step is declared.

A step is one question a metric can ask a judge. Each row says the capability name metrics and judges
list (``Metric.capabilities``, ``Judge.capabilities``), the ``Judge`` methods that answer it, and the
prompt steps an OpenAI-compatible judge asks it with (the ``StepPrompt.step`` of its prompts, which the
stub server answers). Everything else is derived from or checked against this table:

- ``ALL_CAPABILITIES`` (``_base``) and ``FakeJudge``'s steps are derived from it;
- every judge class ragtrace ships (``OpenAIJudge``, ``OfflineJudge``, ``TieredJudge``, the per-record
  ``MemoJudge``, ``FakeJudge``) is checked at import by ``serves_every_step``: a step added here and
  forgotten in one of them fails when its module is imported, not as a metric "error" at run time;
- tests check the ``Judge`` protocol, the prompts and the stub's answers against it
  (tests/ragtrace/judges/test_steps.py).

Adding a step: a row here, its method on the ``Judge`` protocol (``_base``), on each judge class and
``MemoJudge``, a prompt (``_prompts_*``) and the stub's answer (``testing/_stub_answers``); the import
check and the tests list whatever is missing (docs/contributing.md).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "ALL_CAPABILITIES",
    "CLASSIFY_CLAIMS",
    "DETECT_NONCOMMITTAL",
    "EMBED",
    "EXTRACT_CLAIMS",
    "GENERATE_QUESTIONS",
    "GEVAL",
    "METHODS",
    "RATE_ANSWER",
    "RATE_CHUNKS",
    "RATE_STATEMENTS",
    "STEPS",
    "VERIFY",
    "Step",
    "serves_every_step",
]

EXTRACT_CLAIMS = "extract_claims"
VERIFY = "verify"
CLASSIFY_CLAIMS = "classify_claims"
RATE_STATEMENTS = "rate_statements"
GENERATE_QUESTIONS = "generate_questions"
DETECT_NONCOMMITTAL = "detect_noncommittal"
EMBED = "embed"
RATE_CHUNKS = "rate_chunks"
RATE_ANSWER = "rate_answer"
GEVAL = "geval"


@dataclass(frozen=True, slots=True)
class Step:
    """One row of the table: the capability, the ``Judge`` methods answering it, its prompt steps."""

    capability: str
    methods: tuple[str, ...]
    prompts: tuple[str, ...]
    """``StepPrompt.step`` of the prompts an OpenAI-compatible judge asks (none: not a chat call)."""


STEPS: tuple[Step, ...] = (
    Step(EXTRACT_CLAIMS, ("extract_claims",), (EXTRACT_CLAIMS,)),
    # Batched (one call per record) or per claim (one yes/no question each, scored from logprobs); the
    # "_rated" prompts also rate the chunks' relevance to the record's question in the same call.
    Step(VERIFY, ("verify",), (VERIFY, "verify_claim", "verify_rated", "verify_claim_rated")),
    Step(CLASSIFY_CLAIMS, ("classify_claims",), (CLASSIFY_CLAIMS,)),
    Step(RATE_STATEMENTS, ("rate_statements",), (RATE_STATEMENTS,)),
    Step(GENERATE_QUESTIONS, ("generate_questions",), (GENERATE_QUESTIONS,)),
    Step(DETECT_NONCOMMITTAL, ("detect_noncommittal",), (DETECT_NONCOMMITTAL,)),
    Step(EMBED, ("embed",), ()),  # the embeddings endpoint, no prompt
    Step(RATE_CHUNKS, ("rate_chunks",), (RATE_CHUNKS,)),
    Step(RATE_ANSWER, ("rate_answer",), (RATE_ANSWER,)),
    Step(GEVAL, ("geval_steps", "geval_score"), (GEVAL, GEVAL + "_score")),
)

ALL_CAPABILITIES = frozenset(step.capability for step in STEPS)
"""Every step a judge can offer."""

METHODS: tuple[str, ...] = tuple(method for step in STEPS for method in step.methods)
"""Every ``Judge`` method that answers a step, in table order."""

J = TypeVar("J", bound=type)


def serves_every_step(cls: J) -> J:
    """Class decorator: raise ``TypeError`` at import when ``cls`` lacks a coroutine method for a step.

    A judge that does not *offer* a step still has the method (it raises ``JudgeCapabilityError``);
    what this catches is a step added to the table and forgotten in a judge."""
    missing = [name for name in METHODS if not inspect.iscoroutinefunction(getattr(cls, name, None))]
    if missing:
        raise TypeError(
            f"{cls.__qualname__} does not serve the judge steps {missing} (ragtrace/judges/_capabilities.py)"
        )
    return cls
