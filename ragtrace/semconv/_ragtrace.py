"""ragtrace's own names (``ragtrace.*``): roles, content flags, flat scores, decisions, cost, metric instruments."""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------------
# ragtrace span attributes
# --------------------------------------------------------------------------------------------------

RAGTRACE_ROLE: Final = "ragtrace.role"
"""Which ragtrace decorator made the span: ``rag``, ``retrieve`` or ``generate``. Marks spans ragtrace scores."""

ROLE_RAG: Final = "rag"
"""Value of ``ragtrace.role`` on the RAG entry span (the span that gets scored)."""

ROLE_RETRIEVE: Final = "retrieve"
"""Value of ``ragtrace.role`` on retriever spans."""

ROLE_GENERATE: Final = "generate"
"""Value of ``ragtrace.role`` on generation spans."""

RAGTRACE_CHUNK_COUNT: Final = "ragtrace.chunks.count"
"""Number of chunks retrieved for the RAG call (all retrievers), before any export limit."""

RAGTRACE_CONTENT_CAPTURED: Final = "ragtrace.content.captured"
"""False when content capture is off: the span carries no query, chunk or answer text."""

RAGTRACE_CONTENT_TRUNCATED: Final = "ragtrace.content.truncated"
"""True when some exported text on this span was cut at the capture limit."""

RAGTRACE_ANSWER_PARTIAL: Final = "ragtrace.answer.partial"
"""``true`` on a RAG span whose answer stream the consumer closed before it ended: the answer is only
what was yielded until then. Absent on whole answers. ``Rule.partial_answer()`` matches it."""

RAGTRACE_REFERENCE: Final = "ragtrace.reference"
"""The ground-truth answer given with ``ragtrace.record(reference=...)``, when content capture is on."""

TRUNCATION_MARKER: Final = "…[truncated by ragtrace]"
"""Appended to any exported text value that was cut at the capture limit."""

EVAL_PREFIX: Final = "ragtrace.eval"
"""Prefix of every score attribute; a metric's score is ``ragtrace.eval.<metric>`` (double)."""


def eval_score(metric: str) -> str:
    """Return the attribute carrying a metric's score, e.g. ``ragtrace.eval.faithfulness`` (double in [0, 1])."""
    return f"{EVAL_PREFIX}.{metric}"


def eval_label(metric: str) -> str:
    """Return the attribute carrying a metric's label, e.g. ``ragtrace.eval.faithfulness.label``."""
    return f"{EVAL_PREFIX}.{metric}.label"


def eval_reason(metric: str) -> str:
    """Return the attribute saying why a metric has no score, e.g. ``ragtrace.eval.context_recall.reason``."""
    return f"{EVAL_PREFIX}.{metric}.reason"


def eval_method(metric: str) -> str:
    """Return the attribute naming how a metric was computed when there is more than one way."""
    return f"{EVAL_PREFIX}.{metric}.method"


def eval_judge(metric: str) -> str:
    """Return the attribute naming the judge (tier) that produced a metric's score, e.g.
    ``ragtrace.eval.faithfulness.judge`` = ``openai:qwen2.5`` on a span scored by the tiered judge."""
    return f"{EVAL_PREFIX}.{metric}.judge"


HALLUCINATED_CLAIM: Final = "hallucinated_claim"
"""The record-level hallucination signal, a metric of its own beside the contract's claim ratio
(``hallucination``): ``ragtrace.eval.hallucinated_claim`` = 1 - the least-supported claim's support (the
judge's probability that its worst claim is unsupported), on the scale where 0.5 is the judge's cut. Above
0.5 exactly when one claim is below the cut, whatever the other claims: label ``hallucinated``. The default
spike rule and the Prometheus hallucination share count it (``hallucinated_claim > 0.5``)."""

EVAL_DECISION: Final = "ragtrace.eval.decision"
"""What happened to this RAG span's scoring: one of the ``DECISION_*`` values. On every RAG span."""

DECISION_EVALUATED: Final = "evaluated"
"""The span was scored and carries its scores."""

DECISION_NOT_SAMPLED: Final = "not_sampled"
"""The sampler did not pick this trace (rate or rules)."""

DECISION_THROTTLED: Final = "throttled"
"""Picked, but the records-per-minute throttle was full."""

DECISION_OVER_BUDGET: Final = "over_budget"
"""Picked, but the daily judge budget (tokens or currency) was spent."""

DECISION_OVERFLOW: Final = "overflow"
"""Picked, but the scoring queue was full; exported at once, unscored."""

DECISION_TIMEOUT: Final = "timeout"
"""Scoring outlived the hold deadline; exported unscored, late scores go on a carrier span."""

DECISION_ERROR: Final = "error"
"""Scoring failed as a whole (judge down, ...); ``error.type`` says why."""

DECISION_NOT_SCORED: Final = "not_scored"
"""Nothing to score, and not the judge's fault: ``ragtrace.eval.not_scored.reason`` says why (e.g.
``app_error``: the RAG call itself raised). Coverage charts count it apart from ``error``."""

EVAL_NOT_SCORED_REASON: Final = "ragtrace.eval.not_scored.reason"
"""On a span whose decision is ``not_scored``: one of the ``NOT_SCORED_*`` values."""

NOT_SCORED_APP_ERROR: Final = "app_error"
"""The RAG call ended with an exception (span status ERROR) and left no answer to score."""

NOT_SCORED_NO_CONTENT: Final = "no_content"
"""A RAG call traced by another instrumentation whose query, chunks or answer are not on its spans (its own
privacy switch hid them, e.g. ``OPENINFERENCE_HIDE_INPUTS``, ``TRACELOOP_TRACE_CONTENT=false``): never guessed."""

DECISIONS: Final = (
    DECISION_EVALUATED,
    DECISION_NOT_SAMPLED,
    DECISION_THROTTLED,
    DECISION_OVER_BUDGET,
    DECISION_OVERFLOW,
    DECISION_TIMEOUT,
    DECISION_ERROR,
    DECISION_NOT_SCORED,
)
"""Every value ``ragtrace.eval.decision`` can take."""

EVAL_ERROR_TYPE: Final = "ragtrace.eval.error.type"
"""On a span whose decision is ``error``: the class of the failure."""

EVAL_JUDGE: Final = "ragtrace.eval.judge"
"""The judge that scored the span, e.g. ``openai:gpt-4o-mini`` or ``offline:minilm-int8``."""

EVAL_JUDGE_CALLS: Final = "ragtrace.eval.judge.calls"
"""Number of judge calls (chat and embeddings) spent scoring this span."""

EVAL_JUDGE_PROMPT_TOKENS: Final = "ragtrace.eval.judge.prompt_tokens"
"""Prompt (input) tokens the judge spent scoring this span."""

EVAL_JUDGE_COMPLETION_TOKENS: Final = "ragtrace.eval.judge.completion_tokens"
"""Completion (output) tokens the judge spent scoring this span."""

EVAL_SECONDS: Final = "ragtrace.eval.seconds"
"""Wall time, in seconds, spent scoring this span."""

EVAL_CLAIMS: Final = "ragtrace.eval.claims"
"""On a claim metric's ``gen_ai.evaluation.result`` event (span event or log record): its claims' verdicts as a
JSON array of ``{"claim", "verdict", "chunk", "support"}`` (``ragtrace._wire_claims``), bounded; ``claim`` left
out when the span's content was not captured."""

EVAL_CLAIMS_OMITTED: Final = "ragtrace.eval.claims.omitted"
"""Beside ``EVAL_CLAIMS`` when the answer had more claims than the wire carries: how many were left out."""

CLAIM_SUPPORTED: Final = "supported"
"""An ``EVAL_CLAIMS`` verdict: some chunk supports the claim."""

CLAIM_CONTRADICTED: Final = "contradicted"
"""An ``EVAL_CLAIMS`` verdict: no chunk supports the claim and one contradicts it."""

CLAIM_UNSUPPORTED: Final = "unsupported"
"""An ``EVAL_CLAIMS`` verdict: no chunk supports or contradicts the claim (no basis)."""

CLAIM_VERDICTS: Final = (CLAIM_SUPPORTED, CLAIM_CONTRADICTED, CLAIM_UNSUPPORTED)
"""Every verdict ``EVAL_CLAIMS`` can give a claim."""

EVAL_TARGET_SPAN_ID: Final = "ragtrace.eval.target.span_id"
"""On a carrier (EVALUATOR) span: hex id of the RAG span its late scores belong to."""

EVAL_TARGET_TRACE_ID: Final = "ragtrace.eval.target.trace_id"
"""On a carrier (EVALUATOR) span: hex trace id of the RAG span its late scores belong to."""

CARRIER_SPAN_NAME: Final = "ragtrace.evaluation"
"""Name of the carrier span that brings late scores."""

# --------------------------------------------------------------------------------------------------
# OpenTelemetry metric instruments (names and units)
# --------------------------------------------------------------------------------------------------

METRIC_EVALUATION_SCORE: Final = "gen_ai.evaluation.score"
"""Histogram of scores, attribute ``gen_ai.evaluation.name`` (and ``service.name``)."""

METRIC_EVAL_DECISIONS: Final = "ragtrace.eval.decisions"
"""Counter of RAG spans by ``ragtrace.eval.decision``."""

METRIC_JUDGE_CALLS: Final = "ragtrace.judge.calls"
"""Counter of judge calls made by the background scorer."""

METRIC_JUDGE_TOKENS: Final = "ragtrace.judge.tokens"
"""Counter of judge tokens, attribute ``gen_ai.token.type`` = ``input`` | ``output``."""

METRIC_JUDGE_ERRORS: Final = "ragtrace.judge.errors"
"""Counter of metric scores the judge failed to give (dead endpoint, timeout, unparseable reply, ...),
attributes ``error.type`` and ``ragtrace.eval.judge``."""

METRIC_JUDGE_DEGENERATE: Final = "ragtrace.judge.degenerate"
"""Counter of windows in which a judge step's results did not vary (every record got the same value),
attributes ``ragtrace.eval.judge`` and ``ragtrace.judge.step``."""

JUDGE_STEP: Final = "ragtrace.judge.step"
"""Metric attribute naming a judge step (``verify``, ``rate_chunks``, ...)."""

INSTRUMENTATION_SCOPE: Final = "ragtrace"
"""Instrumentation scope name of every tracer and meter ragtrace creates."""
