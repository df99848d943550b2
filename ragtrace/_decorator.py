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

import codecs
import functools
import inspect
import json
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast, overload

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import AttributeValue

from ragtrace import _capture, semconv
from ragtrace._capture import RECORDS, CaptureSettings, export_text, prepare_text
from ragtrace._chunks import CapturedChunk, Normalized, normalize_chunks, to_text
from ragtrace._record import Chunk, RagRecord
from ragtrace.environment_variables import ConfigurationError

__all__ = ["generate", "rag", "record", "retrieve"]

_log = logging.getLogger("ragtrace")

F = TypeVar("F", bound=Callable[..., Any])

QuerySpec = str | Callable[..., Any] | None
"""``query=``: the name of an argument, or a callable on the call's arguments, or None (first str)."""

_RAG_KEY = otel_context.create_key("ragtrace.rag_call")
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_Text = tuple[str, bool]  # a prepared text and whether it was cut
_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")
_REORDER_ABOVE = 32  # spans with more attributes than this set their kind and role again, last


# --------------------------------------------------------------------------------------------------
# Decoration-time specification
# --------------------------------------------------------------------------------------------------


class _Spec:
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
        _check_options(name, query, answer, chunks, tracer_provider)
        _capture.get_settings()  # a malformed RAGTRACE_* variable raises here, at decoration time
        self.role = role
        qualname: str = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or role
        self.name = name or qualname.rsplit("<locals>.", 1)[-1]
        self.query = query
        self.query_index = _argument_index(func, query) if isinstance(query, str) else None
        self.answer = answer
        self.chunks = chunks
        self.start_attributes: Mapping[str, AttributeValue] = MappingProxyType(
            {semconv.RAGTRACE_ROLE: role, **start_attributes}
        )
        self.tracer = None if tracer_provider is None else _capture.tracer_from(tracer_provider)

    def start_span(self) -> trace.Span:
        tracer = self.tracer or _capture.get_tracer()
        return tracer.start_span(self.name, attributes=self.start_attributes)


def _check_options(name: object, query: object, answer: object, chunks: object, tracer_provider: object) -> None:
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


def _argument_index(func: Callable[..., Any], name: str) -> int | None:
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


# --------------------------------------------------------------------------------------------------
# The state of one RAG call, shared with everything that runs under it
# --------------------------------------------------------------------------------------------------


class _RagState:
    """What a RAG call has gathered so far; retrievers, generations and ``record()`` add to it."""

    __slots__ = (
        "answer",
        "chunks",
        "generated",
        "lock",
        "metadata",
        "query",
        "reference",
        "retriever_query",
        "settings",
        "total",
    )

    def __init__(self, settings: CaptureSettings) -> None:
        self.settings = settings
        self.lock = threading.Lock()  # retrievers may run in parallel threads or tasks under one call
        self.query: _Text | None = None
        self.answer: _Text | None = None
        self.reference: _Text | None = None
        self.generated: _Text | None = None
        self.retriever_query: _Text | None = None
        self.chunks: list[CapturedChunk] = []
        self.total = 0
        self.metadata: dict[str, Any] = {}

    def add_chunks(self, normalized: Normalized) -> None:
        with self.lock:
            room = self.settings.max_record_chunks - len(self.chunks)
            if room > 0:
                self.chunks.extend(normalized.chunks[:room])
            self.total += normalized.total


def _text(value: object, settings: CaptureSettings) -> _Text | None:
    if value is None:
        return None
    return prepare_text(to_text(value, settings.read_length), settings)


def record(
    *,
    query: object = None,
    chunks: object = None,
    answer: object = None,
    reference: object = None,
    metadata: Mapping[str, Any] | None = None,
) -> bool:
    """Set values of the current RAG call (the innermost ``@ragtrace.rag`` call running here).

    ``query``, ``answer`` and ``reference`` replace what the decorator would have taken from the
    arguments and the return value; ``chunks`` (one chunk or a collection, any shape ``retrieve``
    accepts) are added after the chunks gathered so far; ``metadata`` is merged into the span's
    ``metadata`` JSON. Values go through the same redaction and size bounds as everything captured.

    Returns False, and does nothing, when no recording RAG call is current. Raises ``TypeError``
    when ``metadata`` is not a mapping.
    """
    if metadata is not None and not isinstance(metadata, Mapping):
        raise TypeError(f"ragtrace.record(metadata=...) takes a mapping, not {type(metadata).__name__}")
    state = otel_context.get_value(_RAG_KEY)
    if not isinstance(state, _RagState):
        return False
    settings = state.settings
    prepared = {name: _text(value, settings) for name, value in (("query", query), ("answer", answer))}
    ref = _text(reference, settings)
    normalized = None
    if chunks is not None:
        # Chunks past the bound are only counted (a racy read: add_chunks enforces the bound anyway).
        room = max(settings.max_record_chunks - len(state.chunks), 0)
        normalized = normalize_chunks(chunks, settings, room)
    with state.lock:
        if prepared["query"] is not None:
            state.query = prepared["query"]
        if prepared["answer"] is not None:
            state.answer = prepared["answer"]
        if ref is not None:
            state.reference = ref
        if metadata:
            state.metadata.update({str(k): v for k, v in metadata.items()})
    if normalized is not None:
        state.add_chunks(normalized)
    return True


# --------------------------------------------------------------------------------------------------
# One call
# --------------------------------------------------------------------------------------------------

_warned: set[tuple[int, str]] = set()


def _apply(spec: _Spec, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a user extractor; a failing one yields None (logged once per decorator), never raises."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        key = (id(spec), label)
        if key not in _warned:
            _warned.add(key)
            _log.warning("ragtrace: %s= of %r raised; the value is not captured", label, spec.name, exc_info=True)
        return None


def _json(value: Mapping[str, Any], limit: int) -> tuple[str, bool]:
    try:
        text = json.dumps(dict(value), default=str, ensure_ascii=False)
    except Exception:
        text = json.dumps({str(k): str(v) for k, v in value.items()}, ensure_ascii=False)
    return export_text(text, False, limit)


class _Call:
    """One decorated call in flight: its span, its context, and what it has captured."""

    __slots__ = (
        "ctx",
        "decoder",
        "parent",
        "parts",
        "parts_length",
        "query",
        "recording",
        "settings",
        "span",
        "spec",
        "state",
        "stream_chunks",
        "stream_total",
    )

    def __init__(self, spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.spec = spec
        try:
            span = spec.start_span()
        except Exception:  # a broken SDK or processor must not break the app's call
            _log.warning("ragtrace: could not start a span for %r", spec.name, exc_info=True)
            span = trace.INVALID_SPAN
        self.span = span
        self.recording = span.is_recording()
        self.state: _RagState | None = None
        self.parts: list[str] = []
        self.parts_length = 0
        self.decoder: codecs.IncrementalDecoder | None = None
        self.stream_chunks: list[CapturedChunk] = []
        self.stream_total = 0
        self.parent: _RagState | None = None
        if not self.recording:
            # Still make a valid (sampled-out) span current so children keep its trace and decision.
            ctx = trace.set_span_in_context(span) if span.get_span_context().is_valid else None
            self.ctx = _outside_rag_calls(ctx) if spec.role == semconv.ROLE_RAG else ctx
            return
        current = otel_context.get_current()
        try:
            self.settings = settings = _capture.get_settings()
            parent = current.get(_RAG_KEY)
            if isinstance(parent, _RagState):
                self.parent = parent
            self.query = _extract_query(spec, args, kwargs)
            ctx = trace.set_span_in_context(span, current)
            if spec.role == semconv.ROLE_RAG:
                self.state = _RagState(settings)
                ctx = otel_context.set_value(_RAG_KEY, self.state, ctx)
        except Exception:
            # Capture failed (e.g. RAGTRACE_* made malformed after start-up): the call still runs in
            # its span, which ends without captured values.
            _log.warning("ragtrace: could not capture %r", spec.name, exc_info=True)
            self.recording = False
            self.state = None
            ctx = trace.set_span_in_context(span, current)
            if spec.role == semconv.ROLE_RAG:
                ctx = _outside_rag_calls(ctx)
        self.ctx = ctx

    def enter(self) -> object:
        return None if self.ctx is None else otel_context.attach(self.ctx)

    def exit(self, token: object) -> None:
        if token is not None:
            otel_context.detach(cast(Any, token))

    # -- streams -----------------------------------------------------------------------------------

    def add_item(self, item: object) -> None:
        """Accumulate one yielded item: a chunk (retrievers) or a piece of the answer (others)."""
        if not self.recording:
            return
        try:
            spec = self.spec
            settings = self.settings
            if spec.role == semconv.ROLE_RETRIEVE:
                # Each yielded item is one chunk (a (text, score) pair too); chunks= may turn it into many.
                value = _apply(spec, "chunks", spec.chunks, item) if spec.chunks else [item]
                # Once the bound is reached, items are only counted: not read, not redacted.
                room = max(settings.max_record_chunks - len(self.stream_chunks), 0)
                normalized = normalize_chunks(value, settings, room)
                self.stream_chunks.extend(normalized.chunks)
                self.stream_total += normalized.total
                return
            piece = _apply(spec, "answer", spec.answer, item) if spec.answer else item
            room = settings.read_length - self.parts_length
            if piece is None or room <= 0:
                return
            if spec.answer is None and not isinstance(piece, (str, bytes)):
                return  # e.g. a stream of SDK event objects: pass answer= to read them
            if isinstance(piece, (bytes, bytearray, memoryview)):
                # A byte stream may split a character across pieces: one decoder for the whole stream
                # holds the first bytes until the rest arrives (4 bytes at most a character).
                if self.decoder is None:
                    self.decoder = _UTF8_DECODER(errors="replace")
                text = self.decoder.decode(bytes(piece[: 4 * room]))[:room]
            else:
                text = to_text(piece, room)
            self.parts.append(text)
            self.parts_length += len(text)
        except Exception:
            _log.debug("ragtrace: could not capture a streamed item", exc_info=True)

    # -- ending ------------------------------------------------------------------------------------

    def succeed(self, result: object, streamed: bool = False) -> None:
        """End the span after a normal return (or a stream exhausted or closed early)."""
        try:
            if self.recording:
                self._complete(result, streamed, failed=False)
        except Exception:
            _log.warning("ragtrace: could not capture %r", self.spec.name, exc_info=True)
        finally:
            self._end()

    def fail(self, exc: BaseException) -> None:
        """End the span after ``exc``: status ERROR, an exception event, what was captured so far.

        The status is set first, from a description that cannot fail, so whatever fails after it (an
        exception whose ``__str__`` raises, a broken SDK) still leaves the span marked ERROR.
        """
        try:
            if self.recording:
                message = self._exception_message(exc)
                name = type(exc).__name__
                self.span.set_status(Status(StatusCode.ERROR, f"{name}: {message}" if message else name))
                self._record_exception(exc, message)
                # streamed=True: what a stream yielded before it failed is kept; a plain call has nothing.
                self._complete(None, True, failed=True)
        except Exception:
            _log.warning("ragtrace: could not capture %r", self.spec.name, exc_info=True)
        finally:
            self._end()

    def _exception_message(self, exc: BaseException) -> str:
        """The exception message to export: "" when content capture is off or ``str(exc)`` raises,
        redacted when a hook is set."""
        settings = self.settings
        if not settings.capture_content:
            return ""
        try:
            text = str(exc)
        except Exception:
            return ""
        return text if settings.redact is None else prepare_text(text, settings)[0]

    def _record_exception(self, exc: BaseException, message: str) -> None:
        attributes = {semconv.EXCEPTION_MESSAGE: message}
        try:
            self.span.record_exception(exc, attributes, escaped=True)
            return
        except Exception:  # the SDK reads str(exc) itself, which may raise: record a stand-in instead
            pass
        try:
            self.span.record_exception(_stand_in(exc), attributes, escaped=True)
        except Exception:
            _log.warning("ragtrace: could not record the exception of %r", self.spec.name, exc_info=True)

    def _end(self) -> None:
        try:
            self.span.end()
        except Exception:  # a span processor that raises in on_end must not break the app's call
            _log.warning("ragtrace: ending the span of %r raised", self.spec.name, exc_info=True)

    def _answer(self, result: object, streamed: bool) -> _Text | None:
        if streamed:
            if self.decoder is not None:
                self.parts.append(self.decoder.decode(b"", final=True))  # a character cut off at the end
            return _text("".join(self.parts), self.settings) if self.parts else None
        spec = self.spec
        value = _apply(spec, "answer", spec.answer, result) if spec.answer else result
        if spec.answer is None and not isinstance(value, str):
            return None
        return _text(value, self.settings)

    def _chunks(self, result: object, streamed: bool) -> Normalized | None:
        spec = self.spec
        if streamed:
            return Normalized(tuple(self.stream_chunks), self.stream_total) if self.stream_total else None
        if spec.chunks is not None:
            value = _apply(spec, "chunks", spec.chunks, result)
        elif spec.role == semconv.ROLE_RETRIEVE:
            value = result
        else:
            return None
        return None if value is None else normalize_chunks(value, self.settings)

    def _complete(self, result: object, streamed: bool, failed: bool) -> None:
        settings = self.settings
        attributes: dict[str, AttributeValue] = {}
        query = _text(self.query, settings)
        role = self.spec.role
        if role == semconv.ROLE_RETRIEVE:
            found = self._chunks(result, streamed)
            normalized = found or Normalized((), 0)
            truncated = _documents(attributes, normalized.chunks, settings)
            documents = json.dumps(
                [
                    {
                        semconv.RETRIEVAL_DOCUMENT_JSON_ID: c.chunk.id,
                        semconv.RETRIEVAL_DOCUMENT_JSON_SCORE: c.chunk.score,
                    }
                    for c in normalized.chunks
                ]
            )
            attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS], cut = export_text(
                documents, False, settings.max_attribute_length
            )
            truncated |= cut
            attributes[semconv.RAGTRACE_CHUNK_COUNT] = normalized.total
            truncated |= _content(attributes, semconv.INPUT_VALUE, query, settings)
            if semconv.INPUT_VALUE in attributes:
                attributes[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] = attributes[semconv.INPUT_VALUE]
            parent = self.parent
            if parent is not None:
                with parent.lock:
                    if parent.retriever_query is None:
                        parent.retriever_query = query
                parent.add_chunks(normalized)
        elif role == semconv.ROLE_GENERATE:
            answer = self._answer(result, streamed)
            truncated = _content(attributes, semconv.INPUT_VALUE, query, settings)
            truncated |= _content(attributes, semconv.OUTPUT_VALUE, answer, settings)
            if self.parent is not None and answer is not None:
                with self.parent.lock:
                    self.parent.generated = answer
        else:
            truncated = self._complete_rag(attributes, query, result, streamed, failed)
        attributes[semconv.RAGTRACE_CONTENT_CAPTURED] = settings.capture_content
        attributes[semconv.RAGTRACE_CONTENT_TRUNCATED] = truncated
        if self._attribute_count() + len(attributes) > _REORDER_ABOVE:
            # An SDK whose attribute count limit is reached drops the oldest attributes first, so on a
            # large span the kind and role (what the scoring processor looks for) are set again, last.
            # Small spans skip it: every attribute set costs the SDK a validation.
            attributes.update(self.spec.start_attributes)
        self.span.set_attributes(attributes)

    def _attribute_count(self) -> int:
        """Attributes already on the span: the start attributes plus any the app set itself.

        The OpenTelemetry API cannot read a span's attributes; the SDK's span (and most others) can.
        """
        # try/except, not isinstance(..., Mapping): an ABC check on every call is a measurable share
        # of the decorator's cost (bench/decorator_overhead.py).
        try:
            return len(self.span.attributes)  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            return len(self.spec.start_attributes)

    def _complete_rag(
        self,
        attributes: dict[str, AttributeValue],
        own_query: _Text | None,
        result: object,
        streamed: bool,
        failed: bool,
    ) -> bool:
        state = self.state
        assert state is not None
        settings = self.settings
        own_answer = self._answer(result, streamed)
        own_chunks = self._chunks(result, streamed)
        with state.lock:
            query = state.query or own_query or state.retriever_query
            answer = state.answer or own_answer or state.generated
            reference = state.reference
            if own_chunks is not None:
                chunks, total = own_chunks.chunks, own_chunks.total
            else:
                chunks, total = tuple(state.chunks), state.total
            metadata = dict(state.metadata)
        truncated = _documents(attributes, chunks, settings)
        attributes[semconv.RAGTRACE_CHUNK_COUNT] = total
        if metadata:
            attributes[semconv.METADATA], cut = _json(metadata, settings.max_attribute_length)
            truncated |= cut
        truncated |= _content(attributes, semconv.INPUT_VALUE, query, settings)
        truncated |= _content(attributes, semconv.OUTPUT_VALUE, answer, settings)
        truncated |= _content(attributes, semconv.RAGTRACE_REFERENCE, reference, settings)
        if not failed and RECORDS.active:
            context = self.span.get_span_context()
            limit = settings.max_record_chunk_length
            RECORDS.put(
                context.trace_id,
                context.span_id,
                RagRecord(
                    query="" if query is None else query[0][:limit],
                    chunks=tuple(_record_chunk(c.chunk, limit) for c in chunks),
                    answer="" if answer is None else answer[0][:limit],
                    reference=None if reference is None else reference[0][:limit],
                    metadata=MappingProxyType(metadata) if metadata else _EMPTY,
                ),
            )
        return truncated


def _outside_rag_calls(ctx: otel_context.Context | None) -> otel_context.Context | None:
    """``ctx`` (None: the current context) without the enclosing RAG call, for a RAG call that does not
    record: what runs under it (retrievers, ``record()``) is its own, never added to the outer call.

    Returns ``ctx`` itself when no RAG call encloses it, so an app without one pays one lookup.
    """
    base = otel_context.get_current() if ctx is None else ctx
    if base.get(_RAG_KEY) is None:
        return ctx
    return otel_context.set_value(_RAG_KEY, None, base)


def _stand_in(exc: BaseException) -> BaseException:
    """An exception named like ``exc`` (module, qualified name), with its traceback, whose ``str()`` is "".

    For an exception whose own ``__str__`` raises: the exception event then still says what was
    raised and where, as the SDK formats it for any other exception.
    """
    cls = type(exc)
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__str__": lambda self: ""}
    stand_in: type[Exception] = type(cls.__name__, (Exception,), namespace)
    return stand_in().with_traceback(exc.__traceback__)


def _record_chunk(chunk: Chunk, limit: int) -> Chunk:
    if len(chunk.text) <= limit:
        return chunk
    return Chunk(text=chunk.text[:limit], id=chunk.id, score=chunk.score, metadata=chunk.metadata)


def _content(attributes: dict[str, AttributeValue], key: str, text: _Text | None, settings: CaptureSettings) -> bool:
    """Put an exported text on ``attributes`` when capture is on; return whether it was cut."""
    if text is None or not settings.capture_content:
        return False
    attributes[key], cut = export_text(text[0], text[1], settings.max_attribute_length)
    return cut


def _documents(
    attributes: dict[str, AttributeValue], chunks: tuple[CapturedChunk, ...], settings: CaptureSettings
) -> bool:
    """The OpenInference ``retrieval.documents.{i}.document.*`` attributes; return whether any text was cut."""
    truncated = False
    capture = settings.capture_content
    limit = settings.max_attribute_length
    for index, captured in enumerate(chunks):
        id_name, content_name, score_name, metadata_name = _document_names(index)
        chunk = captured.chunk
        if chunk.id is not None:
            attributes[id_name] = chunk.id
            truncated |= captured.id_truncated
        if chunk.score is not None:
            attributes[score_name] = chunk.score
        if capture:
            text, cut = export_text(chunk.text, captured.truncated, limit)
            attributes[content_name] = text
            truncated |= cut
            if chunk.metadata:
                attributes[metadata_name], cut = _json(chunk.metadata, limit)
                truncated |= cut
    return truncated


@functools.lru_cache(maxsize=1024)
def _document_names(index: int) -> tuple[str, str, str, str]:
    """The four ``retrieval.documents.{index}.document.*`` names, built once per index."""
    return (
        semconv.retrieval_document(index, semconv.DOCUMENT_ID),
        semconv.retrieval_document(index, semconv.DOCUMENT_CONTENT),
        semconv.retrieval_document(index, semconv.DOCUMENT_SCORE),
        semconv.retrieval_document(index, semconv.DOCUMENT_METADATA),
    )


def _extract_query(spec: _Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
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
    return _apply(spec, "query", query, *args, **kwargs)


# --------------------------------------------------------------------------------------------------
# Wrappers, one per function kind
# --------------------------------------------------------------------------------------------------


def _wrap_function(func: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _Call(spec, args, kwargs)
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


def _wrap_coroutine(func: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _Call(spec, args, kwargs)
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


def _wrap_generator(func: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        call = _Call(spec, args, kwargs)
        token = call.enter()
        try:
            inner = func(*args, **kwargs)
        except BaseException as exc:
            call.exit(token)
            call.fail(exc)
            raise
        call.exit(token)
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
                token = call.enter()
                try:
                    inner.close()
                except BaseException as exc:
                    call.exit(token)
                    call.fail(exc)
                    raise
                call.exit(token)
                call.succeed(None, streamed=True)
                raise
            except BaseException as exc:  # thrown in by the consumer: pass it to the body
                thrown = exc

    return wrapper


def _wrap_async_generator(func: Callable[..., Any], spec: _Spec) -> Callable[..., Any]:
    @functools.wraps(func)
    async def wrapper(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        call = _Call(spec, args, kwargs)
        token = call.enter()
        try:
            inner = func(*args, **kwargs)
        except BaseException as exc:
            call.exit(token)
            call.fail(exc)
            raise
        call.exit(token)
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
                call.succeed(None, streamed=True)
                raise
            except BaseException as exc:
                thrown = exc

    return wrapper


def _is_async(func: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(func):
        return True
    # An instance whose __call__ is a coroutine function (functions themselves were checked above).
    return not inspect.isroutine(func) and inspect.iscoroutinefunction(type(func).__call__)


def _wrap(func: Any, spec_of: Callable[[Callable[..., Any]], _Spec]) -> Any:
    if isinstance(func, (classmethod, staticmethod)):
        # Decorator written above @classmethod/@staticmethod: wrap the function, keep the descriptor.
        return type(func)(_wrap(func.__func__, spec_of))
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


# --------------------------------------------------------------------------------------------------
# The public decorators
# --------------------------------------------------------------------------------------------------


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

    _check_options(name, query, answer, chunks, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> _Spec:
        start = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN}
        return _Spec(f, semconv.ROLE_RAG, start, name, query, answer, chunks, tracer_provider)

    return _wrap(func, spec_of) if func is not None else lambda f: _wrap(f, spec_of)


@overload
def retrieve(func: F, /) -> F: ...


@overload
def retrieve(
    *,
    name: str | None = None,
    query: QuerySpec = None,
    chunks: Callable[[Any], Any] | None = None,
    data_source: str | None = None,
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
    tracer_provider: trace.TracerProvider | None = None,
) -> Any:
    """Mark a retriever: its span is OpenInference RETRIEVER with ``gen_ai.operation.name=retrieval``.

    Its chunks (the return value, or ``chunks(return value)``; for a generator, each yielded item)
    go on its span and are added, in order, to the enclosing ``@rag`` call. ``query`` as for ``rag``.
    ``data_source``: the index or collection read, exported as ``gen_ai.data_source.id``.
    """
    if data_source is not None and not isinstance(data_source, str):
        raise ConfigurationError(f"data_source={data_source!r} is not a str: pass the index or collection name")
    _check_options(name, query, None, chunks, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> _Spec:
        start: dict[str, AttributeValue] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
        }
        if data_source:
            start[semconv.GEN_AI_DATA_SOURCE_ID] = data_source
        return _Spec(f, semconv.ROLE_RETRIEVE, start, name, query, None, chunks, tracer_provider)

    return _wrap(func, spec_of) if func is not None else lambda f: _wrap(f, spec_of)


@overload
def generate(func: F, /) -> F: ...


@overload
def generate(
    *,
    name: str | None = None,
    query: QuerySpec = None,
    answer: Callable[[Any], Any] | None = None,
    model: str | None = None,
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
    tracer_provider: trace.TracerProvider | None = None,
) -> Any:
    """Mark the answer generation: its span is OpenInference LLM with ``gen_ai.operation.name=chat``.

    ``query`` gives ``input.value`` (default: the first str argument), ``answer`` gives ``output.value``
    (default: a str return value; for a generator, the str pieces it yields, concatenated). The answer
    becomes the enclosing ``@rag`` call's answer when that call has none of its own. ``model``: exported
    as ``gen_ai.request.model``.
    """
    if model is not None and not isinstance(model, str):
        raise ConfigurationError(f"model={model!r} is not a str: pass the model name")
    _check_options(name, query, answer, None, tracer_provider)

    def spec_of(f: Callable[..., Any]) -> _Spec:
        start: dict[str, AttributeValue] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_LLM,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_CHAT,
        }
        if model:
            start[semconv.GEN_AI_REQUEST_MODEL] = model
        return _Spec(f, semconv.ROLE_GENERATE, start, name, query, answer, None, tracer_provider)

    return _wrap(func, spec_of) if func is not None else lambda f: _wrap(f, spec_of)
