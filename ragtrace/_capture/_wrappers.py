"""One wrapper per kind of function (plain, coroutine, generator, async generator) and ``wrap`` that picks it.

Wrapped functions behave exactly as before: same return value, same exception object, same signature.
The span is the current span only while the function's body runs, never across a ``yield``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from opentelemetry import context as otel_context

from ragtrace._capture._call import Call
from ragtrace._capture._spec import Spec
from ragtrace._exceptions import ConfigurationError


def _wrap_function(func: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = Call(spec, args, kwargs)
        if call.ctx is None:  # no SDK, or an invalid span: nothing to record or propagate
            return func(*args, **kwargs)
        token = otel_context.attach(call.ctx)
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)
            call.fail(exc)
            raise
        otel_context.detach(token)
        call.succeed(result)
        return result

    return wrapper


def _wrap_coroutine(func: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = Call(spec, args, kwargs)
        if call.ctx is None:
            return await func(*args, **kwargs)
        token = otel_context.attach(call.ctx)
        try:
            result = await func(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)
            call.fail(exc)
            raise
        otel_context.detach(token)
        call.succeed(result)
        return result

    return wrapper


def _wrap_generator(func: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        call = Call(spec, args, kwargs)
        inner = call.run(func, *args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            # The span is current only while the body runs, never across our own yield.
            token = call.enter()
            try:
                item = inner.send(sent) if thrown is None else inner.throw(thrown)
            except StopIteration as stop:
                call.exit(token)
                call.succeed(None, streamed=True)
                return stop.value
            except BaseException as exc:
                call.exit(token)
                call.fail(exc)
                raise
            call.exit(token)
            thrown = None
            call.add_item(item)
            try:
                sent = yield item
            except GeneratorExit:
                # The consumer stopped reading: the answer is what was yielded so far.
                call.run(inner.close)
                call.succeed(None, streamed=True, partial=True)
                raise
            except BaseException as exc:  # thrown in by the consumer: pass it to the body
                thrown = exc

    return wrapper


def _wrap_async_generator(func: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        call = Call(spec, args, kwargs)
        inner = call.run(func, *args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            token = call.enter()
            try:
                item = await (inner.asend(sent) if thrown is None else inner.athrow(thrown))
            except StopAsyncIteration:
                call.exit(token)
                call.succeed(None, streamed=True)
                return
            except BaseException as exc:
                call.exit(token)
                call.fail(exc)
                raise
            call.exit(token)
            thrown = None
            call.add_item(item)
            try:
                sent = yield item
            except GeneratorExit:
                token = call.enter()
                try:
                    await inner.aclose()
                except BaseException as exc:
                    call.exit(token)
                    call.fail(exc)
                    raise
                call.exit(token)
                call.succeed(None, streamed=True, partial=True)
                raise
            except BaseException as exc:
                thrown = exc

    return wrapper


def _is_async(func: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    # An instance whose __call__ is a coroutine function (functions themselves were checked above).
    return not inspect.isroutine(func) and inspect.iscoroutinefunction(type(func).__call__)


def wrap(func: Any, spec_of: Callable[[Callable[..., Any]], Spec]) -> Any:
    """``func`` wrapped by the wrapper of its kind, with the ``Spec`` ``spec_of`` checks once, now."""
    if isinstance(func, (classmethod, staticmethod)):
        # Decorator written above @classmethod/@staticmethod: wrap the function, keep the descriptor.
        return type(func)(wrap(func.__func__, spec_of))
    if not callable(func):
        raise ConfigurationError(f"ragtrace decorators wrap functions, not {type(func).__name__}")
    spec = spec_of(func)
    if inspect.isasyncgenfunction(func):
        return _wrap_async_generator(func, spec)
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(func, spec)
    if _is_async(func):
        return _wrap_coroutine(func, spec)
    return _wrap_function(func, spec)
