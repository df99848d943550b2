"""OpenTelemetry GenAI semantic-convention names (and the general OTel attributes ragtrace uses).

Source: https://github.com/open-telemetry/semantic-conventions-genai; the version and the exact list
ragtrace relies on are in ``tests/conventions/genai.yaml``.
"""

from __future__ import annotations

from typing import Final

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
"""The retrieved documents as a JSON array of ``{"id": ..., "score": ...}`` objects (no content), in rank
order; always valid JSON within the export bound: the lowest-ranked documents are left out to fit."""

RETRIEVAL_DOCUMENT_JSON_ID: Final = "id"
"""Key of a document's id (a string; left out when the chunk has none) in ``gen_ai.retrieval.documents``."""

RETRIEVAL_DOCUMENT_JSON_SCORE: Final = "score"
"""Key of a document's retrieval score (a finite number; left out when none) in ``gen_ai.retrieval.documents``."""

RETRIEVAL_DOCUMENT_JSON_METADATA: Final = "metadata"
"""Read: key of a document's metadata in JSON documents (``gen_ai.retrieval.documents``, OpenLLMetry's retrievers)."""

GEN_AI_RETRIEVAL_TOP_K: Final = "gen_ai.retrieval.top_k"
"""The number of documents a retriever was asked for (``@retrieve(top_k=...)``), an int."""

GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
"""Identifier of the data source (index, collection) a retriever read from."""

GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
"""Model name requested by a generation span or a judge call."""

GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
"""Read: the model that answered a model-client span (the collector's record page prices the app's LLM calls
by it, else by ``gen_ai.request.model``)."""

GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
"""Read: prompt tokens of a model-client span (the app's own LLM calls, on the collector's record page)."""

GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
"""Read: completion tokens of a model-client span."""

EVENT_NAME: Final = "event.name"
"""Read: the event name of a log record as an attribute, where SDKs older than the ``event_name`` field put
it (the collector reads ``gen_ai.evaluation.result`` records either way)."""

GEN_AI_SYSTEM: Final = "gen_ai.system"
"""Read: the GenAI conventions' former name of ``gen_ai.provider.name`` (OpenLLMetry and older
instrumentations still write it on their model-client spans)."""

GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
"""The GenAI provider (``openai``, ``anthropic``, ``aws.bedrock``, ...) of a generation or retrieval span,
from ``@generate(provider=...)``/``@retrieve(provider=...)``, else from the model client's span beneath it
(``ragtrace.scoring.provider``); the conventions list the well-known values."""

GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
"""Name of the event that carries one metric's result (one per metric): a span event on the scored span
and/or an OpenTelemetry log record with the scored span's context (``RAGTRACE_EVALUATION_*``)."""

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

EXCEPTION_EVENT: Final = "exception"
"""Span event of a call that raised (OTel exceptions semconv), with the four ``exception.*`` attributes."""

EXCEPTION_TYPE: Final = "exception.type"
"""Attribute of the OTel ``exception`` event: the exception's ``module.QualName`` (the bare name for builtins)."""

EXCEPTION_STACKTRACE: Final = "exception.stacktrace"
"""Attribute of the OTel ``exception`` event: the frames, and every exception text in it (the message, chained
exceptions' messages, notes) blanked or redacted as ``exception.message`` is."""

EXCEPTION_ESCAPED: Final = "exception.escaped"
"""Attribute of the OTel ``exception`` event: ``True``, the exception left the decorated call."""

GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""Metric attribute of the judge token counter: ``input`` or ``output``."""

SERVICE_NAME: Final = "service.name"
"""Resource attribute: the service that emitted the span (OTel general attribute)."""

HTTP_ROUTE: Final = "http.route"
"""Span attribute: the matched HTTP route template (OTel HTTP semconv); the collector groups scores by it."""
