"""The OpenAI-compatible judge's prompts: one constant per step, with the JSON schema of its reply.

Prompts are short on purpose: a judge call is paid per token on every sampled trace, so the
instructions say what to decide and the shape to reply in, without few-shot examples. The shapes
hold no example values: small models copy them (a shape citing ``[2]`` made a 0.5B model cite a
nonexistent chunk 2 in 116 of 164 replies, a ``0.5`` rating came back in 5 of 5). Where a value can
be constrained it is: the item numbers a reply may use are enums in the request's JSON schema
(``schema_for``), and the reply is checked against the request in any case. Every system
prompt starts with ``STEP_MARKER`` and the step name, which lets a test server (and a log reader)
tell the steps apart whatever response format the endpoint accepts. Items are numbered from 1 in
the user message and referred to by those numbers in the reply, so replies out of order, with extra
or missing items can be aligned (see ``parsing.align``).

In order: what a prompt is made of (``StepPrompt``, the markers, the strict JSON-schema building blocks,
``numbered``); the claim steps (extract, verify all at once or one question per claim, classify against a
reference); the rating steps (rate statements, generate questions, detect noncommittal answers, rate chunks,
rate the answer, G-Eval's steps and score); ``ALL_PROMPTS``. A new step's prompt goes beside its kind and
joins ``ALL_PROMPTS``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.judges import _base
from ragtrace.judges._question_claims import split_answer_claim

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
    word: bool = False
    """The reply is one word, asked for without a response format (``instructions`` say which words)."""

    @property
    def system(self) -> str:
        """The system message: marker, instructions, and the reply's shape for JSON-mode endpoints."""
        if self.word:
            return f"{STEP_MARKER} {self.step}\n{self.instructions}"
        return f"{STEP_MARKER} {self.step}\n{self.instructions}\nReply with JSON only, shaped: {self.shape}"

    @property
    def schema_name(self) -> str:
        """The name of the schema in ``response_format``."""
        return SCHEMA_PREFIX + self.step

    def response_format(self, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The strict ``json_schema`` response format of this step (``schema`` narrows the step's own
        to one request, e.g. with the valid item numbers as enums)."""
        chosen = self.schema if schema is None else schema
        return {
            "type": "json_schema",
            "json_schema": {"name": self.schema_name, "strict": True, "schema": _plain(chosen)},
        }


def _plain(value: Any) -> Any:
    """A deep copy as plain dicts and lists (the schema constants are read-only by convention)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def object_schema(**properties: Any) -> dict[str, Any]:
    """A strict object schema: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def array_schema(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def numbers_schema(count: int) -> dict[str, Any]:
    """An item number of a request with ``count`` items: an integer enum 1..count."""
    return {"type": "integer", "enum": list(range(1, count + 1))}


STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}


def numbered(label: str, items: Sequence[str]) -> str:
    """``items`` as ``[label 1] text`` lines, the numbering the replies refer to."""
    return "\n".join(f"[{label} {i}] {text}" for i, text in enumerate(items, start=1))


# -- the claim steps --------------------------------------------------------------------------------

EXTRACT_CLAIMS = StepPrompt(
    step=_base.EXTRACT_CLAIMS,
    instructions=(
        "Split the text into atomic, self-contained factual claims: one fact each, pronouns replaced by what "
        "they refer to, so each can be checked alone. Each claim must keep the question's meaning: when the "
        "text answers the question with a bare name, number, date or yes/no, write a claim that states what "
        "the question asks together with that answer. Skip statements that assert nothing (greetings, hedges, "
        "\"I don't know\"). Keep the text's language."
    ),
    shape='{"claims": [<claim sentence>, ...]}',
    schema=object_schema(claims=array_schema(STR)),
)

VERIFY = StepPrompt(
    step=_base.VERIFY,
    instructions=(
        "For each numbered claim, say which numbered context chunks support it (the claim follows from the "
        "chunk) and which contradict it (the chunk states something incompatible). Chunks in neither list "
        "say neither. Judge by the chunks only, not by your own knowledge. One result per claim."
    ),
    shape=(
        '{"results": [{"claim": <claim number>, "supported_by": [<chunk number>, ...], '
        '"contradicted_by": [<chunk number>, ...]}, ...]} with exactly one result per claim'
    ),
    schema=object_schema(
        results=array_schema(
            object_schema(claim=INT, supported_by=array_schema(INT), contradicted_by=array_schema(INT))
        ),
    ),
)

VERIFY_CLAIM_STEP = "verify_claim"
"""Step name of the one-question-per-claim verification (a part of ``verify``, not a step of its own)."""

# One yes/no question per claim: what a 0.5B-7B model answers best, and the answer's first token
# carries P(yes) in its logprobs. With one chunk the reply is one word, asked for in plain text: on
# HaluEval QA (80 train-split records) a 0.5B model's P(yes) separated right from hallucinated answers
# with AUROC 0.766 asked this way (0.771 without the "contradicted" word), 0.729 with the same words in
# a JSON schema and 0.655 with the question in the system prompt. The question comes last.
VERIFY_CLAIM_WORD = StepPrompt(
    step=VERIFY_CLAIM_STEP,
    instructions=(
        "You check statements against a context. Reply with one word: yes if the context supports the "
        "statement, no if it does not, contradicted if the context states the opposite."
    ),
    shape="yes | no | contradicted",
    schema=object_schema(),
    word=True,
)

# With several chunks the reply also names the chunk it rests on (an enum of the request's numbers),
# so it is JSON; the answer comes first so that its token sits at a known place.
VERIFY_CLAIM = StepPrompt(
    step=VERIFY_CLAIM_STEP,
    instructions=(
        "You check statements against a context. Say whether the context supports the statement (states "
        "it or clearly implies it), whether it contradicts it (states the opposite), and which chunk your "
        "answer rests on."
    ),
    shape='{"supported": <"yes" or "no">, "contradicted": <"yes" or "no">}',
    schema=object_schema(
        supported={"type": "string", "enum": ["yes", "no"]}, contradicted={"type": "string", "enum": ["yes", "no"]}
    ),
)

# Verification with the chunks' relevance read in the same call (the production suite's context_relevance
# then costs no call of its own): the question is shown, and the reply rates every chunk as RATE_CHUNKS
# does, after the verdicts (whose tokens, and logprobs, stay where the plain prompts put them).
_RELEVANCE_NUMBER = {"type": "number", "minimum": 0, "maximum": 1}
_RELEVANCE = (
    "Also rate each chunk's relevance to the question from 0 to 1 (1: holds the answer, 0.5: related, 0: unrelated)."
)
_RATINGS_SHAPE = '"ratings": {"chunk_1": <0 to 1>, "chunk_2": <0 to 1>, ...}'


def rating_key(number: int) -> str:
    """The key of chunk ``number``'s (1-based) rating in a reply's ``ratings`` object."""
    return f"chunk_{number}"


def ratings_schema(n_chunks: int) -> dict[str, Any]:
    """``ratings`` of one request: an object with a required rating in [0, 1] under every chunk's key.

    A fixed key per chunk rather than a list of ``{"chunk", "relevance"}`` items: a server that holds its
    output to the schema (llama.cpp, vLLM, Ollama) can then write neither too few ratings nor a chunk
    twice. Asked as a list, a 0.5B model left a chunk out of 60 of 60 several-chunk replies
    (bench/results/verify_rated_choice.txt), and the suite paid a rate_chunks call for each.
    """
    return object_schema(**{rating_key(n): _RELEVANCE_NUMBER for n in range(1, n_chunks + 1)})


# The steps' own schemas hold the one-chunk form (valid as a strict schema); every request that rates chunks
# sends its own, one key per chunk.
_ONE_CHUNK_RATINGS = ratings_schema(1)

VERIFY_RATED_STEP = "verify_rated"
"""Step name of batched verification that also rates the chunks (a part of ``verify``)."""

VERIFY_RATED = StepPrompt(
    step=VERIFY_RATED_STEP,
    instructions=f"{VERIFY.instructions} {_RELEVANCE} One rating per chunk.",
    shape=(
        '{"results": [{"claim": <claim number>, "supported_by": [<chunk number>, ...], '
        f'"contradicted_by": [<chunk number>, ...]}}, ...], {_RATINGS_SHAPE}}} with exactly one result per claim '
        "and one rating per chunk"
    ),
    schema=object_schema(
        results=array_schema(
            object_schema(claim=INT, supported_by=array_schema(INT), contradicted_by=array_schema(INT))
        ),
        ratings=_ONE_CHUNK_RATINGS,
    ),
)

VERIFY_CLAIM_RATED_STEP = "verify_claim_rated"
"""Step name of the per-claim question that also rates the chunks (a record's first claim asks it)."""

VERIFY_CLAIM_RATED = StepPrompt(
    step=VERIFY_CLAIM_RATED_STEP,
    instructions=(
        "You check statements against a context. Say whether the context supports the statement (states "
        "it or clearly implies it) and whether it contradicts it (states the opposite). " + _RELEVANCE
    ),
    shape=f'{{"supported": <"yes" or "no">, "contradicted": <"yes" or "no">, {_RATINGS_SHAPE}}}',
    schema=object_schema(
        supported={"type": "string", "enum": ["yes", "no"]},
        contradicted={"type": "string", "enum": ["yes", "no"]},
        ratings=_ONE_CHUNK_RATINGS,
    ),
)

CLASSIFY_CLAIMS = StepPrompt(
    step=_base.CLASSIFY_CLAIMS,
    instructions=(
        "For each numbered claim, say whether the reference answer supports it (correct: true) or not "
        "(false: contradicted by or absent from the reference). One result per claim."
    ),
    shape='{"results": [{"claim": <claim number>, "correct": <true or false>}, ...]} with one result per claim',
    schema=object_schema(results=array_schema(object_schema(claim=INT, correct=BOOL))),
)

_YES_NO = {"type": "string", "enum": ["yes", "no"]}


def verify_schema(n_claims: int, n_chunks: int) -> dict[str, Any]:
    """VERIFY's schema for one request: claim and chunk numbers as enums of the numbers it has."""
    chunk = numbers_schema(n_chunks)
    return object_schema(
        results=array_schema(
            object_schema(
                claim=numbers_schema(n_claims), supported_by=array_schema(chunk), contradicted_by=array_schema(chunk)
            )
        )
    )


def verify_claim_schema(n_chunks: int) -> dict[str, Any]:
    """VERIFY_CLAIM's schema: yes/no answers, and with several chunks the number of the one it rests on."""
    if n_chunks <= 1:
        return object_schema(supported=_YES_NO, contradicted=_YES_NO)
    return object_schema(supported=_YES_NO, contradicted=_YES_NO, chunk=numbers_schema(n_chunks))


def verify_rated_schema(n_claims: int, n_chunks: int) -> dict[str, Any]:
    """VERIFY_RATED's schema for one request: VERIFY's, and a rating per chunk."""
    results = verify_schema(n_claims, n_chunks)["properties"]["results"]
    return object_schema(results=results, ratings=ratings_schema(n_chunks))


def verify_claim_rated_schema(n_chunks: int) -> dict[str, Any]:
    """VERIFY_CLAIM_RATED's schema: the yes/no answers, the chunk the answer rests on (several chunks), the
    ratings."""
    answers: dict[str, Any] = {"supported": _YES_NO, "contradicted": _YES_NO}
    if n_chunks > 1:
        answers["chunk"] = numbers_schema(n_chunks)
    return object_schema(**answers, ratings=ratings_schema(n_chunks))


def classify_schema(n_claims: int) -> dict[str, Any]:
    return object_schema(results=array_schema(object_schema(claim=numbers_schema(n_claims), correct=BOOL)))


def render_extract_claims(text: str, question: str | None) -> str:
    head = f"Question: {question}\n" if question else ""
    return f"{head}Text: {text}"


def render_verify(claims: Sequence[str], chunks: Sequence[str]) -> str:
    return f"Context chunks:\n{numbered('chunk', chunks)}\n\nClaims:\n{numbered('claim', claims)}"


def render_verify_claim(claim: str, chunks: Sequence[str]) -> str:
    statement = render_statement(claim)
    if len(chunks) == 1:
        return f"Context: {chunks[0]}\n\nStatement: {statement}\n\nIs the statement supported by the context?"
    return (
        f"Context chunks:\n{numbered('chunk', chunks)}\n\nStatement: {statement}\n\n"
        "Is the statement supported by the context? Which chunk does your answer rest on?"
    )


def render_verify_rated(question: str, claims: Sequence[str], chunks: Sequence[str]) -> str:
    return f"Question: {question}\n\n{render_verify(claims, chunks)}"


def render_verify_claim_rated(question: str, claim: str, chunks: Sequence[str]) -> str:
    """The per-claim question with the record's question first and the ratings asked for last."""
    asks = "Is the statement supported by the context?"
    if len(chunks) > 1:
        asks += " Which chunk does your answer rest on?"
    return (
        f"Question: {question}\n\nContext chunks:\n{numbered('chunk', chunks)}\n\nStatement: {render_statement(claim)}"
        f"\n\n{asks}"
    )


def render_statement(claim: str) -> str:
    """A claim as the per-claim question shows it: a question joined to its answer (``answer_claim``)
    marked "<question>? Answer: <answer>", any other claim as it is.

    Chosen on the calibration split (bench/verify_prompt_choice.py, HaluEval QA dev rows 0-199): a
    0.5B model's P(yes) separated right from hallucinated answers with AUROC 0.842 marked this way
    against 0.812 with the claim as it is (+0.031, interval [+0.015, +0.047]); on the length-controlled
    set 0.626 against 0.634 (-0.009 [-0.032, +0.014], within noise).
    """
    parts = split_answer_claim(claim)
    return claim if parts is None else f"{parts[0]}? Answer: {parts[1]}"


def render_classify_claims(claims: Sequence[str], reference: str) -> str:
    return f"Reference answer: {reference}\n\nClaims:\n{numbered('claim', claims)}"


# -- the rating steps --------------------------------------------------------------------------------

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
    schema=object_schema(results=array_schema(object_schema(statement=INT, relevant=BOOL))),
)

GENERATE_QUESTIONS = StepPrompt(
    step=_base.GENERATE_QUESTIONS,
    instructions=(
        "Write the requested number of different questions that the answer answers, from the answer alone. "
        "Flag each noncommittal: true when the answer is evasive, vague or a refusal "
        '("I don\'t know", "I cannot say"), else false.'
    ),
    shape='{"questions": [{"question": <question text>, "noncommittal": <true or false>}, ...]}',
    schema=object_schema(questions=array_schema(object_schema(question=STR, noncommittal=BOOL))),
)

DETECT_NONCOMMITTAL = StepPrompt(
    step=_base.DETECT_NONCOMMITTAL,
    instructions="Say whether the answer is noncommittal: evasive, vague, a refusal or an admission of not knowing.",
    shape='{"noncommittal": <true or false>}',
    schema=object_schema(noncommittal=BOOL),
)

RATE_CHUNKS = StepPrompt(
    step=_base.RATE_CHUNKS,
    instructions=(
        "Rate each numbered context chunk's relevance to the question from 0 to 1: 1 = it holds what answers "
        "the question, 0.5 = related but partial, 0 = unrelated. One rating per chunk."
    ),
    shape=f"{{{_RATINGS_SHAPE}}} with one rating per chunk",
    schema=object_schema(ratings=_ONE_CHUNK_RATINGS),
)

RATE_ANSWER = StepPrompt(
    step=_base.RATE_ANSWER,
    instructions=(
        "Rate from 0 to 1 how well the answer addresses the question: 1 = fully and directly, 0 = not at all. "
        "Explain in one sentence first."
    ),
    shape='{"explanation": <one sentence>, "score": <number from 0 to 1>}',
    schema=object_schema(explanation=STR, score=NUM),
)

GEVAL_STEPS = StepPrompt(
    step=_base.GEVAL,
    instructions="Write 3 to 5 short evaluation steps for judging a text against the criteria.",
    shape='{"steps": [<step>, ...]}',
    schema=object_schema(steps=array_schema(STR)),
)

# The score comes first so that its token sits at a known place for reading its logprobs.
GEVAL_SCORE = StepPrompt(
    step=_base.GEVAL + "_score",
    instructions=(
        "Evaluate the inputs against the criteria by following the evaluation steps. Give an integer score "
        "in the stated range, then a one-sentence explanation."
    ),
    shape='{"score": <integer in the range>, "explanation": <one sentence>}',
    schema=object_schema(score=INT, explanation=STR),
)


def rate_statements_schema(n_statements: int) -> dict[str, Any]:
    return object_schema(results=array_schema(object_schema(statement=numbers_schema(n_statements), relevant=BOOL)))


def rate_chunks_schema(n_chunks: int) -> dict[str, Any]:
    return object_schema(ratings=ratings_schema(n_chunks))


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


ALL_PROMPTS: tuple[StepPrompt, ...] = (
    EXTRACT_CLAIMS,
    VERIFY,
    VERIFY_CLAIM,
    VERIFY_CLAIM_WORD,
    VERIFY_RATED,
    VERIFY_CLAIM_RATED,
    CLASSIFY_CLAIMS,
    RATE_STATEMENTS,
    GENERATE_QUESTIONS,
    DETECT_NONCOMMITTAL,
    RATE_CHUNKS,
    RATE_ANSWER,
    GEVAL_STEPS,
    GEVAL_SCORE,
)
