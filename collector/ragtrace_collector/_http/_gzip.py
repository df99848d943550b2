"""Inflating a gzip request body: every member, in bounded chunks, each held against the budget before the next.

Pure but for the ``take`` callback; it refuses a body with ``Reject`` (400 broken, 413 too large once inflated).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from google.rpc import code_pb2

from ragtrace_collector._http._replies import Reject

__all__ = ["gunzip"]

_GZIP_MAGIC = b"\x1f\x8b"
# Compressed bytes handed to zlib at a time. At a member's end zlib copies the input it did not use; handing it
# the whole rest of the body made a body of many small members cost time quadratic in its size.
_GZIP_PIECE_BYTES = 16 * 1024
_GZIP_OUT_BYTES = 256 * 1024
"""Inflated bytes zlib may produce in one call: each such chunk is taken from the in-flight budget before the
next is inflated, so a body refused for the budget has allocated at most this much past it."""


def gunzip(body: bytes, limit: int, take: Callable[[int], None]) -> bytes:
    """Every member of a gzip body, concatenated (RFC 1952 section 2.2: a gzip file is a series of members).

    Raise 400 on broken, truncated or trailing non-gzip data (NUL padding after the last member is tolerated,
    as gzip(1) and Python's gzip module do), 413 once the output passes ``limit``. The output is inflated in
    chunks of at most ``_GZIP_OUT_BYTES``, each handed to ``take`` (which holds it against the in-flight budget,
    or raises to refuse the request) before the next is inflated. Time is linear in the body.
    """
    parts: list[bytes] = []
    size = 0
    pos = 0  # start of the input not yet consumed
    view = memoryview(body)  # slices share the body: no copy
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        output_full = False  # the last call stopped at its output bound: zlib may have more without more input
        while not inflater.eof:
            piece = view[pos : pos + _GZIP_PIECE_BYTES]
            if not piece and not output_full:
                raise Reject(400, code_pb2.INVALID_ARGUMENT, "gzip body is truncated")
            room = min(limit + 1 - size, _GZIP_OUT_BYTES)  # always >= 1: 0 would mean "no bound"
            try:
                # Bounded decompression: a small gzip bomb must not become a huge allocation.
                data = inflater.decompress(piece, room)
            except zlib.error as exc:
                raise Reject(400, code_pb2.INVALID_ARGUMENT, f"body is not valid gzip: {exc}") from None
            size += len(data)
            if size > limit:
                raise Reject(413, code_pb2.RESOURCE_EXHAUSTED, f"decompressed body is over the {limit}-byte limit")
            take(len(data))
            parts.append(data)
            output_full = len(data) == room
            # The input zlib did not use: past the member's end (unused_data), or left for want of output room
            # (unconsumed_tail, handed to it again from the body). At the end, unconsumed_tail may repeat
            # unused_data rather than be empty.
            left = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
            pos += len(piece) - len(left)
        if not body.startswith(_GZIP_MAGIC, pos):
            if body.count(0, pos) == len(body) - pos:  # nothing left, or NUL padding only
                return b"".join(parts)
            raise Reject(
                400, code_pb2.INVALID_ARGUMENT, f"{len(body) - pos} bytes of trailing data after the gzip body"
            )
