"""Optional forwarding of the stored spans to a downstream OTLP/HTTP endpoint (Phoenix, Tempo, a vendor).

Every committed export is sent on as OTLP/HTTP protobuf; scores computed by the collector go out later as
carrier spans (OpenInference kind EVALUATOR, linked to the RAG span), the same way the app sends late
scores, so the downstream backend sees the enriched picture. Forwarding never delays or fails an ingest:
payloads wait in a bounded queue (the oldest is dropped and counted when it is full) and are retried with
backoff on 429, 502, 503, 504 and connection errors.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping

import httpx

from ragtrace_collector._address import endpoint_url

_log = logging.getLogger("ragtrace_collector")

_RETRYABLE = frozenset({429, 502, 503, 504})
_TRACES_PATH = "/v1/traces"


def traces_url(url: str) -> str:
    """The full traces URL for ``--forward``: a base URL gets ``/v1/traces`` appended, as OTLP exporters do.

    Raises ``ConfigurationError`` when the URL is not http(s).
    """
    problem = f"--forward {url!r} is not an OTLP/HTTP URL: give e.g. http://127.0.0.1:6006 or https://host/v1/traces"
    return endpoint_url(url, _TRACES_PATH, problem)


class Forwarder:
    """Sends OTLP protobuf payloads downstream from a background task. ``submit`` never blocks."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        queue_size: int = 1024,
        timeout: float = 10.0,
        max_retries: int = 5,
    ) -> None:
        self.url = traces_url(url)
        self._headers = {"content-type": "application/x-protobuf", **(headers or {})}
        self._queue: deque[bytes] = deque(maxlen=queue_size)
        self._wake = asyncio.Event()
        self._timeout = timeout
        self._max_retries = max_retries
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.sent = 0
        """Payloads delivered."""
        self.dropped = 0
        """Payloads given up (queue full, retries spent, or a non-retryable reply)."""

    @property
    def pending(self) -> int:
        """Payloads waiting to be sent (the queue's depth)."""
        return len(self._queue)

    def submit(self, payload: bytes) -> None:
        """Queue one ``ExportTraceServiceRequest`` (protobuf bytes). Call from the event loop's thread."""
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
            _log.warning("forward queue full: dropping the oldest payload")
        self._queue.append(payload)
        self._wake.set()

    def start(self) -> None:
        """Start the background sender on the running loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ragtrace-forwarder")

    async def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds), then stop."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout)
            except TimeoutError:
                _log.warning("forwarder stopped with %d payload(s) unsent", len(self._queue))
            self._task = None

    async def _run(self) -> None:
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            while True:
                if not self._queue:
                    if self._closing:
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                payload = self._queue.popleft()
                if await self._send(client, payload):
                    self.sent += 1
                else:
                    self.dropped += 1

    async def _send(self, client: httpx.AsyncClient, payload: bytes) -> bool:
        delay = 0.5
        for attempt in range(self._max_retries + 1):
            try:
                response = await client.post(self.url, content=payload, headers=self._headers)
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return True
                if response.status_code not in _RETRYABLE:
                    _log.warning("forward to %s refused with %d: dropped", self.url, response.status_code)
                    return False
                reason = f"HTTP {response.status_code}"
            if attempt == self._max_retries:
                break
            # Also while stopping: ``stop``'s timeout bounds how long the retries may take.
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)
        _log.warning("forward to %s failed (%s): dropped", self.url, reason)
        return False
