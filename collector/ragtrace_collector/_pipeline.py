"""What every receiver does with an export: decode, commit, then hand off to scoring and forwarding.

The HTTP and gRPC receivers share one ``Pipeline``. Decoding runs in worker processes when
``decode_processes`` > 0 (decoding is pure Python and the GIL would hold it to one core), else in worker
threads; writes run in one dedicated thread (SQLite has one writer), so decoding the next requests overlaps
the commit of this one. A decode process that dies (out of memory, killed) costs nothing: the pipeline falls
back to threads and the request is decoded there.
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
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol

from ragtrace_collector._otlp import Batch, decode_json, decode_protobuf
from ragtrace_collector._store import Store

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
        store: Store,
        *,
        scorer: BatchConsumer | None = None,
        forwarder: PayloadConsumer | None = None,
        decode_processes: int = 0,
    ) -> None:
        self.store = store
        self.scorer = scorer
        self.forwarder = forwarder
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtrace-store")
        self._decoders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ragtrace-decode")
        self._processes: ProcessPoolExecutor | None = None
        self._process_count = decode_processes
        if decode_processes > 0:
            # spawn, not fork: the parent runs threads (gRPC, uvicorn, SQLite) that fork would copy half-way.
            self._processes = ProcessPoolExecutor(
                max_workers=decode_processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_die_with_parent,
                initargs=(os.getpid(),),
            )

    async def warm_up(self) -> None:
        """Start the decode processes now rather than on the first request."""
        if self._processes is not None:
            await asyncio.gather(
                *(self._decode(decode_protobuf, b"", 0) for _ in range(self._process_count)), return_exceptions=True
            )

    async def _decode(self, function: Callable[[bytes, int], Batch], body: bytes, received_ns: int) -> Batch:
        loop = asyncio.get_running_loop()
        if self._processes is not None:
            try:
                return await loop.run_in_executor(self._processes, function, body, received_ns)
            except BrokenProcessPool:
                _log.error("a decode process died: decoding in threads from now on")
                self._processes = None
        return await loop.run_in_executor(self._decoders, function, body, received_ns)

    async def accept_protobuf(self, body: bytes) -> Batch:
        """Decode a binary export and commit it. Raises ``OtlpDecodeError`` or ``StoreError``."""
        loop = asyncio.get_running_loop()
        batch = await self._decode(decode_protobuf, body, time.time_ns())
        await self._commit(batch)
        if self.forwarder is not None and batch.spans:
            # The body as received when nothing was rejected; else the accepted spans only.
            payload = body if not batch.rejected else await loop.run_in_executor(self._decoders, _reencode, body)
            self.forwarder.submit(payload)
        return batch

    async def accept_json(self, body: bytes) -> Batch:
        """Decode an OTLP/JSON export and commit it. Raises ``OtlpDecodeError`` or ``StoreError``."""
        loop = asyncio.get_running_loop()
        batch = await self._decode(decode_json, body, time.time_ns())
        await self._commit(batch)
        if self.forwarder is not None and batch.spans:
            self.forwarder.submit(await loop.run_in_executor(self._decoders, _json_to_protobuf, body))
        return batch

    async def commit(self, batch: Batch) -> None:
        """Write rows produced elsewhere (server-side scores) through the single writer thread."""
        await asyncio.get_running_loop().run_in_executor(self._writer, self.store.write, batch)

    async def _commit(self, batch: Batch) -> None:
        await self.commit(batch)
        if self.scorer is not None and batch.rag_records:
            self.scorer.submit(batch)

    def close(self) -> None:
        """Wait for the writes in flight, then stop the threads."""
        self._decoders.shutdown(wait=True)
        if self._processes is not None:
            self._processes.shutdown(wait=True)
        self._writer.shutdown(wait=True)


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
