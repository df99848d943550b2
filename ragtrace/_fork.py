"""The fork registry: what each part of ragtrace renews in a forked child, run from one ``os.register_at_fork`` hook.

A lock another thread held when the app forked stays held forever in the child, where that thread does
not exist; a worker's thread does not exist there either. Each module that owns such state registers
how to renew it here, once, instead of calling ``os.register_at_fork`` itself:

* ``at_fork_in_child(hook)``: a module-level hook (usable as a decorator), run in every child;
* ``at_fork_in_child_of(owner, hook)``: ``hook(owner)`` for an object, held weakly, so a processor that
  is gone is neither kept alive nor called, and its entry is dropped.

Hooks run in the order they were registered; one that raises is logged and the others still run (a
child that cannot renew one part must still renew the rest).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["at_fork_in_child", "at_fork_in_child_of"]

_log = logging.getLogger("ragtrace")

T = TypeVar("T")

# Every hook in registration order: a plain function, or (weak owner, hook) for an object's hook.
_hooks: list[Callable[[], None] | tuple[weakref.ref[Any], Callable[[Any], None]]] = []


def at_fork_in_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook()`` in every forked child; returns ``hook`` so it can decorate a module function."""
    _hooks.append(hook)
    return hook


def at_fork_in_child_of(owner: T, hook: Callable[[T], None]) -> None:
    """Run ``hook(owner)`` in every forked child while ``owner`` is alive (it is held weakly)."""
    # Entries of owners that are gone are dropped here, so a process that builds many processors
    # does not accumulate them.
    _hooks[:] = [h for h in _hooks if not isinstance(h, tuple) or h[0]() is not None]
    _hooks.append((weakref.ref(owner), hook))


def _run_in_child() -> None:
    for entry in list(_hooks):
        try:
            if isinstance(entry, tuple):
                owner = entry[0]()
                if owner is not None:
                    entry[1](owner)
            else:
                entry()
        except Exception:
            _log.exception("ragtrace: renewing state in a forked child failed")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_in_child)
