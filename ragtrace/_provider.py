"""``gen_ai.provider.name`` from the model client: a ``@generate`` (or ``@retrieve``) span given no
``provider=`` takes the provider of the first model-client span started beneath it.

The conventions require ``gen_ai.provider.name`` on inference spans. A user's ``@generate`` function
usually calls a model client that an instrumentation traces (OpenInference's ``llm.provider`` /
``llm.system``, OpenLLMetry's ``gen_ai.system``, the GenAI instrumentations' ``gen_ai.provider.name``), and
those spans start while the decorated span is still open, as its children: ``ScoringSpanProcessor.on_start``
copies the child's provider onto the parent then. Only ragtrace's own generation and retrieval spans are
touched, and only when they have no provider yet (an explicit ``provider=`` wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace

from ragtrace import semconv

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

__all__ = ["adopt_provider"]

_SOURCES = (semconv.GEN_AI_PROVIDER_NAME, semconv.GEN_AI_SYSTEM, semconv.LLM_PROVIDER, semconv.LLM_SYSTEM)
"""Where a model-client span names its provider, the conventions' own name first."""
_ROLES = frozenset({semconv.ROLE_GENERATE, semconv.ROLE_RETRIEVE})


def adopt_provider(span: Span, parent_context: Context | None) -> None:
    """When ``span`` (just started) names a provider and its parent is a ragtrace generation or retrieval
    span still open without one, set it on the parent. O(1); never raises."""
    attributes = span.attributes
    if not attributes:
        return
    provider = next((v for key in _SOURCES if isinstance(v := attributes.get(key), str) and v), None)
    if provider is None:
        return
    parent = trace.get_current_span(parent_context)
    held = getattr(parent, "attributes", None)
    if (
        held is None
        or held.get(semconv.RAGTRACE_ROLE) not in _ROLES
        or semconv.GEN_AI_PROVIDER_NAME in held
        or not parent.is_recording()
    ):
        return
    parent.set_attribute(semconv.GEN_AI_PROVIDER_NAME, provider.lower())
