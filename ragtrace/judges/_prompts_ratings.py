"""The rating steps' prompts: statement relevance, question generation and noncommittal answers (answer
relevancy), chunk relevance, the answer's rating, and G-Eval's steps and score; each with its reply
schema, the per-request schemas with the item numbers as enums, and the user-message renderers.

Re-exported by ``_prompts`` (the import surface, whose docstring says why the prompts look as they do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.judges import _base
from ragtrace.judges._prompts_base import BOOL as _BOOL
from ragtrace.judges._prompts_base import INT as _INT
from ragtrace.judges._prompts_base import NUM as _NUM
from ragtrace.judges._prompts_base import STR as _STR
from ragtrace.judges._prompts_base import StepPrompt, numbered
from ragtrace.judges._prompts_base import array_schema as _array
from ragtrace.judges._prompts_base import numbers_schema as _numbers
from ragtrace.judges._prompts_base import object_schema as _object

RATE_STATEMENTS = StepPrompt(
    step=_base.RATE_STATEMENTS,
    instructions=(
        "For each numbered statement of an answer, say whether it is relevant to the question: it helps "
        "answer it. Background that does not address the question is not relevant. One result per statement."
    ),
    shape=(
        '{"results": [{"statement": <statement number>, "relevant": <true or false>}, ...]} '
        "with one result per statement"
    ),
    schema=_object(results=_array(_object(statement=_INT, relevant=_BOOL))),
)

GENERATE_QUESTIONS = StepPrompt(
    step=_base.GENERATE_QUESTIONS,
    instructions=(
        "Write the requested number of different questions that the answer answers, from the answer alone. "
        "Flag each noncommittal: true when the answer is evasive, vague or a refusal "
        '("I don\'t know", "I cannot say"), else false.'
    ),
    shape='{"questions": [{"question": <question text>, "noncommittal": <true or false>}, ...]}',
    schema=_object(questions=_array(_object(question=_STR, noncommittal=_BOOL))),
)

DETECT_NONCOMMITTAL = StepPrompt(
    step=_base.DETECT_NONCOMMITTAL,
    instructions="Say whether the answer is noncommittal: evasive, vague, a refusal or an admission of not knowing.",
    shape='{"noncommittal": <true or false>}',
    schema=_object(noncommittal=_BOOL),
)

RATE_CHUNKS = StepPrompt(
    step=_base.RATE_CHUNKS,
    instructions=(
        "Rate each numbered context chunk's relevance to the question from 0 to 1: 1 = it holds what answers "
        "the question, 0.5 = related but partial, 0 = unrelated. One rating per chunk."
    ),
    shape='{"ratings": [{"chunk": <chunk number>, "relevance": <number from 0 to 1>}, ...]} with one rating per chunk',
    schema=_object(ratings=_array(_object(chunk=_INT, relevance=_NUM))),
)

RATE_ANSWER = StepPrompt(
    step=_base.RATE_ANSWER,
    instructions=(
        "Rate from 0 to 1 how well the answer addresses the question: 1 = fully and directly, 0 = not at all. "
        "Explain in one sentence first."
    ),
    shape='{"explanation": <one sentence>, "score": <number from 0 to 1>}',
    schema=_object(explanation=_STR, score=_NUM),
)

GEVAL_STEPS = StepPrompt(
    step=_base.GEVAL,
    instructions="Write 3 to 5 short evaluation steps for judging a text against the criteria.",
    shape='{"steps": [<step>, ...]}',
    schema=_object(steps=_array(_STR)),
)

# The score comes first so that its token sits at a known place for reading its logprobs.
GEVAL_SCORE = StepPrompt(
    step=_base.GEVAL + "_score",
    instructions=(
        "Evaluate the inputs against the criteria by following the evaluation steps. Give an integer score "
        "in the stated range, then a one-sentence explanation."
    ),
    shape='{"score": <integer in the range>, "explanation": <one sentence>}',
    schema=_object(score=_INT, explanation=_STR),
)


def rate_statements_schema(n_statements: int) -> dict[str, Any]:
    return _object(results=_array(_object(statement=_numbers(n_statements), relevant=_BOOL)))


def rate_chunks_schema(n_chunks: int) -> dict[str, Any]:
    relevance = {"type": "number", "minimum": 0, "maximum": 1}
    return _object(ratings=_array(_object(chunk=_numbers(n_chunks), relevance=relevance)))


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
