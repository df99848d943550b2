"""``gen_ai.provider.name`` from the model client: a ``@generate`` (or ``@retrieve``) span given no
``provider=`` takes the provider of the first model-client span started beneath it.

The conventions require ``gen_ai.provider.name`` on inference spans. A user's ``@generate`` function
usually calls a model client that an instrumentation traces (OpenInference's ``llm.provider`` /
``llm.system``, OpenLLMetry's ``gen_ai.system``, the GenAI instrumentations' ``gen_ai.provider.name``), and
those spans start while the decorated span is still open, beneath it: as its children, or deeper when a
framework's own spans (a LangChain chain, a LlamaIndex query) stand between. ``ScoringSpanProcessor``
calls ``ProviderAdoption.start`` from ``on_start``, which copies the provider onto the nearest open
ragtrace generation or retrieval span above. Only those spans are touched, and only when they have no
provider yet (an explicit ``provider=`` wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import trace

from ragtrace import semconv

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span

__all__ = ["ProviderAdoption"]

_SOURCES = (semconv.GEN_AI_PROVIDER_NAME, semconv.GEN_AI_SYSTEM, semconv.LLM_PROVIDER, semconv.LLM_SYSTEM)
"""Where a model-client span names its provider, the conventions' own name first."""
_ROLES = frozenset({semconv.ROLE_GENERATE, semconv.ROLE_RETRIEVE})
_MAX_OPEN = 10_000
"""Open spans remembered beneath generation spans. Spans that never end would otherwise grow the map;
past this many, deeper spans are not followed (their provider is not adopted), nothing else changes."""


class ProviderAdoption:
    """Which open ragtrace generation or retrieval span without a provider each open span stands beneath,
    so that a model-client span however deep names the provider of the nearest one.

    ``start`` and ``end`` are O(1), never raise, and hold only spans that started beneath such a span and
    have not ended (a dict, whose single operations the GIL keeps whole across threads).
    """

    def __init__(self) -> None:
        self._beneath: dict[int, trace.Span] = {}
        """span id of an open span -> the nearest open ragtrace span above it still wanting a provider."""

    def start(self, span: Span, parent_context: Context | None) -> None:
        """``span`` just started: set the provider it names on the ragtrace span above it, or remember
        that span for ``span``'s own descendants."""
        if _role(span) in _ROLES:
            return  # its provider is its own (given, or adopted from beneath it), not its caller's
        parent = trace.get_current_span(parent_context)
        if _role(parent) in _ROLES:
            # The nearest generation or retrieval span is the parent itself: it takes the provider, or, when it
            # has one already, nothing above it does (a retrieval's embedder does not name its caller's model).
            target: trace.Span | None = parent
        else:
            target = self._beneath.get(parent.get_span_context().span_id)
        if target is None or not _wants_provider(target):  # it has a provider, or it ended
            return
        attributes = span.attributes or {}
        provider = next((v for key in _SOURCES if isinstance(v := attributes.get(key), str) and v), None)
        if provider is not None:
            target.set_attribute(semconv.GEN_AI_PROVIDER_NAME, provider.lower())
        elif len(self._beneath) < _MAX_OPEN:
            self._beneath[span.get_span_context().span_id] = target

    def end(self, span: ReadableSpan) -> None:
        """``span`` ended: forget it."""
        context = span.context
        if context is not None and self._beneath:
            self._beneath.pop(context.span_id, None)


def _role(span: object) -> object:
    """The ``ragtrace.role`` of a span (None for a span without attributes, or not ragtrace's)."""
    held = getattr(span, "attributes", None)
    return held.get(semconv.RAGTRACE_ROLE) if held is not None else None


def _wants_provider(span: object) -> bool:
    """True for a recording ragtrace generation or retrieval span without ``gen_ai.provider.name``."""
    held = getattr(span, "attributes", None)
    return (
        held is not None
        and held.get(semconv.RAGTRACE_ROLE) in _ROLES
        and semconv.GEN_AI_PROVIDER_NAME not in held
        and getattr(span, "is_recording", lambda: False)()
    )
