"""Which TracerProvider the decorators use, without touching the OpenTelemetry global one.

``configure()`` and tests inject theirs with ``set_tracer_provider``; with none set the decorators use
the global provider through the API's proxy tracer.
"""

from __future__ import annotations

import threading

from opentelemetry import trace

from ragtrace import semconv
from ragtrace._exceptions import ConfigurationError
from ragtrace._fork import at_fork_in_child


class _TracerState:
    __slots__ = ("provider", "tracer")

    def __init__(self) -> None:
        self.provider: trace.TracerProvider | None = None
        self.tracer: trace.Tracer | None = None


_tracer_state = _TracerState()
_tracer_lock = threading.Lock()


def tracer_from(provider: trace.TracerProvider | None) -> trace.Tracer:
    """A ragtrace tracer from ``provider``, or from the global provider when ``None``.

    With the global provider this is the OTel API's proxy tracer, which follows a provider set later.
    """
    if provider is None:
        return trace.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    return provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)


def set_tracer_provider(provider: trace.TracerProvider | None) -> None:
    """Point every decorator without its own ``tracer_provider=`` at ``provider``; ``None``: the global one.

    Does not touch the OpenTelemetry global provider, so ``configure()`` and tests can inject theirs.
    """
    if provider is not None and not isinstance(provider, trace.TracerProvider):
        raise ConfigurationError(
            f"set_tracer_provider() takes an opentelemetry TracerProvider, not {type(provider).__name__}"
        )
    tracer = tracer_from(provider)
    with _tracer_lock:
        _tracer_state.provider = provider
        _tracer_state.tracer = tracer


def get_tracer_provider() -> trace.TracerProvider | None:
    """The provider set with ``set_tracer_provider``, or ``None`` when the decorators use the global one."""
    return _tracer_state.provider


def get_tracer() -> trace.Tracer:
    """The tracer of the decorators that have no ``tracer_provider=`` of their own."""
    tracer = _tracer_state.tracer
    if tracer is None:
        with _tracer_lock:
            if _tracer_state.tracer is None:
                _tracer_state.tracer = tracer_from(None)
            tracer = _tracer_state.tracer
    return tracer


@at_fork_in_child
def _renew_lock_in_child() -> None:
    # A lock another thread held when the app forked would stay held forever in the child.
    global _tracer_lock
    _tracer_lock = threading.Lock()
