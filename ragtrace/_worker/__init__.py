"""The background scorer: one daemon thread running its own asyncio loop.

The request path only calls ``submit`` (a lock, a length check, a deque append and, when the loop is
idle, one wake-up), so the app never waits for a judge. The loop scores up to ``max_concurrency``
jobs at once; every job leaves exactly once through ``emit``:

* scored in time -> the scored copy of its span;
* still waiting when its hold deadline passes -> the original, unscored, decision ``timeout`` (it is
  not scored at all: nothing was computed yet, and scoring it would only feed a growing backlog);
* still being scored at its deadline -> the original, unscored, decision ``timeout``; when scoring
  ends the scores go out on a carrier span linked to it;
* ``flush``/``shutdown`` -> jobs finished while the budget lasts, the rest exported unscored.

``_held`` is the single source of truth for "not yet exported": a job leaves it, under the lock,
exactly when its span is handed to ``emit``. That makes every exit path (deadline, flush, a wedged
loop, fork) exactly-once by construction.

After ``fork`` the child discards the parent's jobs without exporting them (they are the parent's
and the parent exports them) and starts its own thread and loop on its first ``submit``.

The parts: ``_worker.py`` (``Worker``: ``submit``, ``flush``, ``shutdown``, the drain and the fork hook,
what any thread calls), ``_scheduling.py`` (what runs on the loop thread: starting jobs, deadlines,
scoring one job, settling a drain), ``_ledger.py`` (the state shared under one lock, and the only exits
from ``_held``), ``_loop_thread.py`` (the daemon thread and its loop: start, stop within a budget,
abandon in a forked child). ``Worker`` builds on ``Scheduler``, which builds on ``Ledger``: one object,
one lock, its parts in three files.
"""

from __future__ import annotations

from ragtrace._worker._worker import Worker

__all__ = ["Worker"]
