"""OpenInference names: span kinds, input/output, retrieved and reranked documents, evaluations.

Source: https://github.com/Arize-ai/openinference (``openinference-semantic-conventions``); the version
and the exact list ragtrace relies on are in ``tests/conventions/openinference.yaml``.
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

USER_ID: Final = "user.id"
"""Read: OpenInference's end user of the call (the collector's ``meta=user.id:...`` filter finds it)."""

SESSION_ID: Final = "session.id"
"""Read: OpenInference's session (conversation) of the call (``meta=session.id:...``)."""

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

LLM_MODEL_NAME: Final = "llm.model_name"
"""Read: the model of an OpenInference LLM span (the collector's record page prices the app's LLM calls by it)."""

LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
"""Read: prompt tokens of an OpenInference LLM span."""

LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
"""Read: completion tokens of an OpenInference LLM span."""

LLM_PROVIDER: Final = "llm.provider"
"""Read: the hosting provider an OpenInference LLM span's model client called (``openai``, ``azure``, ...);
copied to an enclosing ``@generate``/``@retrieve`` span as ``gen_ai.provider.name`` when it has none."""

LLM_SYSTEM: Final = "llm.system"
"""Read: the AI product of an OpenInference LLM span (``openai``, ``anthropic``, ...); the provider when
``llm.provider`` is absent."""

MIME_TYPE_JSON: Final = "application/json"
"""The ``input.mime_type``/``output.mime_type`` value saying the value is JSON text."""

OPENINFERENCE_REDACTED: Final = "__REDACTED__"
"""Read: the value OpenInference writes instead of a text it was told to hide (``OPENINFERENCE_HIDE_*``)."""


EVALUATIONS: Final = "evaluations"
"""Prefix of the OpenInference evaluations on a scored span, flattened as ``evaluations.{i}.evaluation.*``
(one ``i`` per metric, in the suite's order), so OpenInference-aware backends list them as evaluations."""

EVALUATION_NAME: Final = "evaluation.name"
"""Suffix: an evaluation's name, the metric (``evaluations.{i}.evaluation.name`` = ``faithfulness``)."""

EVALUATION_SCORE: Final = "evaluation.score"
"""Suffix: an evaluation's score (double); absent when the score could not be measured."""

EVALUATION_LABEL: Final = "evaluation.label"
"""Suffix: an evaluation's label, e.g. ``faithful``."""

EVALUATION_EXPLANATION: Final = "evaluation.explanation"
"""Suffix: an evaluation's explanation, or why its score is absent."""

EVALUATION_ANNOTATOR_KIND: Final = "evaluation.annotator_kind"
"""Suffix: who scored: ``ANNOTATOR_KIND_LLM`` (an LLM judge) or ``ANNOTATOR_KIND_CODE`` (the offline judge)."""

ANNOTATOR_KIND_LLM: Final = "LLM"
"""Value of ``evaluation.annotator_kind`` for a score an LLM judge gave (``openai:*``)."""

ANNOTATOR_KIND_CODE: Final = "CODE"
"""Value of ``evaluation.annotator_kind`` for a score computed in process (the offline judge, a fake)."""


def evaluation(index: int, field: str) -> str:
    """Return the flattened OpenInference name of an evaluation field, e.g. ``evaluations.0.evaluation.score``.

    ``field`` is one of the ``EVALUATION_*`` suffixes.
    """
    return f"{EVALUATIONS}.{index}.{field}"


def retrieval_document(index: int, field: str, prefix: str = RETRIEVAL_DOCUMENTS) -> str:
    """Return the flattened OpenInference name of a document field, e.g. ``retrieval.documents.0.document.id``.

    ``field`` is one of ``DOCUMENT_ID``, ``DOCUMENT_CONTENT``, ``DOCUMENT_SCORE``, ``DOCUMENT_METADATA``;
    ``prefix`` is ``RETRIEVAL_DOCUMENTS`` or a reranker's ``RERANKER_INPUT_DOCUMENTS``/``RERANKER_OUTPUT_DOCUMENTS``.
    """
    return f"{prefix}.{index}.{field}"
