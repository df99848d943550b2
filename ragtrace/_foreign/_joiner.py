"""``Joiner``: finds the RAG calls other instrumentations traced and joins each into one record, as spans end.

Children end before their parents, so the joiner works bottom-up: each ended span hands what it and its
subtree found (retrieval results, the last generated text, waiting candidates) to its parent's gathering,
kept per trace in ``_state`` until the parent ends. The RAG root of a call is the topmost root-kind span
(OpenInference CHAIN, OpenLLMetry workflow, GenAI ``invoke_workflow``) with retrieval under it; a span a
user's rule names is a root whatever its kind. A root-kind span cannot know at its end whether a root
encloses it (kinds are set as spans end), so it is *held*, unexported, as a candidate until its parent
ends: an enclosing root-kind span with retrieval supersedes it (it then leaves untouched); the local root
of the trace ending (or a dropped trace, a flush, a shutdown) makes it the RAG root. A trace with several
RAG calls under a non-root span (an agent's tools, an HTTP request) so yields one root per call.

ragtrace's own RAG spans win: what was gathered under one (``own``) is dropped, and candidates under it
leave untouched.

The contract with the processor: every span given to ``end`` comes back exactly once, in a verdict of this
call or of a later ``end``/``own``/``drain``, unless ``end`` returns ``None`` (the span is the caller's to
forward, untouched, and nothing else is released). Verdicts of roots carry their record or why there is
none (``_assemble``). ``end`` allocates nothing for a span that is no part of a RAG call in a trace with no
state; the lock is held only for dictionary work, never while a record is built.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ragtrace import _capture
from ragtrace._foreign import _classify
from ragtrace._foreign._assemble import assemble
from ragtrace._foreign._parts import GENERATION, NAMED, RERANK, RETRIEVAL, ROOT, Release
from ragtrace._foreign._pending import Candidate, Pending, span_size
from ragtrace._foreign._state import States
from ragtrace._fork import at_fork_in_child_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ragtrace._foreign._join_settings import JoinSettings
    from ragtrace._foreign._parts import Retrieved

_log = logging.getLogger(__name__)
_EMPTY: Any = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class JoinStats:
    """The joiner's state at one moment: traces and approximate bytes held, candidate spans held (ended and
    not yet exported), and traces dropped to stay within the bounds since it was made."""

    traces: int
    bytes: int
    held: int
    dropped: int


class Joiner:
    """Joins the spans of RAG calls traced by other instrumentations; see the module docstring. Thread-safe."""

    def __init__(self, settings: JoinSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._renew()
        self._warned = False
        at_fork_in_child_of(self, Joiner._renew)

    def _renew(self) -> None:
        # Also the fork hook: a child starts empty (the spans held are the parent's to export) with a
        # lock no thread of the parent can be holding.
        self._lock = threading.Lock()
        s = self.settings
        self._states = States(s.max_traces, s.max_bytes, s.max_seconds, self._clock)

    @property
    def stats(self) -> JoinStats:
        """Traces, bytes and spans held now, and traces dropped so far."""
        with self._lock:
            states = self._states
            return JoinStats(len(states), states.size, states.held, states.dropped)

    def end(self, span: ReadableSpan, attributes: Mapping[str, Any] | None = None) -> tuple[Release, ...] | None:
        """Take one ended span that is not ragtrace's own RAG span (see the module docstring for the contract).
        ``attributes``: the span's, when the caller has them already."""
        context = span.context
        if context is None:
            return None
        if attributes is None:
            attributes = span.attributes or _EMPTY
        trace_id = context.trace_id
        named = bool(self.settings.roots) and self._named(span)
        role = _classify.role_of(attributes)
        known = trace_id in self._states  # unlocked: a stale answer only costs this span's gathering
        if role is None and not known and not named:
            return None
        kind, shape = role if role is not None else (None, None)
        parent = span.parent
        parent_id = parent.span_id if parent is not None and not parent.is_remote else None
        # What the span says is read before the lock is taken, and only for spans that may matter.
        found: Retrieved | None = None
        text: str | None = None
        if kind == RETRIEVAL:
            if parent_id is None and not named:
                return None  # a retrieval with nothing above it is no part of a RAG call
            found = _classify.retrieved(shape or "", attributes, span.start_time or 0, _read_length())
        elif kind == GENERATION:
            if not known and not named:
                return None  # no retrieval in this trace (yet): an LLM call alone is no RAG call
            text = _classify.answer(shape or "", attributes)
        elif kind == ROOT and not known and not named:
            return None  # a chain with nothing gathered under it
        superseded: list[Candidate] | None = None
        held = False
        with self._lock:
            states = self._states
            roots = states.expire()
            gathered = states.take(trace_id, context.span_id)
            if gathered is None and found is None and text is None and not named:
                # Nothing ended under this span and it adds nothing itself: the common case, no allocation.
                return self._result(span, superseded, roots, held)
            if gathered is None:
                gathered = Pending()
            if found is not None:
                if shape == RERANK:
                    gathered.add_retrieved(found)
                else:
                    gathered.replace_retrieved(found)
            elif text is not None:
                gathered.add_answer(text, span.end_time or 0)
            if named or (kind == ROOT and gathered.retrieved):
                superseded = gathered.release_held()
                candidate = Candidate(
                    span,
                    NAMED if named else shape or NAMED,
                    tuple(gathered.retrieved),
                    gathered.answer,
                    span_size(attributes),
                )
                if named or parent_id is None:
                    roots = [*roots, candidate]  # decisive (named), or topmost (nothing above it in this process)
                else:
                    gathered.hold(candidate)
                    held = True
                    roots = [*roots, *states.give(trace_id, parent_id, gathered)]
            elif parent_id is None:
                roots = [*roots, *gathered.release_held()]  # the local root ended: what waited below is topmost
            elif not gathered.empty:
                roots = [*roots, *states.give(trace_id, parent_id, gathered)]
        return self._result(span, superseded, roots, held)

    def _result(
        self, span: ReadableSpan, superseded: list[Candidate] | None, roots: Sequence[Candidate], held: bool
    ) -> tuple[Release, ...] | None:
        # ``None`` when there is nothing but the span itself, untouched: the caller forwards it.
        if not superseded and not roots and not held:
            return None
        verdicts = [Release(c.span) for c in superseded or ()]
        verdicts.extend(self._assembled(roots))
        if not held and not any(v.span is span for v in verdicts):
            verdicts.append(Release(span))
        return tuple(verdicts)

    def own(self, span: ReadableSpan) -> tuple[Release, ...]:
        """ragtrace's own RAG span ended: drop what was gathered under it; candidates under it leave untouched."""
        context = span.context
        if context is None or context.trace_id not in self._states:
            return ()
        with self._lock:
            roots = self._states.expire()
            gathered = self._states.take(context.trace_id, context.span_id)
        superseded = gathered.held if gathered is not None else []
        return (*(Release(c.span) for c in superseded), *self._assembled(roots))

    def drain(self) -> tuple[Release, ...]:
        """Every held candidate, as a RAG root (a flush or shutdown exports them now; nothing above them ended)."""
        with self._lock:
            roots = self._states.drain()
        return tuple(self._assembled(roots))

    def _assembled(self, roots: Iterable[Candidate]) -> list[Release]:
        verdicts = []
        for candidate in roots:
            try:
                verdicts.append(assemble(candidate, self.settings.hidden))
            except Exception:
                # A span shaped as nobody foresaw costs its own record only, and still leaves once.
                if not self._warned:
                    self._warned = True
                    _log.exception("ragtrace: could not read the RAG call of span %r", candidate.span.name)
                verdicts.append(Release(candidate.span, root=True))
        return verdicts

    def _named(self, span: ReadableSpan) -> bool:
        for rule in self.settings.roots:
            try:
                if rule.predicate(span, None):
                    return True
            except Exception:
                if not self._warned:
                    self._warned = True
                    _log.exception("ragtrace: the RAG root rule %r raised; it counts as not matching", rule.name)
        return False


def _read_length() -> int:
    # What a text may be cut to and still give the record all it keeps (the decorators' own bound).
    return _capture.get_settings().read_length
