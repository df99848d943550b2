"""``Leadership``: which process runs the work that must run once per store (the alert watcher and its sinks; the
Phoenix annotator, under a lock of its own so that it need not share the watcher's replica).

On PostgreSQL, several replicas share one store and each runs a watcher; the one that holds a session-level
advisory lock (``pg_try_advisory_lock``) on a dedicated session leads. The leader writes its state through that
same session, so a leader that died, or lost its connection, cannot commit: its session is gone, and the lock
with it. PostgreSQL frees the lock when the session ends, at once when the process dies (the kernel closes its
socket), and within ``keepalive_seconds`` when the leader's host vanishes from the network (TCP keepalives on
both ends); a statement that hangs is cut by ``statement_timeout``. Another replica takes over at its next try.

On SQLite there is one ``serve`` per file, so it always leads, with a connection of its own per round.

``lead()`` is used once per round: ``with leadership.lead() as conn:`` gives the connection to read and write
through while this process leads, or None when another does. ``gained`` tells whether this round began a term
(a new leader reloads what the previous one left in the store before it acts).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import zlib
from collections.abc import Iterator
from typing import Any, Final

from ragtrace_collector._store.connection import Target, connect, is_postgres
from ragtrace_collector._store.urls import redacted_url

__all__ = ["LEADER_LOCK", "Leadership", "phoenix_lock"]

_log = logging.getLogger("ragtrace_collector")

LEADER_LOCK: Final = 0x72616C64  # "rald": the advisory lock of the leader, one number for every replica
_PHOENIX_LOCKS: Final = 0x72617068  # "raph": the advisory locks of the replicas that post to a Phoenix


def phoenix_lock(url: str) -> int:
    """The advisory lock of the replica that posts annotations to ``url``: one per Phoenix, so that two
    annotation URLs may be served by different replicas."""
    return (_PHOENIX_LOCKS << 32) | zlib.crc32(url.encode())


class Leadership:
    """Leadership of the store ``target`` for this process (see the module's doc): of the work that
    ``lock`` (an advisory lock's number) stands for, which ``role`` names in the log."""

    def __init__(
        self,
        target: Target,
        *,
        lock: int = LEADER_LOCK,
        role: str = "the alert watcher",
        keepalive_seconds: int = 10,
        statement_timeout_seconds: int = 30,
    ) -> None:
        self.target = target
        self._key = lock
        self._role = role
        self._postgres = is_postgres(target)
        self._keepalive = max(3, keepalive_seconds)
        self._statement_timeout = statement_timeout_seconds
        self._session: Any = None
        self._lock = threading.Lock()
        self.leading = False
        """Whether this process led in its last round."""
        self.gained = False
        """Whether the last round began a term (the first round of SQLite's one leader, too)."""

    @contextlib.contextmanager
    def lead(self) -> Iterator[Any]:
        """The connection of this round while this process leads, else None (see the module's doc)."""
        with self._lock:
            if not self._postgres:
                conn = connect(self.target, create=True)
                self.gained, self.leading = not self.leading, True
                try:
                    yield conn
                finally:
                    conn.close()
                return
            was_leading = self.leading
            self.leading, self.gained = self._hold()
            if self.gained:
                _log.info("this replica leads %s: it runs %s", redacted_url(str(self.target)), self._role)
            elif was_leading and not self.leading:
                _log.warning(
                    "this replica no longer runs %s for %s: another takes over",
                    self._role,
                    redacted_url(str(self.target)),
                )
            yield self._session if self.leading else None

    def _hold(self) -> tuple[bool, bool]:
        """Keep or take the lock: (leading, a new term). Taking it on a new session is a new term even when this
        process led before: what the old session did not commit is lost, and the store says where things stand."""
        if self._session is not None:
            try:
                self._session.execute("SELECT 1").fetchone()
                return True, False  # the session, and so the lock, is alive: the term goes on
            except Exception:
                self._drop()
        try:
            self._session = self._connect()
            held = bool(self._session.execute("SELECT pg_try_advisory_lock(?)", (self._key,)).fetchone()[0])
        except Exception:
            _log.warning("could not reach %s to lead", redacted_url(str(self.target)), exc_info=True)
            self._drop()
            return False, False
        if not held:
            self._drop()
        return held, held

    def _connect(self) -> Any:
        from ragtrace_collector._store.migrations import migrate
        from ragtrace_collector._store.postgres import connect_postgres

        interval = max(1, self._keepalive // 5)
        # Both ends watch the connection: the client's keepalives end a session to a vanished server, the
        # server's (set per session) free the lock of a vanished leader.
        session = connect_postgres(
            str(self.target),
            timeout=self._statement_timeout,
            options=(
                f"-c statement_timeout={self._statement_timeout * 1000} "
                f"-c tcp_keepalives_idle={interval} -c tcp_keepalives_interval={interval} "
                f"-c tcp_keepalives_count={max(1, self._keepalive // interval - 1)}"
            ),
            keepalives={"keepalives": 1, "keepalives_idle": interval, "keepalives_interval": interval},
        )
        migrate(session)
        return session

    def _drop(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()

    def close(self) -> None:
        """End the term (the lock goes with the session) and close (idempotent)."""
        with self._lock:
            self._drop()
            self.leading = False
