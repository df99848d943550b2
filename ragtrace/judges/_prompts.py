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
or missing items can be aligned (see ``_parsing.align``).

Where they live, one job a module; this one is the import path the judge, the stub server and the
tests use (it re-exports their names) and ``ALL_PROMPTS``:

- ``_prompts_base``: ``StepPrompt``, ``STEP_MARKER``, ``SCHEMA_PREFIX``, the schema building blocks and
  ``numbered``.
- ``_prompts_claims``: extract claims, verify (all claims at once, or one question per claim), classify
  claims against a reference.
- ``_prompts_ratings``: rate statements, generate questions, detect noncommittal answers, rate chunks,
  rate the answer, G-Eval's steps and score.

A new step's prompt goes in the module of its kind, is re-exported here and joins ``ALL_PROMPTS``.
"""

from __future__ import annotations

from ragtrace.judges._prompts_base import SCHEMA_PREFIX, STEP_MARKER, StepPrompt, numbered
from ragtrace.judges._prompts_claims import (
    CLASSIFY_CLAIMS,
    EXTRACT_CLAIMS,
    VERIFY,
    VERIFY_CLAIM,
    VERIFY_CLAIM_STEP,
    VERIFY_CLAIM_WORD,
    classify_schema,
    render_classify_claims,
    render_extract_claims,
    render_verify,
    render_verify_claim,
    verify_claim_schema,
    verify_schema,
)
from ragtrace.judges._prompts_ratings import (
    DETECT_NONCOMMITTAL,
    GENERATE_QUESTIONS,
    GEVAL_SCORE,
    GEVAL_STEPS,
    RATE_ANSWER,
    RATE_CHUNKS,
    RATE_STATEMENTS,
    rate_chunks_schema,
    rate_statements_schema,
    render_detect_noncommittal,
    render_generate_questions,
    render_geval_score,
    render_geval_steps,
    render_rate_answer,
    render_rate_chunks,
    render_rate_statements,
)

ALL_PROMPTS: tuple[StepPrompt, ...] = (
    EXTRACT_CLAIMS,
    VERIFY,
    VERIFY_CLAIM,
    VERIFY_CLAIM_WORD,
    CLASSIFY_CLAIMS,
    RATE_STATEMENTS,
    GENERATE_QUESTIONS,
    DETECT_NONCOMMITTAL,
    RATE_CHUNKS,
    RATE_ANSWER,
    GEVAL_STEPS,
    GEVAL_SCORE,
)

__all__ = [
    "ALL_PROMPTS",
    "CLASSIFY_CLAIMS",
    "DETECT_NONCOMMITTAL",
    "EXTRACT_CLAIMS",
    "GENERATE_QUESTIONS",
    "GEVAL_SCORE",
    "GEVAL_STEPS",
    "RATE_ANSWER",
    "RATE_CHUNKS",
    "RATE_STATEMENTS",
    "SCHEMA_PREFIX",
    "STEP_MARKER",
    "VERIFY",
    "VERIFY_CLAIM",
    "VERIFY_CLAIM_STEP",
    "VERIFY_CLAIM_WORD",
    "StepPrompt",
    "classify_schema",
    "numbered",
    "rate_chunks_schema",
    "rate_statements_schema",
    "render_classify_claims",
    "render_detect_noncommittal",
    "render_extract_claims",
    "render_generate_questions",
    "render_geval_score",
    "render_geval_steps",
    "render_rate_answer",
    "render_rate_chunks",
    "render_rate_statements",
    "render_verify",
    "render_verify_claim",
    "verify_claim_schema",
    "verify_schema",
]
