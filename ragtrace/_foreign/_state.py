"""The joiner's per-trace state, bounded in count, bytes and time, and what was dropped to keep it so.

A trace has state only while some ended span has handed something up to a span still open (see
``_pending``); the state goes when the last of those opens spans ends (normally the local root of the
trace, or the RAG root itself). A trace whose spans never end (a crashed task, a parent in another
provider, an instrumentation that forgets to end a span) is dropped once it is the oldest and the bound
on traces or bytes is reached, or once it is older than the bound on time, and counted in ``dropped``.
The candidates it still held are handed back to be treated as RAG roots: they were the topmost found.

Not thread-safe: the joiner's lock guards every call.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ragtrace._foreign._pending import Pending

if TYPE_CHECKING:
    from ragtrace._foreign._pending import Candidate


class TraceState:
    """One trace's gatherings, by the id of the open span each is for, and their bytes."""

    __slots__ = ("born", "pending", "size")

    def __init__(self, born: float) -> None:
        self.born = born
        self.pending: dict[int, Pending] = {}
        self.size = 0


class States:
    """Per-trace state under three bounds: ``max_traces`` traces, ``max_bytes`` bytes in all, ``max_seconds``
    seconds per trace (from its first gathering). Every operation is O(1) apart from what it drops."""

    def __init__(self, max_traces: int, max_bytes: int, max_seconds: float, clock: Callable[[], float]) -> None:
        self.max_traces = max_traces
        self.max_bytes = max_bytes
        self.max_seconds = max_seconds
        self._clock = clock
        self._traces: OrderedDict[int, TraceState] = OrderedDict()  # oldest first
        self.size = 0
        self.dropped = 0
        """Traces dropped before they ended (a bound was reached), since creation."""

    def __len__(self) -> int:
        return len(self._traces)

    def __contains__(self, trace_id: int) -> bool:
        return trace_id in self._traces

    @property
    def held(self) -> int:
        """Candidates held (ended spans not yet exported)."""
        return sum(len(p.held) for t in self._traces.values() for p in t.pending.values())

    def take(self, trace_id: int, span_id: int) -> Pending | None:
        """Remove and return what was gathered for ``span_id`` (it has ended); frees the trace when it was the last."""
        trace = self._traces.get(trace_id)
        if trace is None:
            return None
        pending = trace.pending.pop(span_id, None)
        if pending is not None:
            trace.size -= pending.size
            self.size -= pending.size
        if not trace.pending:
            del self._traces[trace_id]
            self.size -= trace.size  # 0 unless sizes drifted: the trace's whole share goes with it
        return pending

    def give(self, trace_id: int, span_id: int, gathered: Pending) -> Sequence[Candidate]:
        """Hand ``gathered`` to the open span ``span_id``; return the candidates of traces dropped to stay bounded."""
        trace = self._traces.get(trace_id)
        if trace is None:
            trace = self._traces[trace_id] = TraceState(self._clock())
        target = trace.pending.get(span_id)
        if target is None:
            trace.pending[span_id] = gathered
            grown = gathered.size
        else:
            before = target.size
            target.absorb(gathered)
            grown = target.size - before
        trace.size += grown
        self.size += grown
        return self._bound()

    def expire(self) -> Sequence[Candidate]:
        """Drop the traces older than ``max_seconds``; return the candidates they held."""
        if not self._traces:
            return ()
        deadline = self._clock() - self.max_seconds
        released: list[Candidate] = []
        while self._traces:
            trace_id, trace = next(iter(self._traces.items()))
            if trace.born > deadline:
                break
            released.extend(self._drop(trace_id))
        return released

    def drain(self) -> list[Candidate]:
        """Every held candidate, taken out (a flush or shutdown exports them now). What was gathered beside
        them goes too: an enclosing span must not become a second RAG root over the same retrievals."""
        released: list[Candidate] = []
        for trace in self._traces.values():
            for pending in trace.pending.values():
                if pending.held:
                    released.extend(pending.held)
                    trace.size -= pending.size
                    self.size -= pending.size
                    pending.held, pending.retrieved, pending.answer, pending.size = [], [], None, 0
        return released

    def clear(self) -> None:
        """Forget everything without counting it (a forked child: the spans held are the parent's to export)."""
        self._traces.clear()
        self.size = 0

    def _bound(self) -> Sequence[Candidate]:
        if len(self._traces) <= self.max_traces and self.size <= self.max_bytes:
            return ()
        released: list[Candidate] = []
        while self._traces and (len(self._traces) > self.max_traces or self.size > self.max_bytes):
            released.extend(self._drop(next(iter(self._traces))))
        return released

    def _drop(self, trace_id: int) -> list[Candidate]:
        trace = self._traces.pop(trace_id)
        self.size -= trace.size
        self.dropped += 1
        return [c for p in trace.pending.values() for c in p.held]
