"""One decorated call in flight (``Call``): its span and context, what it captures, and how it ends.

The span starts in ``Call(...)``; ``add_item`` gathers a stream's items; ``succeed``/``fail`` put what was
captured on the span (``_attributes.complete``) and end it. Nothing here raises into the app's call.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Callable
from typing import Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from ragtrace import _capture, semconv
from ragtrace._capture._attributes import complete
from ragtrace._capture._spec import Spec, apply_extractor, extract_query
from ragtrace._capture._stacktrace import exception_attributes, safe_str
from ragtrace._capture._state import RAG_KEY, RagState, Text, outside_rag_calls, prepare_value
from ragtrace._capture._text import prepare_text
from ragtrace._chunks import CapturedChunk, Normalized, normalize_chunks, to_text

_log = logging.getLogger("ragtrace")

_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")


class Call:
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

    def __init__(self, spec: Spec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.spec = spec
        try:
            span = spec.start_span()
        except Exception:  # a broken SDK or processor must not break the app's call
            _log.warning("ragtrace: could not start a span for %r", spec.name, exc_info=True)
            span = trace.INVALID_SPAN
        self.span = span
        self.recording = span.is_recording()
        self.state: RagState | None = None
        self.parts: list[str] = []
        self.parts_length = 0
        self.decoder: codecs.IncrementalDecoder | None = None
        self.stream_chunks: list[CapturedChunk] = []
        self.stream_total = 0
        self.parent: RagState | None = None
        if not self.recording:
            # Still make a valid (sampled-out) span current so children keep its trace and decision.
            ctx = trace.set_span_in_context(span) if span.get_span_context().is_valid else None
            self.ctx = outside_rag_calls(ctx) if spec.role == semconv.ROLE_RAG else ctx
            return
        current = otel_context.get_current()
        try:
            self.settings = settings = _capture.get_settings()
            parent = current.get(RAG_KEY)
            if isinstance(parent, RagState):
                self.parent = parent
            self.query = extract_query(spec, args, kwargs)
            ctx = trace.set_span_in_context(span, current)
            if spec.role == semconv.ROLE_RAG:
                self.state = RagState(settings)
                ctx = otel_context.set_value(RAG_KEY, self.state, ctx)
        except Exception:
            # Capture failed (e.g. RAGTRACE_* made malformed after start-up): the call still runs in
            # its span, which ends without captured values.
            _log.warning("ragtrace: could not capture %r", spec.name, exc_info=True)
            self.recording = False
            self.state = None
            ctx = trace.set_span_in_context(span, current)
            if spec.role == semconv.ROLE_RAG:
                ctx = outside_rag_calls(ctx)
        self.ctx = ctx

    def enter(self) -> object:
        return None if self.ctx is None else otel_context.attach(self.ctx)

    def exit(self, token: object) -> None:
        if token is not None:
            otel_context.detach(cast(Any, token))

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with this call's span current; an exception ends the span as failed and
        propagates (what a wrapper does around each piece of the app's code it runs)."""
        token = self.enter()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            self.exit(token)
            self.fail(exc)
            raise
        self.exit(token)
        return result

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
                value = apply_extractor(spec, "chunks", spec.chunks, item) if spec.chunks else [item]
                # Once the bound is reached, items are only counted: not read, not redacted.
                room = max(settings.max_record_chunks - len(self.stream_chunks), 0)
                normalized = normalize_chunks(value, settings, room)
                self.stream_chunks.extend(normalized.chunks)
                self.stream_total += normalized.total
                return
            piece = apply_extractor(spec, "answer", spec.answer, item) if spec.answer else item
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

    def succeed(self, result: object, streamed: bool = False, partial: bool = False) -> None:
        """End the span after a normal return, a stream exhausted, or (``partial``) a stream its
        consumer closed early."""
        try:
            if self.recording:
                complete(self, result, streamed, failed=False, partial=partial)
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
                complete(self, None, True, failed=True)
        except Exception:
            _log.warning("ragtrace: could not capture %r", self.spec.name, exc_info=True)
        finally:
            self._end()

    def _exception_text(self, raw: str) -> str:
        """An exception's text as it may be exported: "" when content capture is off, redacted when a
        hook is set (the message, and every text in the stacktrace, go through here)."""
        settings = self.settings
        if not settings.capture_content:
            return ""
        return raw if settings.redact is None else prepare_text(raw, settings)[0]

    def _exception_message(self, exc: BaseException) -> str:
        """The exception message to export: ``_exception_text`` of ``str(exc)`` ("" when that raises)."""
        return self._exception_text(safe_str(exc)) if self.settings.capture_content else ""

    def _record_exception(self, exc: BaseException, message: str) -> None:
        """The ``exception`` event, built here rather than by the SDK's ``record_exception``: the SDK
        formats the stacktrace with the exception's own text in it (see ``_stacktrace``)."""
        try:
            attributes = exception_attributes(exc, self._exception_text)
            attributes[semconv.EXCEPTION_MESSAGE] = message  # the one the status already shows
            self.span.add_event(semconv.EXCEPTION_EVENT, attributes)
        except Exception:
            _log.warning("ragtrace: could not record the exception of %r", self.spec.name, exc_info=True)

    def _end(self) -> None:
        try:
            self.span.end()
        except Exception:  # a span processor that raises in on_end must not break the app's call
            _log.warning("ragtrace: ending the span of %r raised", self.spec.name, exc_info=True)

    def captured_answer(self, result: object, streamed: bool) -> Text | None:
        if streamed:
            if self.decoder is not None:
                self.parts.append(self.decoder.decode(b"", final=True))  # a character cut off at the end
            return prepare_value("".join(self.parts), self.settings) if self.parts else None
        spec = self.spec
        value = apply_extractor(spec, "answer", spec.answer, result) if spec.answer else result
        if spec.answer is None and not isinstance(value, str):
            return None
        return prepare_value(value, self.settings)

    def captured_chunks(self, result: object, streamed: bool) -> Normalized | None:
        spec = self.spec
        if streamed:
            return Normalized(tuple(self.stream_chunks), self.stream_total) if self.stream_total else None
        if spec.chunks is not None:
            value = apply_extractor(spec, "chunks", spec.chunks, result)
        elif spec.role == semconv.ROLE_RETRIEVE:
            value = result
        else:
            return None
        return None if value is None else normalize_chunks(value, self.settings)
