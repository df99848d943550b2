"""``Settler``: joins the traces waiting in ``join_pending`` once they settle, and hands their RAG calls to scoring.

A RAG call traced by another instrumentation (OpenInference, OpenLLMetry, the GenAI conventions) reaches the
collector as several spans, in several exports, out of order. Each such span's export adds its trace to
``join_pending`` in the transaction that stores it, so a trace whose export was acknowledged waits there
through a restart. The settler looks at the table every ``poll_seconds``; a trace is joined when its root (a
span with no parent) has arrived and no span of it arrived for ``settle_seconds``, or when it has waited
``max_seconds`` (its root lives elsewhere). Joining reads the trace's spans back from the store, finds its RAG
calls with ragtrace's own readers (``ragtrace._foreign.join_trace``), writes their ``rag_records`` rows and
removes the trace from the table in one transaction, then hands the undecided records to server-side scoring,
which writes the scores and, when forwarding, sends the carrier span. A root that already has a record (a
trace joined before whose late span reopened it, ragtrace's own RAG span) is not written again. Records a
previous run stored but did not get to decide (it stopped in between) are handed to scoring again when the
settler starts (``resume``).

Bounds: ``max_traces`` traces and ``max_bytes`` of their RAG spans wait at once (the oldest are dropped, never
joined, and counted), and a trace of more than ``max_trace_spans`` spans is dropped rather than read. Nothing
is held in memory between looks: the state is the table.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ragtrace import semconv
from ragtrace._foreign import Joined, join_trace
from ragtrace_collector._join._limits import JoinLimits
from ragtrace_collector._join._views import record_row, view
from ragtrace_collector._otlp import Batch, Row
from ragtrace_collector._stats import Stats
from ragtrace_collector._store import Storage, StoreError, claims
from ragtrace_collector._store import join as _queries

__all__ = ["JoinStats", "Settler"]

_log = logging.getLogger("ragtrace_collector")
_NS = 1_000_000_000
_TRACES_PER_LOOK = 64
_RESUME_SECONDS = 3600.0
"""How far back, at start, records left undecided by the previous run are handed to scoring again: long enough
for a restart, short enough that a file once served with ``--no-score`` is not scored wholesale."""
_RESUME_RECORDS = 1024  # the scorer's queue: more would be decided ``overflow``


class Scorer(Protocol):
    """Server-side scoring (``ServerScorer``): takes undecided records, never blocks."""

    def submit(self, batch: Batch) -> None: ...


@dataclass(frozen=True, slots=True)
class JoinStats:
    """What the settler did since it started: traces joined (``expired``: of them, joined without their root
    after ``max_seconds``), RAG calls found, and traces dropped to stay within the bounds (never joined)."""

    joined: int
    expired: int
    records: int
    dropped: int


class Settler:
    """See the module docstring. ``settle_once`` is the whole job; ``start`` runs it on a daemon thread."""

    def __init__(
        self,
        store: Storage,
        limits: JoinLimits,
        *,
        scorer: Scorer | None = None,
        stats: Stats | None = None,
        clock: Callable[[], int] = time.time_ns,
        poll_seconds: float | None = None,
        lease_seconds: float = claims.LEASE_SECONDS,
    ) -> None:
        self.store = store
        self._lease_seconds = lease_seconds
        """How long this replica's claim on a trace holds (``serve --claim-lease-seconds``)."""
        self.limits = limits
        self._scorer = scorer
        self._stats = stats
        self._clock = clock
        self.owner = claims.replica_name()
        """This process's name on the traces it claims (several replicas may share the store)."""
        # Often enough that a trace is joined soon after it settles, rarely enough to cost nothing idle.
        self._poll = poll_seconds if poll_seconds is not None else min(1.0, limits.settle_seconds / 4)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._joined = self._expired = self._records = self._dropped = 0

    @property
    def stats(self) -> JoinStats:
        """The counts so far (they start at 0 with the process)."""
        with self._lock:
            return JoinStats(self._joined, self._expired, self._records, self._dropped)

    def waiting(self) -> int:
        """Traces waiting in the store now."""
        return self.store.read(_queries.totals)[0]

    def start(self) -> None:
        """Look every ``poll_seconds`` on a daemon thread, from now (traces left waiting by a previous run too)."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="ragtrace-join", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop looking. What still waits stays in the store, and is joined after the next start."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def resume(self) -> int:
        """Hand scoring the records the previous run stored and did not decide (it stopped between the two);
        return how many. The scorer skips a record already decided or being scored, so calling it twice is
        harmless. The thread calls it once as it starts."""
        if self._scorer is None:
            return 0
        since = self._clock() - int(_RESUME_SECONDS * _NS)
        rows = self.store.read(_queries.undecided_since, since, _RESUME_RECORDS)
        if rows:
            _log.info("scoring %d RAG record(s) the previous run left undecided", len(rows))
            self._scorer.submit(Batch(rag_records=rows))
        return len(rows)

    def _loop(self) -> None:
        try:
            self.resume()
        except Exception:
            _log.warning("could not read the records left undecided", exc_info=True)
        while not self._stop.wait(self._poll):
            try:
                self.settle_once()
            except Exception:
                _log.warning("joining waiting traces failed; trying again", exc_info=True)

    def settle_once(self, now_ns: int | None = None) -> list[str]:
        """Drop what is over the bounds, join every trace that has settled by ``now_ns`` (default: now), and
        return the span ids of the RAG roots written. Tests call it with chosen times; the thread with none."""
        with self._lock:
            now = self._clock() if now_ns is None else now_ns
            limits = self.limits
            over = self.store.read(_queries.oldest_over, limits.max_traces, limits.max_bytes)
            if over:
                self._drop(over, "the bounds on waiting traces were reached")
            written: list[str] = []
            quiet_since = now - int(limits.settle_seconds * _NS)
            born_before = now - int(limits.max_seconds * _NS)
            looked: set[str] = set()
            while True:
                # Claimed: another replica looking now takes other traces, and a trace this one dies on is taken
                # by another when the claim runs out.
                due = self.store.change(
                    claims.claim_due_traces,
                    quiet_since,
                    born_before,
                    _TRACES_PER_LOOK,
                    self.owner,
                    now,
                    self._lease_seconds,
                )
                fresh = [(t, first_ns) for t, first_ns in due if t not in looked]
                for trace_id, _ in due:
                    if trace_id in looked:  # looked at in this pass already: free for the next one
                        self.store.change(claims.release_trace, trace_id, now)
                for trace_id, first_ns in fresh:
                    looked.add(trace_id)
                    written.extend(self._settle(trace_id, now, expired=first_ns <= born_before))
                # Each trace looked at was joined, dropped or moved on (``touch``), so the next query finds others;
                # one whose write failed stays due and is looked at again next time, not again in this pass.
                if len(due) < _TRACES_PER_LOOK or not fresh:
                    return written

    def _settle(self, trace_id: str, now: int, *, expired: bool) -> list[str]:
        rows = self.store.read(_queries.spans_of, trace_id, self.limits.max_trace_spans + 1)
        if len(rows) > self.limits.max_trace_spans:
            self._drop([trace_id], f"trace {trace_id} has more than {self.limits.max_trace_spans} spans")
            return []
        last = max((int(r["received_ns"] or 0) for r in rows), default=0)
        rooted = any(r["parent_span_id"] is None for r in rows)
        if not expired and (last > now - int(self.limits.settle_seconds * _NS) or not rooted):
            # Not settled: a span arrived within the window (look again a window after it), or the root has not
            # arrived yet (look again a window from now).
            self.store.change(claims.release_trace, trace_id, last if rooted else now)
            return []
        try:
            found = join_trace([view(r) for r in rows])
        except Exception:
            _log.warning("could not join trace %s: left unscored", trace_id, exc_info=True)
            self._drop([trace_id], None)
            return []
        by_id = {r["span_id"]: r for r in rows}
        recorded = self.store.read(_queries.existing_records, [j.root.span_id for j in found])
        fresh = [j for j in found if j.root.span_id not in recorded]
        records = [record_row(j, by_id[j.root.span_id], trace_id) for j in fresh]
        try:
            self.store.write(Batch(rag_records=records, settled=[trace_id]))
        except StoreError:
            _log.error("could not store the RAG calls of trace %s; trying again", trace_id, exc_info=True)
            with contextlib.suppress(StoreError):  # else its claim runs out, and it is tried then
                self.store.change(claims.release_trace, trace_id, now)
            return []
        self._joined += 1
        self._expired += expired
        self._records += len(records)
        if self._stats is not None:
            for by, decided in _decisions(fresh, records).items():
                self._stats.decided(decided, by)
        undecided = [r for r in records if r["decision"] is None]
        if undecided and self._scorer is not None:
            self._scorer.submit(Batch(rag_records=undecided))
        return [r["span_id"] for r in records]

    def _drop(self, trace_ids: list[str], why: str | None) -> None:
        try:
            self.store.write(Batch(settled=trace_ids))
        except StoreError:
            _log.error("could not drop %d waiting trace(s)", len(trace_ids), exc_info=True)
            return
        self._dropped += len(trace_ids)
        if why is not None:
            _log.warning("dropped %d waiting trace(s) unjoined: %s", len(trace_ids), why)


def _decisions(found: list[Joined], records: list[Row]) -> dict[str, dict[str, int]]:
    """The decisions the records came with, by who decided: the app's processor (on the root), or the
    collector (``not_scored``: nothing to score)."""
    counts: dict[str, dict[str, int]] = {"app": {}, "collector": {}}
    for joined, row in zip(found, records, strict=True):
        decision = row["decision"]
        if isinstance(decision, str):
            by = counts["app" if semconv.EVAL_DECISION in joined.root.attributes else "collector"]
            by[decision] = by.get(decision, 0) + 1
    return counts
