"""The processor at interpreter exit: drain pending scoring while thread pools still take work, then shut down.

``drain_ref`` and ``shutdown_ref`` hold the processor weakly, so registering them keeps no processor alive;
they call its public ``drain_at_exit`` and ``shutdown`` (this module imports the processor's type only).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragtrace.scoring.processor import ScoringSpanProcessor


def shutdown_ref(ref: weakref.ref[ScoringSpanProcessor]) -> None:
    processor = ref()
    if processor is not None:
        processor.shutdown()


def drain_ref(ref: weakref.ref[ScoringSpanProcessor]) -> None:
    processor = ref()
    if processor is not None:
        processor.drain_at_exit()


def before_thread_pools_close(callback: Callable[[], None]) -> None:
    """Run ``callback`` at interpreter exit while thread pools still take work.

    ``atexit`` handlers run after ``concurrent.futures`` has closed every pool, so scoring drained
    there cannot hand work to a thread (the offline judge's model runs in one) or resolve a host name
    (asyncio's getaddrinfo does): every metric failed with "cannot schedule new futures after
    interpreter shutdown" for an app that never called shutdown(). ``threading._register_atexit`` is
    the earlier hook ``concurrent.futures`` itself uses to close its pools; later registrations run
    first, so pending records are scored (and exported) before the pools close. The final shutdown
    stays with ``atexit``, so spans that end after this drain are still exported once. A Python
    without the hook drains at ``atexit`` as before.
    """
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        return
    # ``concurrent.futures`` registers its own hook when its thread module is first imported, which can
    # come after this processor is built (asyncio imports it on a loop's first executor job): importing
    # it now registers that hook first, so it runs after ``callback``.
    import concurrent.futures.thread  # noqa: F401

    with contextlib.suppress(RuntimeError):  # the interpreter is already shutting down
        register(callback)
