"""Server-side scoring: RAG spans that arrive without ``ragtrace.eval.decision`` are sampled and scored here.

An app that only captures (no judge, no worker) stays light; the collector picks its traces with the same
deterministic draw as the in-app sampler (BLAKE2b of the trace id, so app and collector agree), scores
them with ragtrace's ``Suite`` and judge on a thread of its own (a slow judge never slows ingest), and
writes the scores with ``source = 'collector'``. Every undecided record gets a decision: ``evaluated``,
``not_sampled``, ``overflow`` (queue full), ``error`` (scoring failed as a whole).

Several replicas may share the store (PostgreSQL) and each receive the same record (an exporter's retry): a
record is scored by the replica that *claims* it (``_store.claims``: undecided and free, for a lease), so the judge
is paid once. Every ``sweep_seconds`` the scorer also claims what no replica is scoring: records whose claim ran
out (the claimer died) and records stored more than ``unclaimed_grace_seconds`` ago, within the last hour, and
never claimed (their replica died between storing and claiming, or a restart came between).

When forwarding is on, the scores also go downstream as a carrier span (OpenInference kind EVALUATOR,
linked to the RAG span), as the app does for late scores (``_carrier.py``).

Senders choose the trace ids, and so which traces the draw picks: the draw alone would let them choose what the
collector's judge spends. So the collector decides with the SDK's own ``Sampler``, as the app does: after the
draw, its daily budget (``RAGTRACE_BUDGET_TOKENS_PER_DAY``, ``RAGTRACE_BUDGET_USD_PER_DAY``: ``over_budget``)
and its per-minute throttle (``RAGTRACE_THROTTLE_PER_MINUTE``: ``throttled``), each record's judge spend charged
when its scoring ends. The app's sampling rules (``RAGTRACE_SAMPLE_ALWAYS``/``NEVER``) read span attributes the
stored row does not keep, and are not applied here. The record's texts are cut as the app cuts them
(``RAGTRACE_MAX_RECORD_CHUNK_LENGTH`` characters a text, ``RAGTRACE_MAX_RECORD_CHUNKS`` chunks) before the judge
sees them: what a sender puts on a span does not set the judge's prompt size.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable

from opentelemetry.sdk.trace import ReadableSpan

from ragtrace import Chunk, RagRecord, Sampler, semconv
from ragtrace import _settings as settings
from ragtrace import environment_variables as env
from ragtrace._capture import CaptureSettings
from ragtrace.judges import Judge, default_judge
from ragtrace.metrics import Suite, SuiteResult, configured_suite
from ragtrace.scoring import JudgePause
from ragtrace_collector._carrier import carrier_export, encode, score_rows
from ragtrace_collector._otlp import Batch, Row
from ragtrace_collector._stats import Stats
from ragtrace_collector._store import DatabaseError, Storage, StoreError, claims

_log = logging.getLogger("ragtrace_collector")

DEFAULT_SAMPLE_RATE = 0.1
"""Fraction of undecided traces scored when ``RAGTRACE_SAMPLE_RATE`` is not set (as in the app)."""

SWEEP_LOOKBACK_SECONDS = 3600.0
"""How far back the sweep takes records that were stored and never claimed: long enough for a replica's restart,
short enough that a store once served with ``--no-score`` is not scored wholesale when scoring starts."""

SAMPLE_RATE = settings.rate("sample_rate", env.RAGTRACE_SAMPLE_RATE, default=DEFAULT_SAMPLE_RATE)


_NO_SPAN = ReadableSpan(name="rag")
"""What ``Sampler.decide`` is given for the span: the collector's sampler has no rules, which alone read it."""


def record_of(row: Row, limits: CaptureSettings | None = None) -> RagRecord | None:
    """The ``RagRecord`` of a stored ``rag_records`` row, or None when the span carried no content.

    Each text is cut at ``limits.max_record_chunk_length`` characters and the chunks at ``max_record_chunks``
    (``limits`` default: the ``RAGTRACE_*`` capture variables), as the app cuts the records it scores.
    """
    if not row.get("query"):
        return None
    limits = limits if limits is not None else CaptureSettings.from_env()
    length = limits.max_record_chunk_length
    chunks: list[Chunk] = []
    for item in json.loads(row.get("chunks") or "[]"):
        if len(chunks) >= limits.max_record_chunks:
            break
        if not isinstance(item, dict) or item.get("content") is None:
            continue
        metadata = item.get("metadata")
        chunks.append(
            Chunk(
                text=str(item["content"])[:length],
                id=item.get("id"),
                score=item.get("score"),
                metadata=metadata if isinstance(metadata, dict) else {},
            )
        )
    reference = row.get("reference")
    return RagRecord.of(
        query=str(row["query"])[:length],
        chunks=chunks,
        answer=str(row.get("answer") or "")[:length],
        reference=str(reference)[:length] if reference is not None else None,
    )


class ServerScorer:
    """Scores undecided RAG records in a background thread. ``submit`` never blocks.

    ``forward``, when given, receives a carrier export (protobuf bytes) per scored record; it is called from
    the scorer's thread and must be thread-safe.
    """

    def __init__(
        self,
        store: Storage,
        *,
        suite: Suite | None = None,
        judge: Judge | None = None,
        sample_rate: float | None = None,
        max_concurrency: int = 4,
        queue_size: int = 1024,
        forward: Callable[[bytes], None] | None = None,
        stats: Stats | None = None,
        sampler: Sampler | None = None,
        limits: CaptureSettings | None = None,
        lease_seconds: float = claims.LEASE_SECONDS,
        sweep_seconds: float | None = None,
        unclaimed_grace_seconds: float | None = None,
    ) -> None:
        sample_rate = SAMPLE_RATE.resolve(sample_rate)
        self.store = store
        self.suite = suite if suite is not None else configured_suite()
        # Built now, not on the scoring thread: a wrong RAGTRACE_JUDGE* setting must stop the start-up.
        self._judge: Judge = judge if judge is not None else default_judge()
        self.sample_rate = sample_rate
        # The SDK's sampler, for its throttle and budget (a wrong RAGTRACE_THROTTLE_*/BUDGET_* setting, or a
        # dollar budget for a judge without a price, stops the start-up too). No rules: see the module docstring.
        self.sampler = sampler if sampler is not None else Sampler(sample_rate, always=(), never=())
        self.sampler.check_judge(self._judge.name)
        # A judge that fails record after record rests, as the app's does (ragtrace.scoring.judge_pause).
        self._pause = JudgePause(self._judge.name)
        self.limits = limits if limits is not None else CaptureSettings.from_env()
        """How much of a record's text the judge sees (``record_of``)."""
        self._max_concurrency = max_concurrency
        self._inbox: queue.SimpleQueue[list[Row] | None] = queue.SimpleQueue()
        self._queue_size = queue_size
        self._forward = forward
        self._stats = stats
        self._thread: threading.Thread | None = None
        self._idle = threading.Condition()
        self._pending = 0
        self.owner = claims.replica_name()
        """This process's name on the records it claims (several replicas may share the store)."""
        self._lease_seconds = lease_seconds
        """How long this replica's claim on a record holds (``serve --claim-lease-seconds``)."""
        # A dead replica's claims run out after a lease: sweeping four times a lease (30 s at most) takes them
        # over within a quarter lease of that; a record never claimed is an orphan after half a lease (60 s).
        self._sweep_seconds = sweep_seconds if sweep_seconds is not None else min(30.0, lease_seconds / 4)
        grace = unclaimed_grace_seconds if unclaimed_grace_seconds is not None else min(60.0, lease_seconds / 2)
        self._grace_ns = int(grace * 1e9)
        self._next_sweep = time.monotonic() + self._sweep_seconds
        self.scored = 0
        """Records scored (decision ``evaluated`` or ``error``)."""

    # -- the ingest side ---------------------------------------------------------------------------

    def submit(self, batch: Batch) -> None:
        """Take a committed batch; its undecided records are sampled and scored on the scoring thread."""
        undecided = [row for row in batch.rag_records if row.get("decision") is None]
        if not undecided:
            return
        with self._idle:
            self._pending += len(undecided)
        self._inbox.put(undecided)

    def start(self) -> None:
        """Start the scoring thread (it loads the judge lazily, off the ingest path)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name="ragtrace-server-scoring", daemon=True)
            self._thread.start()

    @property
    def pending(self) -> int:
        """Records taken in and not yet decided and written (the scoring queue's depth)."""
        with self._idle:
            return self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Block until every queued record is scored and written (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        """Score what is queued (for at most ``timeout`` seconds), then stop the thread."""
        if self._thread is None:
            return
        self.wait_idle(timeout)
        self._inbox.put(None)
        self._thread.join(timeout)
        self._thread = None

    # -- the scoring thread ------------------------------------------------------------------------

    def _main(self) -> None:
        try:
            asyncio.run(self._loop())
        except Exception:
            _log.exception("server-side scoring stopped")

    async def _loop(self) -> None:
        judge = self._judge
        slots = asyncio.Semaphore(self._max_concurrency)
        tasks: set[asyncio.Task[None]] = set()
        in_flight: set[str] = set()  # span ids being scored now
        while True:
            taken = await asyncio.to_thread(self._next_rows)
            if taken is None:
                break
            rows, claimed = taken
            # Swept rows are claimed already; one of them this replica is still scoring stays with that task.
            fresh = (
                [r for r in rows if r["span_id"] not in in_flight] if claimed else await self._claim(rows, in_flight)
            )
            if len(fresh) < len(rows):
                self._done(len(rows) - len(fresh))
            decided: list[Row] = []
            for row in fresh:
                # The draw, then the budget (with the records being scored counted at their mean cost), then
                # the throttle: the sampler's order, as in the app.
                selection = self.sampler.decide(int(row["trace_id"], 16), _NO_SPAN, in_flight=len(tasks))
                if not selection.selected:
                    decided.append(_decided(row, selection.decision))
                elif len(tasks) >= self._queue_size:
                    self.sampler.refund(selection)
                    decided.append(_decided(row, semconv.DECISION_OVERFLOW))
                else:
                    span_id = row["span_id"]
                    in_flight.add(span_id)
                    task = asyncio.create_task(self._score_one(row, judge, slots))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    task.add_done_callback(functools.partial(_forget, in_flight, span_id))
            if decided:
                self._write(Batch(rag_records=decided))
                self._done(len(decided))
        if tasks:
            await asyncio.gather(*tasks)

    def _next_rows(self) -> tuple[list[Row], bool] | None:
        """The next records to score: a batch from ``submit`` (to claim), or, when none came for
        ``sweep_seconds``, the orphans the sweep claimed (already claimed); None: stop."""
        while True:
            try:
                rows = self._inbox.get(timeout=max(0.0, self._next_sweep - time.monotonic()))
            except queue.Empty:
                orphans = self._sweep()
                if orphans:
                    return orphans, True
                continue
            return (rows, False) if rows is not None else None

    def _sweep(self) -> list[Row]:
        """Claim the undecided records nobody scores: a dead replica's claims, and records stored and never
        claimed (their replica died first). A store that cannot be read now is swept again next time."""
        self._next_sweep = time.monotonic() + self._sweep_seconds
        now = time.time_ns()
        try:
            take = functools.partial(
                claims.claim_orphans,
                unclaimed_before_ns=now - self._grace_ns,
                unclaimed_after_ns=now - int(SWEEP_LOOKBACK_SECONDS * 1e9),
                limit=self._queue_size,
                lease_seconds=self._lease_seconds,
            )
            orphans = self.store.change(take, self.owner, now)
        except (DatabaseError, StoreError):
            _log.warning("could not look for records left unscored", exc_info=True)
            return []
        if orphans:
            _log.info("scoring %d RAG record(s) that no replica is scoring", len(orphans))
            with self._idle:
                self._pending += len(orphans)
        return orphans

    async def _claim(self, rows: list[Row], in_flight: set[str]) -> list[Row]:
        """``rows`` that this replica now holds to score: not decided, not claimed by another replica (or by this
        one: being scored), not repeated in ``rows``.

        An exporter that retries sends the same unscored span again, possibly to another replica: scoring it twice
        would pay the judge twice. A store that cannot be written now leaves them to the sweep.
        """
        fresh: list[Row] = []
        seen = set(in_flight)
        for row in rows:
            if row["span_id"] not in seen:
                seen.add(row["span_id"])
                fresh.append(row)
        try:
            mine = await asyncio.to_thread(
                self.store.change,
                claims.claim_records,
                [row["span_id"] for row in fresh],
                self.owner,
                time.time_ns(),
                self._lease_seconds,
            )
        except (DatabaseError, StoreError):
            _log.warning("could not claim records to score: the sweep takes them later", exc_info=True)
            return []
        return [row for row in fresh if row["span_id"] in mine]

    def _done(self, count: int) -> None:
        with self._idle:
            self._pending -= count
            self._idle.notify_all()

    async def _score_one(self, row: Row, judge: Judge, slots: asyncio.Semaphore) -> None:
        await slots.acquire()
        try:
            # The record may have waited for a slot past its lease, and another replica taken it: renewed as the
            # judge is about to be paid, and left to that replica when it is no longer this one's.
            if not await self._still_mine(row["span_id"]):
                return
            record = record_of(row, self.limits)
            if record is None:
                # No content on the span (capture off): nothing to score; say so rather than stay undecided.
                self._write(Batch(rag_records=[_decided(row, semconv.DECISION_ERROR)]))
                return
            try:
                if self._pause.admit():
                    result = await self.suite.score(record, judge)
                    self._pause.settle(list(result.scores.values()))
                else:  # the judge rests after failing record after record: no call, the cause recorded
                    result = self._rested(judge.name)
            except Exception:
                _log.warning("server-side scoring of span %s failed", row["span_id"], exc_info=True)
                self._write(Batch(rag_records=[_decided(row, semconv.DECISION_ERROR)]))
                return
            self.sampler.charge(result.judge, result.cost)
            encoded = encode(result)
            scores = score_rows(row, encoded)
            scored = dict(
                row,
                decision=encoded.decision,
                judge=result.judge,
                calls=result.calls,
                prompt_tokens=result.cost.prompt_tokens,
                completion_tokens=result.cost.completion_tokens,
                seconds=result.seconds,
            )
            self._write(Batch(rag_records=[scored], scores=scores))
            self.scored += 1
            if self._forward is not None:
                try:
                    self._forward(carrier_export(row, result, encoded))
                except Exception:
                    _log.warning("could not forward the carrier of span %s", row["span_id"], exc_info=True)
        finally:
            slots.release()
            self._done(1)

    def _rested(self, judge: str) -> SuiteResult:
        """The scores of a record the resting judge is not asked for: each metric a judge error of the failure that
        started the rest, as the app records its rested spans."""
        scores = {m.name: self._pause.rested(m.name, m.direction) for m in self.suite.metrics}
        return SuiteResult(scores=scores, judge=judge)

    async def _still_mine(self, span_id: str) -> bool:
        try:
            return bool(
                await asyncio.to_thread(
                    self.store.change, claims.renew_record, span_id, self.owner, time.time_ns(), self._lease_seconds
                )
            )
        except (DatabaseError, StoreError):
            _log.warning("could not renew the claim on span %s: left to the sweep", span_id, exc_info=True)
            return False

    def _write(self, batch: Batch) -> None:
        try:
            self.store.write(batch)
        except StoreError:
            _log.error("could not store server-side scoring results", exc_info=True)
            return
        if self._stats is not None:
            decided: dict[str, int] = {}
            for row in batch.rag_records:
                decided[row["decision"]] = decided.get(row["decision"], 0) + 1
            self._stats.decided(decided, "collector")


def _forget(in_flight: set[str], span_id: str, _task: asyncio.Task[None]) -> None:
    in_flight.discard(span_id)


def _decided(row: Row, decision: str) -> Row:
    return dict(row, decision=decision)
