"""The decorators that turn a RAG call into a trace: ``rag``, ``retrieve``, ``generate`` and ``record``.

Each decorated call is one span made with the OpenTelemetry API only (no SDK import), from the tracer
of ``ragtrace._capture`` (or the decorator's own ``tracer_provider=``). When that span does not
record (no SDK configured, or sampled out) the call runs with nothing else done.

A RAG call keeps a small mutable state in the OpenTelemetry context, so everything that runs under
it (retrievers, generations, ``record()``), in any task or thread the context reaches, adds to it.
When the RAG span ends, its query, chunks and answer go on the span (bounded, redacted, or omitted
when content capture is off) and, when a scoring processor holds ``RECORDS``, a ``RagRecord`` is put
there just before ``span.end()`` so the processor's ``on_end`` can take it.

Wrapped functions behave exactly as before: same return value, same exception object, same signature.
The span is the current span only while the function's body runs, never across a ``yield``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from ragtrace import semconv
from ragtrace._capture._spec import QuerySpec, Spec, check_options, check_provider
from ragtrace._capture._state import record
from ragtrace._capture._wrappers import wrap
from ragtrace._exceptions import ConfigurationError

__all__ = ["generate", "rag", "record", "retrieve"]

F = TypeVar("F", bound=Callable[..., Any])


@overload
def rag(func: F, /) -> F: ...


@overload
def rag(
    *,
    name: str | None = None,
    query: QuerySpec = None,
    answer: Callable[[Any], Any] | None = None,
    chunks: Callable[[Any], Any] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Callable[[F], F]: ...


def rag(
    func: Any = None,
    /,
    *,
    name: str | None = None,
    query: QuerySpec = None,
    answer: Callable[[Any], Any] | None = None,
    chunks: Callable[[Any], Any] | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Any:
    """Mark the RAG entry point: its span (OpenInference CHAIN, ``ragtrace.role=rag``) is the one scored.

    ``query``: the name of the argument holding the user query, or a callable on the call's
    arguments (default: the first str argument). ``answer``: a callable on the return value (default:
    a str return value; for a generator, on each yielded item, the pieces concatenated; else the
    answer of the last ``@generate`` call under it). ``chunks``: a callable on the return value giving
    the chunks, which then replace those gathered from the ``@retrieve`` calls under it.
    ``ragtrace.record(...)`` inside the call wins over all of these. ``name``: the span name (default:
    the function's qualified name). ``tracer_provider``: use this provider instead of the one set
    with ``ragtrace._capture.set_tracer_provider`` (default: the global provider).

    Works bare (``@rag``) or with arguments (``@rag(name=...)``); misconfiguration raises
    ``ConfigurationError`` at decoration time.
    """

    check_options(name, query, answer, chunks, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> Spec:
        start = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN}
        return Spec(f, semconv.ROLE_RAG, start, name, query, answer, chunks, tracer_provider)

    return wrap(func, spec_of) if func is not None else lambda f: wrap(f, spec_of)


@overload
def retrieve(func: F, /) -> F: ...


@overload
def retrieve(
    *,
    name: str | None = None,
    query: QuerySpec = None,
    chunks: Callable[[Any], Any] | None = None,
    data_source: str | None = None,
    top_k: int | None = None,
    provider: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Callable[[F], F]: ...


def retrieve(
    func: Any = None,
    /,
    *,
    name: str | None = None,
    query: QuerySpec = None,
    chunks: Callable[[Any], Any] | None = None,
    data_source: str | None = None,
    top_k: int | None = None,
    provider: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Any:
    """Mark a retriever: its span is OpenInference RETRIEVER with ``gen_ai.operation.name=retrieval``.

    Its chunks (the return value, or ``chunks(return value)``; for a generator, each yielded item)
    go on its span and are added, in order, to the enclosing ``@rag`` call. ``query`` as for ``rag``.
    ``data_source``: the index or collection read, exported as ``gen_ai.data_source.id``. ``top_k``: how
    many documents the retriever asks for, exported as ``gen_ai.retrieval.top_k``. ``provider``: the GenAI
    provider that retrieves (``openai`` for its vector stores, ...), exported as ``gen_ai.provider.name``;
    leave it out for a retriever of your own (a local index, a database).

    The span keeps kind INTERNAL and the function's name (see docs/backends.md, "Span kinds and names").
    """
    if data_source is not None and not isinstance(data_source, str):
        raise ConfigurationError(f"data_source={data_source!r} is not a str: pass the index or collection name")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1):
        raise ConfigurationError(f"top_k={top_k!r} is invalid: pass a whole number >= 1")
    check_provider(provider)
    check_options(name, query, None, chunks, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> Spec:
        start: dict[str, AttributeValue] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
        }
        if data_source:
            start[semconv.GEN_AI_DATA_SOURCE_ID] = data_source
        if top_k is not None:
            start[semconv.GEN_AI_RETRIEVAL_TOP_K] = top_k
        if provider:
            start[semconv.GEN_AI_PROVIDER_NAME] = provider
        return Spec(f, semconv.ROLE_RETRIEVE, start, name, query, None, chunks, tracer_provider)

    return wrap(func, spec_of) if func is not None else lambda f: wrap(f, spec_of)


@overload
def generate(func: F, /) -> F: ...


@overload
def generate(
    *,
    name: str | None = None,
    query: QuerySpec = None,
    answer: Callable[[Any], Any] | None = None,
    model: str | None = None,
    provider: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Callable[[F], F]: ...


def generate(
    func: Any = None,
    /,
    *,
    name: str | None = None,
    query: QuerySpec = None,
    answer: Callable[[Any], Any] | None = None,
    model: str | None = None,
    provider: str | None = None,
    tracer_provider: trace.TracerProvider | None = None,
) -> Any:
    """Mark the answer generation: its span is OpenInference LLM with ``gen_ai.operation.name=chat``.

    ``query`` gives ``input.value`` (default: the first str argument), ``answer`` gives ``output.value``
    (default: a str return value; for a generator, the str pieces it yields, concatenated). The answer
    becomes the enclosing ``@rag`` call's answer when that call has none of its own. ``model``: exported
    as ``gen_ai.request.model``. ``provider``: the GenAI provider the model is served by (``openai``,
    ``anthropic``, ``aws.bedrock``, ...; the conventions' well-known values), exported as
    ``gen_ai.provider.name``, which the conventions require on inference spans: pass it.

    The span keeps kind INTERNAL and the function's name (see docs/backends.md, "Span kinds and names").
    """
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model={model!r} is not a str: pass the model name")
    check_provider(provider)
    check_options(name, query, answer, None, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> Spec:
        start: dict[str, AttributeValue] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_LLM,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_CHAT,
        }
        if model:
            start[semconv.GEN_AI_REQUEST_MODEL] = model
        if provider:
            start[semconv.GEN_AI_PROVIDER_NAME] = provider
        return Spec(f, semconv.ROLE_GENERATE, start, name, query, answer, None, tracer_provider)

    return wrap(func, spec_of) if func is not None else lambda f: wrap(f, spec_of)
