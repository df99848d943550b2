"""Every name ragtrace puts on the wire: span attributes, event names, metric instruments.

This module is the contract with tracing backends and with the ragtrace collector. No other module
spells one of these strings; they import the constant. Each constant is documented by the string
literal that follows it (tests assert that every public constant has one).

Three vocabularies meet here:

* OpenInference (``openinference.*``, ``input.value``, ``retrieval.documents.*``) so Arize Phoenix
  renders RAG spans natively.
* OpenTelemetry GenAI semantic conventions (``gen_ai.*``) for retrieval and evaluation results.
* ragtrace's own flat score attributes (``ragtrace.eval.<metric>``) so any backend can filter on a
  score with its ordinary span query language, e.g. ``{ span.ragtrace.eval.faithfulness < 0.5 }``.

ragtrace also *reads* the names other instrumentations write (OpenInference's LangChain and LlamaIndex
instrumentations, OpenLLMetry, the GenAI conventions) to score the RAG calls they traced; those names
are here too, marked as read.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------------
# OpenInference span kinds and content attributes
# --------------------------------------------------------------------------------------------------

OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
"""OpenInference span kind: one of the ``SPAN_KIND_*`` values below."""

SPAN_KIND_CHAIN: Final = "CHAIN"
"""Span kind of the RAG entry point (``@ragtrace.rag``)."""

SPAN_KIND_RETRIEVER: Final = "RETRIEVER"
"""Span kind of a retriever (``@ragtrace.retrieve``)."""

SPAN_KIND_LLM: Final = "LLM"
"""Span kind of the answer generation (``@ragtrace.generate``)."""

SPAN_KIND_EVALUATOR: Final = "EVALUATOR"
"""Span kind of the carrier span that brings late scores, linked to the span they score."""

SPAN_KIND_RERANKER: Final = "RERANKER"
"""Read: span kind of a reranker (OpenInference LlamaIndex); its output documents are what the model saw."""

INPUT_VALUE: Final = "input.value"
"""The call's input: the user query on RAG and retriever spans, the prompt/query on LLM spans."""

INPUT_MIME_TYPE: Final = "input.mime_type"
"""MIME type of ``input.value`` (``text/plain`` or ``application/json``)."""

OUTPUT_VALUE: Final = "output.value"
"""The call's output: the answer on RAG and LLM spans."""

OUTPUT_MIME_TYPE: Final = "output.mime_type"
"""MIME type of ``output.value``."""

METADATA: Final = "metadata"
"""OpenInference free-form metadata, a JSON object (from ``ragtrace.record(metadata=...)``)."""

RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
"""Prefix of the OpenInference retrieved documents, flattened as ``retrieval.documents.{i}.document.*``."""

DOCUMENT_ID: Final = "document.id"
"""Suffix: a retrieved document's id (``retrieval.documents.{i}.document.id``)."""

DOCUMENT_CONTENT: Final = "document.content"
"""Suffix: a retrieved document's text, truncated at the capture limit with ``TRUNCATION_MARKER``."""

DOCUMENT_SCORE: Final = "document.score"
"""Suffix: a retrieved document's retrieval score (double)."""

DOCUMENT_METADATA: Final = "document.metadata"
"""Suffix: a retrieved document's metadata, a JSON object string."""

DOCUMENT_METADATA_SOURCE_TYPE: Final = "ragtrace.source_type"
"""Key inside a document's metadata naming the Python type of a chunk ragtrace did not recognise (kept as str())."""


RERANKER_INPUT_DOCUMENTS: Final = "reranker.input_documents"
"""Read: prefix of a reranker's input documents, flattened as ``reranker.input_documents.{i}.document.*``."""

RERANKER_OUTPUT_DOCUMENTS: Final = "reranker.output_documents"
"""Read: prefix of a reranker's output (reranked) documents, ``reranker.output_documents.{i}.document.*``."""

LLM_OUTPUT_MESSAGE_CONTENT: Final = "llm.output_messages.0.message.content"
"""Read: the text of an OpenInference LLM span's first output message (the generated answer)."""

MIME_TYPE_JSON: Final = "application/json"
"""The ``input.mime_type``/``output.mime_type`` value saying the value is JSON text."""

OPENINFERENCE_REDACTED: Final = "__REDACTED__"
"""Read: the value OpenInference writes instead of a text it was told to hide (``OPENINFERENCE_HIDE_*``)."""


def retrieval_document(index: int, field: str, prefix: str = RETRIEVAL_DOCUMENTS) -> str:
    """Return the flattened OpenInference name of a document field, e.g. ``retrieval.documents.0.document.id``.

    ``field`` is one of ``DOCUMENT_ID``, ``DOCUMENT_CONTENT``, ``DOCUMENT_SCORE``, ``DOCUMENT_METADATA``;
    ``prefix`` is ``RETRIEVAL_DOCUMENTS`` or a reranker's ``RERANKER_INPUT_DOCUMENTS``/``RERANKER_OUTPUT_DOCUMENTS``.
    """
    return f"{prefix}.{index}.{field}"


# --------------------------------------------------------------------------------------------------
# OpenTelemetry GenAI semantic conventions
# --------------------------------------------------------------------------------------------------

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""GenAI operation name: ``retrieval`` on retriever spans, ``chat`` on generation spans."""

GEN_AI_OPERATION_RETRIEVAL: Final = "retrieval"
"""Value of ``gen_ai.operation.name`` on retriever spans."""

GEN_AI_OPERATION_CHAT: Final = "chat"
"""Value of ``gen_ai.operation.name`` on generation (LLM) spans."""

GEN_AI_OPERATION_TEXT_COMPLETION: Final = "text_completion"
"""Read: value of ``gen_ai.operation.name`` on a (non-chat) completion span, a generation."""

GEN_AI_OPERATION_GENERATE_CONTENT: Final = "generate_content"
"""Read: value of ``gen_ai.operation.name`` on a multimodal generation span, a generation."""

GEN_AI_OPERATION_INVOKE_WORKFLOW: Final = "invoke_workflow"
"""Read: value of ``gen_ai.operation.name`` on a GenAI workflow span, a RAG root when retrieval ran under it."""

GEN_AI_OPERATION_VECTOR_DB_RETRIEVE: Final = "vector_db_retrieve"
"""Read: value of ``gen_ai.operation.name`` on OpenLLMetry's LangChain retriever spans."""

GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""Read: a GenAI span's input messages, a JSON array of ``{"role", "parts": [{"type", "content"}]}``."""

GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""Read: a GenAI span's output messages, same shape as ``gen_ai.input.messages``."""

GEN_AI_COMPLETION_CONTENT: Final = "gen_ai.completion.0.content"
"""Read: the first completion's text on spans of older OpenLLMetry instrumentations."""

GEN_AI_MESSAGE_ROLE: Final = "role"
"""Key of a message's role (``user``, ``assistant``, ...) in ``gen_ai.*.messages``."""

GEN_AI_MESSAGE_PARTS: Final = "parts"
"""Key of a message's parts in ``gen_ai.*.messages``."""

GEN_AI_PART_TYPE: Final = "type"
"""Key of a part's type in ``gen_ai.*.messages``; text parts have type ``text``."""

GEN_AI_PART_TYPE_TEXT: Final = "text"
"""Value of a text part's type in ``gen_ai.*.messages``."""

GEN_AI_PART_CONTENT: Final = "content"
"""Key of a text part's text in ``gen_ai.*.messages``, and of a document's text in ``gen_ai.retrieval.documents``."""

GEN_AI_ROLE_USER: Final = "user"
"""Role of the user's messages: the query is the last one's text."""

GEN_AI_ROLE_ASSISTANT: Final = "assistant"
"""Role of the model's messages: the answer is the last one's text."""

GEN_AI_RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"
"""The query text a retriever was called with."""

GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
"""The retrieved documents as a JSON array of ``{"id": ..., "score": ...}`` objects (no content)."""

RETRIEVAL_DOCUMENT_JSON_ID: Final = "id"
"""Key of a document's id (string or null) in each object of ``gen_ai.retrieval.documents``."""

RETRIEVAL_DOCUMENT_JSON_SCORE: Final = "score"
"""Key of a document's retrieval score (number or null) in each object of ``gen_ai.retrieval.documents``."""

RETRIEVAL_DOCUMENT_JSON_METADATA: Final = "metadata"
"""Read: key of a document's metadata in JSON documents (``gen_ai.retrieval.documents``, OpenLLMetry's retrievers)."""

GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
"""Identifier of the data source (index, collection) a retriever read from."""

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Model name requested by a generation span or a judge call."""

GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
"""Name of the span event that carries one metric's result (one event per metric)."""

GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
"""Event/metric attribute: the metric's name, e.g. ``faithfulness``."""

GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
"""Event attribute: the metric's score (double). Absent when the score could not be measured."""

GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
"""Event attribute: the score's low-cardinality label, e.g. ``faithful``."""

GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
"""Event attribute: a short human-readable explanation of the score, or why it is absent."""

ERROR_TYPE: Final = "error.type"
"""Event attribute: the class of failure when a metric could not be scored (OTel general attribute)."""

EXCEPTION_MESSAGE: Final = "exception.message"
"""Attribute of the OTel ``exception`` event; ragtrace blanks it when content capture is off and passes it
through ``redact`` otherwise, since an exception message may quote the query or a chunk."""

GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute of the judge token counter: ``input`` or ``output``."""

SERVICE_NAME: Final = "service.name"
"""Resource attribute: the service that emitted the span (OTel general attribute)."""

HTTP_ROUTE: Final = "http.route"
"""Span attribute: the matched HTTP route template (OTel HTTP semconv); the collector groups scores by it."""

# --------------------------------------------------------------------------------------------------
# OpenLLMetry (Traceloop) span attributes, read
# --------------------------------------------------------------------------------------------------

TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
"""Read: OpenLLMetry's span kind: ``workflow`` (the top of a run), ``task``, ``agent``, ``tool``."""

TRACELOOP_KIND_WORKFLOW: Final = "workflow"
"""Read: value of ``traceloop.span.kind`` on the span of a whole run, a RAG root when retrieval ran under it."""

TRACELOOP_KIND_TASK: Final = "task"
"""Read: value of ``traceloop.span.kind`` on a step of a run (a retriever is a task)."""

TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
"""Read: a workflow's or task's input as JSON (``{"inputs": ...}``; ``{"query": ...}`` on retrievers)."""

TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
"""Read: a workflow's or task's output as JSON (``{"outputs": ...}``; ``{"documents": [...]}`` on retrievers)."""

TRACELOOP_JSON_INPUTS: Final = "inputs"
"""Key of the run's input in ``traceloop.entity.input``."""

TRACELOOP_JSON_OUTPUTS: Final = "outputs"
"""Key of the run's output in ``traceloop.entity.output``."""

TRACELOOP_JSON_QUERY: Final = "query"
"""Key of a retriever's query in ``traceloop.entity.input``."""

TRACELOOP_JSON_DOCUMENTS: Final = "documents"
"""Key of a retriever's documents in ``traceloop.entity.output``: ``{"page_content", "metadata"}`` objects."""

TRACELOOP_JSON_ARGS: Final = "args"
"""Key of the positional arguments in what the Traceloop SDK's ``@workflow`` writes to ``traceloop.entity.input``."""

TRACELOOP_JSON_KWARGS: Final = "kwargs"
"""Key of the keyword arguments in what the Traceloop SDK's ``@workflow`` writes to ``traceloop.entity.input``."""

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
