"""The scorer's thread: a daemon thread running an asyncio loop of its own.

``start`` makes the loop and starts the thread that runs it until ``stop``. The thread closes its loop itself
when the loop stops, so ``stop`` waits for it only until its deadline and never leaves a loop open behind it.
A forked child keeps the parent's loop referenced (``abandon``) and neither runs nor closes it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from ragtrace._jobs import wait_seconds

__all__ = ["abandon", "start", "stop"]

# Loops abandoned in a forked child: kept referenced so their finaliser never runs there (it would
# warn about an unclosed loop whose file descriptors belong to the parent).
_ABANDONED: list[Any] = []


def start() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """A new event loop and the started daemon thread ``ragtrace-scorer`` that runs it until it is stopped."""
    # A daemon thread: it must never keep the interpreter alive; ``shutdown`` (called by the
    # TracerProvider's and our own atexit hooks, which run while daemon threads still live)
    # drains it. A policy the app installed (uvloop) applies to this loop too, which is fine.
    loop = asyncio.new_event_loop()

    def _run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            # Only ``shutdown`` stops the loop; closing it here lets shutdown return without
            # waiting for the thread when its budget is spent.
            loop.close()

    thread = threading.Thread(target=_run, name="ragtrace-scorer", daemon=True)
    try:
        thread.start()
    except BaseException:
        loop.close()
        raise
    return loop, thread


def stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread, deadline: float) -> None:
    """Stop the loop and wait for its thread until ``deadline`` (``time.monotonic()``); close the loop if it ended."""
    if thread.is_alive():
        loop.call_soon_threadsafe(loop.stop)
        # Only what is left of the budget: the thread closes its loop itself once it stops, so
        # nothing is left open when it outlives this wait.
        thread.join(wait_seconds(deadline - time.monotonic()))
    if not thread.is_alive() and not loop.is_closed():
        loop.close()


def abandon(loop: asyncio.AbstractEventLoop) -> None:
    """Forget a loop the parent process runs, in a forked child, without closing it there."""
    _ABANDONED.append(loop)
