"""The decoded-size bound: what a body will take once decoded, held against the in-flight budget before decoding.

Wire bytes are a poor measure of memory: 8 MiB of empty spans decode to some 700 MiB. Both receivers call
``hold_decoded`` after the body is read and before it is decoded. It estimates the decoded size
(``_otlp.decoded_cost``: the OTLP messages and JSON tokens counted without allocating them), refuses a body whose
estimate passes ``DECODED_COST_FACTOR`` times ``--max-body-bytes`` with ``DecodedTooLarge`` (HTTP 413, gRPC
``RESOURCE_EXHAUSTED`` without a retry delay: the same body would be refused again; its sender should send
smaller batches), and otherwise holds the estimate (less what the request holds already) against the in-flight
budget, which answers ``OverBudget`` (retryable) when other requests hold too much.

So one request costs at most ``DECODED_COST_FACTOR`` times the body limit, and all requests together at most the
in-flight budget (``--max-inflight-bytes``, four body limits by default), or one request alone.
"""

from __future__ import annotations

import asyncio

from ragtrace_collector._budget import Hold
from ragtrace_collector._otlp import decoded_cost

__all__ = ["DECODED_COST_FACTOR", "DecodedTooLarge", "hold_decoded"]

DECODED_COST_FACTOR = 3
"""Most one request may decode to, in body limits (the estimate errs high: a real export of spans is counted at
1.2-1.6 times what it takes, so a real export up to about a third of the body limit is always accepted)."""

_INLINE_BYTES = 64 * 1024
"""A body up to this size is measured on the event loop (well under a millisecond); a larger one in a thread."""


class DecodedTooLarge(Exception):
    """The body would decode to more than one request may take: refused, not to be retried as it is."""


async def hold_decoded(hold: Hold, body: bytes, *, export: str, as_json: bool, max_body_bytes: int) -> int:
    """Estimate what ``body`` (an export of ``export``: traces, logs, metrics) decodes to and hold it through
    ``hold``; return the estimate. Raise ``DecodedTooLarge`` past the per-request bound, ``OverBudget`` past the
    in-flight budget (holding nothing more either way)."""
    limit = DECODED_COST_FACTOR * max_body_bytes
    if len(body) <= _INLINE_BYTES:
        cost = decoded_cost(body, export=export, as_json=as_json, stop_above=limit)
    else:
        cost = await asyncio.to_thread(decoded_cost, body, export=export, as_json=as_json, stop_above=limit)
    if cost > limit:
        raise DecodedTooLarge(
            f"the {len(body)}-byte body would decode to more than {limit} bytes ({DECODED_COST_FACTOR}x the "
            f"{max_body_bytes}-byte body limit): send smaller batches"
        )
    hold.take(cost - hold.held)
    return cost
