"""Work run on several threads at once, for the tests that a model loads once however many threads ask."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def at_once(work: Callable[[int], T], threads: int) -> list[T]:
    """``work(i)`` for i in ``range(threads)``, each on its own thread, all released together by a barrier;
    their results in finishing order. The first error a thread raised is raised here."""
    barrier = threading.Barrier(threads)
    results: list[T] = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            results.append(work(i))
        except BaseException as error:  # collected and re-raised by the calling thread
            errors.append(error)

    started = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    if errors:
        raise errors[0]
    return results
