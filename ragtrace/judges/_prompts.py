"""The OpenAI-compatible judge's prompts: one constant per step, with the JSON schema of its reply.

Prompts are short on purpose: a judge call is paid per token on every sampled trace, so the
instructions say what to decide and the shape to reply in, without few-shot examples. Every system
prompt starts with ``STEP_MARKER`` and the step name, which lets a test server (and a log reader)
tell the steps apart whatever response format the endpoint accepts. Items are numbered from 1 in
the user message and referred to by those numbers in the reply, so replies out of order, with extra
or missing items can be aligned (see ``_parsing.align``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.judges import _base

STEP_MARKER = "ragtrace-step:"
"""Prefix of the first line of every system prompt, followed by the step name."""

SCHEMA_PREFIX = "ragtrace_"
"""Prefix of the JSON-schema name sent in ``response_format`` (then the step name)."""


@dataclass(frozen=True, slots=True)
class StepPrompt:
    """One step's system prompt and the JSON schema of its reply."""

    step: str
    instructions: str
    shape: str
    schema: Mapping[str, Any]

    @property
    def system(self) -> str:
        """The system message: marker, instructions, and the reply's shape for JSON-mode endpoints."""
        return f"{STEP_MARKER} {self.step}\n{self.instructions}\nReply with JSON only, shaped: {self.shape}"

    @property
    def schema_name(self) -> str:
        """The name of the schema in ``response_format``."""
        return SCHEMA_PREFIX + self.step

    def response_format(self) -> dict[str, Any]:
        """The strict ``json_schema`` response format of this step."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.schema_name, "strict": True, "schema": _plain(self.schema)},
        }


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (the schema constants are read-only by convention)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _object(**properties: Any) -> dict[str, Any]:
    """A strict object schema: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _array(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


_STR = {"type": "string"}
_INT = {"type": "integer"}
_NUM = {"type": "number"}
_BOOL = {"type": "boolean"}

EXTRACT_CLAIMS = StepPrompt(
    step=_base.EXTRACT_CLAIMS,
    instructions=(
        "Split the text into atomic, self-contained factual claims: one fact each, pronouns replaced by what "
        "they refer to, so each can be checked alone. Use the question only to resolve references. Skip "
        "statements that assert nothing (greetings, hedges, \"I don't know\"). Keep the text's language."
    ),
    shape='{"claims": ["..."]}',
    schema=_object(claims=_array(_STR)),
)

VERIFY = StepPrompt(
    step=_base.VERIFY,
    instructions=(
        "For each numbered claim, say which numbered context chunks support it (the claim follows from the "
        "chunk) and which contradict it (the chunk states something incompatible). Chunks in neither list "
        "say neither. Judge by the chunks only, not by your own knowledge. One result per claim."
    ),
    shape='{"results": [{"claim": 1, "supported_by": [2], "contradicted_by": []}]}',
    schema=_object(
        results=_array(_object(claim=_INT, supported_by=_array(_INT), contradicted_by=_array(_INT))),
    ),
)

CLASSIFY_CLAIMS = StepPrompt(
    step=_base.CLASSIFY_CLAIMS,
    instructions=(
        "For each numbered claim, say whether the reference answer supports it (correct: true) or not "
        "(false: contradicted by or absent from the reference). One result per claim."
    ),
    shape='{"results": [{"claim": 1, "correct": true}]}',
    schema=_object(results=_array(_object(claim=_INT, correct=_BOOL))),
)

RATE_STATEMENTS = StepPrompt(
    step=_base.RATE_STATEMENTS,
    instructions=(
        "For each numbered statement of an answer, say whether it is relevant to the question: it helps "
        "answer it. Background that does not address the question is not relevant. One result per statement."
    ),
    shape='{"results": [{"statement": 1, "relevant": true}]}',
    schema=_object(results=_array(_object(statement=_INT, relevant=_BOOL))),
)

GENERATE_QUESTIONS = StepPrompt(
    step=_base.GENERATE_QUESTIONS,
    instructions=(
        "Write the requested number of different questions that the answer answers, from the answer alone. "
        "Flag each noncommittal: true when the answer is evasive, vague or a refusal "
        '("I don\'t know", "I cannot say"), else false.'
    ),
    shape='{"questions": [{"question": "...", "noncommittal": false}]}',
    schema=_object(questions=_array(_object(question=_STR, noncommittal=_BOOL))),
)

DETECT_NONCOMMITTAL = StepPrompt(
    step=_base.DETECT_NONCOMMITTAL,
    instructions="Say whether the answer is noncommittal: evasive, vague, a refusal or an admission of not knowing.",
    shape='{"noncommittal": false}',
    schema=_object(noncommittal=_BOOL),
)

RATE_CHUNKS = StepPrompt(
    step=_base.RATE_CHUNKS,
    instructions=(
        "Rate each numbered context chunk's relevance to the question from 0 to 1: 1 = it holds what answers "
        "the question, 0.5 = related but partial, 0 = unrelated. One rating per chunk."
    ),
    shape='{"ratings": [{"chunk": 1, "relevance": 0.5}]}',
    schema=_object(ratings=_array(_object(chunk=_INT, relevance=_NUM))),
)

RATE_ANSWER = StepPrompt(
    step=_base.RATE_ANSWER,
    instructions=(
        "Rate from 0 to 1 how well the answer addresses the question: 1 = fully and directly, 0 = not at all. "
        "Explain in one sentence first."
    ),
    shape='{"explanation": "...", "score": 0.8}',
    schema=_object(explanation=_STR, score=_NUM),
)

GEVAL_STEPS = StepPrompt(
    step=_base.GEVAL,
    instructions="Write 3 to 5 short evaluation steps for judging a text against the criteria.",
    shape='{"steps": ["..."]}',
    schema=_object(steps=_array(_STR)),
)

# The score comes first so that its token sits at a known place for reading its logprobs.
GEVAL_SCORE = StepPrompt(
    step=_base.GEVAL + "_score",
    instructions=(
        "Evaluate the inputs against the criteria by following the evaluation steps. Give an integer score "
        "in the stated range, then a one-sentence explanation."
    ),
    shape='{"score": 3, "explanation": "..."}',
    schema=_object(score=_INT, explanation=_STR),
)

ALL_PROMPTS: tuple[StepPrompt, ...] = (
    EXTRACT_CLAIMS,
    VERIFY,
    CLASSIFY_CLAIMS,
    RATE_STATEMENTS,
    GENERATE_QUESTIONS,
    DETECT_NONCOMMITTAL,
    RATE_CHUNKS,
    RATE_ANSWER,
    GEVAL_STEPS,
    GEVAL_SCORE,
)


def numbered(label: str, items: Sequence[str]) -> str:
    """``items`` as ``[label 1] text`` lines, the numbering the replies refer to."""
    return "\n".join(f"[{label} {i}] {text}" for i, text in enumerate(items, start=1))


def render_extract_claims(text: str, question: str | None) -> str:
    head = f"Question: {question}\n" if question else ""
    return f"{head}Text: {text}"


def render_verify(claims: Sequence[str], chunks: Sequence[str]) -> str:
    return f"Context chunks:\n{numbered('chunk', chunks)}\n\nClaims:\n{numbered('claim', claims)}"


def render_classify_claims(claims: Sequence[str], reference: str) -> str:
    return f"Reference answer: {reference}\n\nClaims:\n{numbered('claim', claims)}"


def render_rate_statements(query: str, statements: Sequence[str]) -> str:
    return f"Question: {query}\n\nStatements:\n{numbered('statement', statements)}"


def render_generate_questions(answer: str, n: int) -> str:
    return f"Number of questions: {n}\nAnswer: {answer}"


def render_detect_noncommittal(answer: str) -> str:
    return f"Answer: {answer}"


def render_rate_chunks(query: str, chunks: Sequence[str]) -> str:
    return f"Question: {query}\n\nContext chunks:\n{numbered('chunk', chunks)}"


def render_rate_answer(query: str, answer: str) -> str:
    return f"Question: {query}\nAnswer: {answer}"


def render_geval_steps(criteria: str) -> str:
    return f"Criteria: {criteria}"


def render_geval_score(
    criteria: str, steps: Sequence[str], params: Mapping[str, str], score_range: tuple[int, int]
) -> str:
    step_lines = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))
    inputs = "\n".join(f"{name}: {value}" for name, value in params.items())
    low, high = score_range
    return f"Criteria: {criteria}\nEvaluation steps:\n{step_lines}\nScore range: {low} to {high}\n\nInputs:\n{inputs}"
