"""What every receiver does with an export: decode, commit, then hand off to scoring and forwarding.

The HTTP and gRPC receivers share one ``Pipeline``. With ``decode_processes`` > 0 each request is decoded
*and written* in one of that many worker processes (decoding is pure Python, and the GIL would hold it to one
core); the workers and this process serialise their SQLite transactions with a shared lock. Without them,
decoding runs in worker threads and writes in one dedicated thread, so decoding the next request overlaps the
commit of this one. Each worker runs under a memory limit (``RLIMIT_AS``, ``worker_memory_bytes`` above what it
took to start): a body that would take more fails there with ``MemoryError``, refused as ``DecodedTooLarge``,
never in this process. A worker process that dies (killed, or its limit hit where no ``MemoryError`` could be
raised) is replaced: the pool is started again, and a request it was handling is decoded and written once more in
the new pool (upserts: no duplicate); a request that kills the new pool's worker too is refused as malformed,
so one body cannot kill workers without end. Decoding never moves into this process.
The ``accept_*`` coroutines return only after the rows are committed: a receiver acknowledges after they
return, never before. Scoring and forwarding happen after the commit and never delay the reply.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from ragtrace_collector._decoded import DecodedTooLarge
from ragtrace_collector._otlp import Batch, OtlpDecodeError, decode_json, decode_protobuf
from ragtrace_collector._stats import Stats
from ragtrace_collector._store import Storage, Store, is_postgres, open_store

_log = logging.getLogger("ragtrace_collector")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class BatchConsumer(Protocol):
    """Something that wants committed batches (server-side scoring). ``submit`` never blocks."""

    def submit(self, batch: Batch) -> None:
        """Take a committed batch."""
        ...


class PayloadConsumer(Protocol):
    """Something that wants the committed spans as OTLP protobuf bytes (forwarding). ``submit`` never blocks."""

    def submit(self, payload: bytes) -> None:
        """Take one ``ExportTraceServiceRequest`` serialised as protobuf."""
        ...


class Pipeline:
    """Decode, commit, hand off. One per collector process; ``close()`` when done."""

    def __init__(
        self,
        store: Storage,
        *,
        scorer: BatchConsumer | None = None,
        forwarder: PayloadConsumer | None = None,
        decode_processes: int = 0,
        stats: Stats | None = None,
        worker_memory_bytes: int | None = None,
    ) -> None:
        self.store = store
        self.scorer = scorer
        self.forwarder = forwarder
        self.stats = stats
        """Counts what each committed export stored, rejected and brought decided (``/metrics``)."""
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtrace-store")
        self._decoders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragtrace-decode")
        self._processes: ProcessPoolExecutor | None = None
        self._process_count = decode_processes
        self._worker_memory_bytes = worker_memory_bytes
        self.restarts = 0
        """How many times a dead decode process's pool was started again."""
        if decode_processes > 0:
            self._processes = self._start_processes()

    def _start_processes(self) -> ProcessPoolExecutor:
        # spawn, not fork: the parent runs threads (gRPC, uvicorn, SQLite) that fork would copy half-way.
        return ProcessPoolExecutor(
            max_workers=self._process_count,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(os.getpid(), self.store.target, self.store.write_lock, self._worker_memory_bytes),
        )

    def _replace_processes(self, broken: ProcessPoolExecutor) -> ProcessPoolExecutor:
        """The pool to use after ``broken`` lost a process: a new one, started once however many requests saw it
        break (they run on the event loop, one at a time here)."""
        if self._processes is broken:
            _log.error("a decode process died: starting the decode processes again")
            broken.shutdown(wait=False, cancel_futures=True)
            self._processes = self._start_processes()
            self.restarts += 1
        assert self._processes is not None
        return self._processes

    async def warm_up(self) -> None:
        """Start the worker processes now rather than on the first request."""
        if self._processes is not None:
            await asyncio.gather(*(self._ingest(False, b"") for _ in range(self._process_count)))

    async def _ingest(self, as_json: bool, body: bytes) -> tuple[Batch, int]:
        """Decode and commit; return the batch (its undecided records, at least) and how many spans were stored."""
        loop = asyncio.get_running_loop()
        received_ns = time.time_ns()
        pool = self._processes
        if pool is not None:
            for attempt in (1, 2):
                try:
                    batch, stored, decided = await loop.run_in_executor(
                        pool, _ingest_in_worker, as_json, body, received_ns
                    )
                except MemoryError:
                    # The worker's memory limit, hit by this body: refused, and the worker carries on.
                    raise DecodedTooLarge(
                        f"the {len(body)}-byte body took more memory to decode than a decode process may use"
                    ) from None
                except BrokenProcessPool:
                    pool = self._replace_processes(pool)
                    if attempt == 2:
                        raise OtlpDecodeError(
                            "decoding this body stopped a decode process twice: refused, not retried"
                        ) from None
                    continue
                self._count(batch, stored, decided)
                return batch, stored
        decode = decode_json if as_json else decode_protobuf
        batch = await loop.run_in_executor(self._decoders, decode, body, received_ns)
        await self.commit(batch)
        self._count(batch, len(batch.spans), _decisions(batch))
        return batch, len(batch.spans)

    def _count(self, batch: Batch, stored: int, decided: dict[str, int]) -> None:
        if self.stats is not None:
            self.stats.exported(stored, batch.rejected)
            self.stats.decided(decided, "app")

    async def accept_protobuf(self, body: bytes) -> Batch:
        """Decode a binary export and commit it. Raises ``OtlpDecodeError`` or ``StoreError``.

        The batch returned holds the rejections and the RAG records still to be scored; its other rows may
        be left out (they were written by a worker process).
        """
        batch, stored = await self._ingest(False, body)
        self._hand_off(batch)
        if self.forwarder is not None and stored:
            # The body as received when nothing was rejected; else the accepted spans only.
            loop = asyncio.get_running_loop()
            payload = body if not batch.rejected else await loop.run_in_executor(self._decoders, _reencode, body)
            self.forwarder.submit(payload)
        return batch

    async def accept_json(self, body: bytes) -> Batch:
        """Decode an OTLP/JSON export and commit it. Raises ``OtlpDecodeError`` or ``StoreError``."""
        batch, stored = await self._ingest(True, body)
        self._hand_off(batch)
        if self.forwarder is not None and stored:
            loop = asyncio.get_running_loop()
            self.forwarder.submit(await loop.run_in_executor(self._decoders, _json_to_protobuf, body))
        return batch

    async def commit(self, batch: Batch) -> None:
        """Write rows produced elsewhere (server-side scores) through the single writer thread."""
        await asyncio.get_running_loop().run_in_executor(self._writer, self.store.write, batch)

    def _hand_off(self, batch: Batch) -> None:
        if self.scorer is not None and batch.rag_records:
            self.scorer.submit(batch)

    def close(self) -> None:
        """Wait for the writes in flight, then stop the threads."""
        self._decoders.shutdown(wait=True)
        if self._processes is not None:
            self._processes.shutdown(wait=True)
        self._writer.shutdown(wait=True)


_worker_store: Storage | None = None


def _init_worker(parent: int, target: str, write_lock: Any, memory_bytes: int | None) -> None:
    """In a worker process: follow the parent's lifetime, open the store (a SQLite file: with the lock its writers
    share, leaving checkpoints to the server; PostgreSQL: a pool of its own), then limit the address space to what
    it uses now plus ``memory_bytes`` (a body past it raises ``MemoryError`` here, not in the collector)."""
    global _worker_store
    _die_with_parent(parent)
    if is_postgres(target):
        _worker_store = open_store(target)
    else:
        _worker_store = Store(target, write_lock=write_lock, checkpoints=False)
    if memory_bytes is not None:
        _limit_memory(memory_bytes)


def _limit_memory(extra: int) -> None:
    """Cap this process's address space at its current size plus ``extra`` bytes (Linux; elsewhere a no-op)."""
    try:
        with open("/proc/self/statm") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (size + extra, resource.RLIM_INFINITY))
    except (OSError, ValueError, ImportError) as exc:
        _log.warning("decode process: no memory limit (%s)", exc)


def _ingest_in_worker(as_json: bool, body: bytes, received_ns: int) -> tuple[Batch, int, dict[str, int]]:
    """In a worker process: decode and commit; send back only what the parent needs (not the rows): the
    undecided records, the rejections, how many spans were stored and how many records came decided, by decision."""
    assert _worker_store is not None
    batch = (decode_json if as_json else decode_protobuf)(body, received_ns)
    _worker_store.write(batch)
    undecided = [row for row in batch.rag_records if row.get("decision") is None]
    returned = Batch(rag_records=undecided, rejected=batch.rejected, errors=batch.errors)
    return returned, len(batch.spans), _decisions(batch)


def _decisions(batch: Batch) -> dict[str, int]:
    """How many of the batch's RAG records the app decided, by decision."""
    counts: dict[str, int] = {}
    for row in batch.rag_records:
        decision = row.get("decision")
        if decision is not None:
            counts[str(decision)] = counts.get(str(decision), 0) + 1
    return counts


def _die_with_parent(parent: int) -> None:
    """In a decode process: exit when the collector is gone, even after a ``kill -9`` that skips its shutdown."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the watchdog below covers it
    if os.getppid() != parent:
        os._exit(0)

    def watchdog() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watchdog, name="ragtrace-decode-watchdog", daemon=True).start()


def _reencode(body: bytes) -> bytes:
    """The accepted spans of a partly bad body as a clean protobuf export (for forwarding)."""
    from ragtrace_collector._otlp import salvage_request

    return bytes(salvage_request(body).SerializeToString())


def _json_to_protobuf(body: bytes) -> bytes:
    from ragtrace_collector._otlp import json_request

    return bytes(json_request(body).SerializeToString())
