"""One leader per store: replicas of a PostgreSQL store elect the one that runs the watcher with an advisory lock
held on a dedicated session; a leader that stops, is killed, or loses its session is replaced, and a leader
without its session cannot commit. On SQLite the one ``serve`` always leads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ragtrace_collector._store.leadership import Leadership

_HOLD = """
import sys
from ragtrace_collector._store.leadership import Leadership
leadership = Leadership(sys.argv[1])
with leadership.lead() as conn:
    print("leading" if conn is not None else "not leading", flush=True)
sys.stdin.read()  # holds the lead until killed
"""


def _leads(leadership: Leadership) -> bool:
    with leadership.lead() as conn:
        return conn is not None


def _until_leads(leadership: Leadership, seconds: float = 60.0) -> float:
    """Try to lead every 50 ms until it does; how long that took (fails the test past ``seconds``)."""
    started = time.monotonic()
    while not _leads(leadership):
        assert time.monotonic() - started < seconds, "no replica took over the lead"
        time.sleep(0.05)
    return time.monotonic() - started


def test_one_replica_leads_and_another_takes_over_when_it_stops(postgres_server: Any) -> None:
    url = postgres_server.database()
    first, second = Leadership(url), Leadership(url)
    try:
        assert _leads(first) and first.gained
        assert not _leads(second) and not second.leading
        assert _leads(first) and not first.gained  # the term goes on
        first.close()
        assert _leads(second) and second.gained
        assert not _leads(first)
    finally:
        first.close()
        second.close()


def test_a_leader_killed_with_sigkill_frees_the_lead_for_another(postgres_server: Any) -> None:
    url = postgres_server.database()
    waiting = Leadership(url)
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "leading"
            assert not _leads(waiting)
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(30)
            _until_leads(waiting)  # the killed process's socket closes at once: its session and lock end with it
            assert waiting.gained
        finally:
            if holder.poll() is None:
                holder.kill()
            waiting.close()


def test_a_leader_whose_session_ended_cannot_commit_and_leads_again_only_by_the_lock(postgres_server: Any) -> None:
    url = postgres_server.database()
    leader, other = Leadership(url), Leadership(url)
    try:
        with leader.lead() as conn:
            assert conn is not None
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            postgres_server.psql(url, f"SELECT pg_terminate_backend({pid})")
            with pytest.raises(Exception, match=r"terminat|closed|connection"), conn:
                conn.execute("INSERT INTO alert_silences (rule, starts_ns, ends_ns) VALUES ('x', 0, 1)")
        assert postgres_server.psql(url, "SELECT count(*) FROM alert_silences") == [(0,)]
        # The lock went with the session: whoever asks first leads now.
        assert _leads(other) and other.gained
        assert not _leads(leader) and not leader.leading
    finally:
        leader.close()
        other.close()


def test_on_sqlite_the_one_serve_always_leads(tmp_path: Path) -> None:
    leadership = Leadership(tmp_path / "c.db")
    assert _leads(leadership) and leadership.gained
    assert _leads(leadership) and not leadership.gained
    leadership.close()


def test_a_new_session_is_a_new_term_even_for_the_same_replica(postgres_server: Any) -> None:
    """A leader that lost its session and takes the lock again on a new one begins a new term (it reloads the state
    from the store): what the old session did not commit must not count as done."""
    url = postgres_server.database()
    leader = Leadership(url)
    try:
        with leader.lead() as conn:
            pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        postgres_server.psql(url, f"SELECT pg_terminate_backend({pid})")
        assert _leads(leader) and leader.gained
        assert _leads(leader) and not leader.gained
    finally:
        leader.close()
