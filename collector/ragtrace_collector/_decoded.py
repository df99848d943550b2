"""The decoded-size bound: what a body will take once decoded, held against the in-flight budget before decoding.

Wire bytes are a poor measure of memory: 8 MiB of empty spans decode to some 700 MiB. Both receivers call
``hold_decoded`` after the body is read and before it is decoded. It estimates the decoded size
(``_otlp.decoded_cost``: the OTLP messages and JSON tokens counted without allocating them), refuses a body whose
estimate passes ``DECODED_COST_FACTOR`` times ``--max-body-bytes`` with ``DecodedTooLarge`` (HTTP 413, gRPC
``RESOURCE_EXHAUSTED`` without a retry delay: the same body would be refused again; its sender should send
smaller batches), and otherwise holds the estimate (less what the request holds already) against the in-flight
budget, which answers ``OverBudget`` (retryable) when other requests hold too much.

The estimate is taken in two steps, because the exact walk costs some 60% of decoding a real export: first
the quick bound (``quick=True``: a shallow walk and one C pass, a few milliseconds for 4 MB), held when it is under
the limit and fits the budget; only when it does not is the exact walk made, and its (lower) estimate held or
refused. Both are upper estimates of what decoding takes, so the bound below holds whichever was held.

So one request costs at most ``DECODED_COST_FACTOR`` times the body limit, and all requests together at most the
in-flight budget (``--max-inflight-bytes``, four body limits by default), or one request alone.
"""

from __future__ import annotations

import asyncio

from ragtrace_collector._budget import Hold, OverBudget
from ragtrace_collector._otlp import decoded_cost

__all__ = ["DECODED_COST_FACTOR", "DecodedTooLarge", "hold_decoded"]

DECODED_COST_FACTOR = 3
"""Most one request may decode to, in body limits (the estimate errs high: a real export of spans is counted at
1.2-1.6 times what it takes, so a real export up to about a third of the body limit is always accepted)."""

_INLINE_BYTES = 64 * 1024
"""A body up to this size is walked exactly on the event loop (well under a millisecond); a larger one in a
thread."""

_QUICK_INLINE_BYTES = 1024 * 1024
"""A body up to this size gets its quick bound on the event loop (about a millisecond); a larger one in a thread."""


class DecodedTooLarge(Exception):
    """The body would decode to more than one request may take: refused, not to be retried as it is."""


async def hold_decoded(hold: Hold, body: bytes, *, export: str, as_json: bool, max_body_bytes: int) -> int:
    """Estimate what ``body`` (an export of ``export``: traces, logs, metrics) decodes to and hold it through
    ``hold``; return the estimate. Raise ``DecodedTooLarge`` past the per-request bound, ``OverBudget`` past the
    in-flight budget (holding nothing more either way)."""
    limit = DECODED_COST_FACTOR * max_body_bytes
    # The quick bound is one C pass (some 1 ms per MB) and a walk of a few turns per span: inline under a MiB.
    if len(body) <= _QUICK_INLINE_BYTES:
        quick = decoded_cost(body, export=export, as_json=as_json, stop_above=limit, quick=True)
    else:
        quick = await asyncio.to_thread(
            decoded_cost, body, export=export, as_json=as_json, stop_above=limit, quick=True
        )
    if quick <= limit:
        try:
            hold.take(quick - hold.held)
        except OverBudget:
            if as_json:  # JSON's estimate has no finer step
                raise
        else:
            return quick
    if as_json:
        cost = quick
    elif len(body) <= _INLINE_BYTES:
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
