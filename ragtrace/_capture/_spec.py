"""What one decorator application says (``Spec``): checked once at decoration time, read on every call."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

from ragtrace import _capture, semconv
from ragtrace._exceptions import ConfigurationError

_log = logging.getLogger("ragtrace")

QuerySpec = str | Callable[..., Any] | None
"""``query=``: the name of an argument, or a callable on the call's arguments, or None (first str)."""


class Spec:
    """What one decorator application says: checked once, read on every call."""

    __slots__ = ("answer", "chunks", "name", "query", "query_index", "role", "start_attributes", "tracer")

    def __init__(
        self,
        func: Callable[..., Any],
        role: str,
        start_attributes: Mapping[str, AttributeValue],
        name: str | None,
        query: QuerySpec,
        answer: Callable[[Any], Any] | None,
        chunks: Callable[[Any], Any] | None,
        tracer_provider: trace.TracerProvider | None,
    ) -> None:
        check_options(name, query, answer, chunks, tracer_provider)
        _capture.get_settings()  # a malformed RAGTRACE_* variable raises here, at decoration time
        self.role = role
        qualname: str = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or role
        self.name = name or qualname.rsplit("<locals>.", 1)[-1]
        self.query = query
        self.query_index = argument_index(func, query) if isinstance(query, str) else None
        self.answer = answer
        self.chunks = chunks
        self.start_attributes: Mapping[str, AttributeValue] = MappingProxyType(
            {semconv.RAGTRACE_ROLE: role, **start_attributes}
        )
        self.tracer = None if tracer_provider is None else _capture.tracer_from(tracer_provider)

    def start_span(self) -> trace.Span:
        tracer = self.tracer or _capture.get_tracer()
        return tracer.start_span(self.name, attributes=self.start_attributes)


def check_options(name: object, query: object, answer: object, chunks: object, tracer_provider: object) -> None:
    """Raise ConfigurationError, naming the fix, for a decorator argument of the wrong kind."""
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigurationError(f"name={name!r} is not a span name: pass a non-empty str")
    for label, value in (("answer", answer), ("chunks", chunks)):
        if value is not None and not callable(value):
            raise ConfigurationError(f"{label}={value!r} is not callable: pass a function of the return value")
    if query is not None and not isinstance(query, str) and not callable(query):
        raise ConfigurationError(
            f"query={query!r} is neither an argument name nor a callable: pass e.g. query='question'"
        )
    if tracer_provider is not None and not isinstance(tracer_provider, trace.TracerProvider):
        raise ConfigurationError(f"tracer_provider={tracer_provider!r} is not an opentelemetry TracerProvider")


def check_provider(provider: object) -> None:
    """Raise ConfigurationError for a ``provider=`` that is not a non-empty str (``gen_ai.provider.name``)."""
    if provider is not None and (not isinstance(provider, str) or not provider):
        raise ConfigurationError(f"provider={provider!r} is not a provider name: pass e.g. 'openai' or 'anthropic'")


def argument_index(func: Callable[..., Any], name: str) -> int | None:
    """Position of argument ``name`` (None: keyword-only or **kwargs); ConfigurationError if unknown."""
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    for index, parameter in enumerate(parameters):
        if parameter.name == name:
            positional = parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
            return index if positional else None
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return None
    known = [p.name for p in parameters]
    where = getattr(func, "__qualname__", None) or repr(func)
    raise ConfigurationError(f"query={name!r} names no argument of {where}: use one of {known}")


def extract_query(spec: Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
    query = spec.query
    if query is None:
        for value in args:
            if isinstance(value, str):
                return value
        for value in kwargs.values():
            if isinstance(value, str):
                return value
        return None
    if isinstance(query, str):
        index = spec.query_index
        if index is not None and index < len(args):
            return args[index]
        return kwargs.get(query)
    return apply_extractor(spec, "query", query, *args, **kwargs)


_warned: set[tuple[int, str]] = set()


def apply_extractor(spec: Spec, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a user extractor; a failing one yields None (logged once per decorator), never raises."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        key = (id(spec), label)
        if key not in _warned:
            _warned.add(key)
            _log.warning("ragtrace: %s= of %r raised; the value is not captured", label, spec.name, exc_info=True)
        return None
