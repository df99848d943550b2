"""OpenLLMetry (Traceloop) names ragtrace reads to score RAG calls that OpenLLMetry traced."""

from __future__ import annotations

from typing import Final

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
