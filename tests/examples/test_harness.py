"""examples/_harness.py: the child processes of the demo and the e2e check are stopped, always."""

from __future__ import annotations

import json
import signal
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from examples._harness import Child, ChildFailed, Children, WebhookInbox, free_port

SLEEPER = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"]
STUBBORN = [
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(120)",
]


def test_children_are_stopped_newest_first_on_close(tmp_path: Path) -> None:
    with Children() as children:
        first = children.start("first", SLEEPER, tmp_path / "first.log")
        second = children.start("second", SLEEPER, tmp_path / "second.log")
        first.check_alive()
        second.check_alive()
    assert first.process.returncode == -signal.SIGTERM
    assert second.process.returncode == -signal.SIGTERM


def test_children_are_stopped_when_the_block_raises(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), Children() as children:
        child = children.start("sleeper", SLEEPER, tmp_path / "sleeper.log")
        raise KeyboardInterrupt
    assert child.process.returncode is not None


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    child = Child("stubborn", STUBBORN, tmp_path / "stubborn.log")
    try:
        # SIGTERM before the handler is installed would end it normally: wait for its "up" line first.
        deadline = time.monotonic() + 30
        while "up" not in (tmp_path / "stubborn.log").read_text() and time.monotonic() < deadline:
            child.check_alive()
            time.sleep(0.01)  # polling a child's start-up; nothing is asserted about time
        assert child.stop(grace=0.5) == -signal.SIGKILL
    finally:
        child.stop(grace=0.1)


def test_wait_http_reports_a_child_that_died_with_its_log(tmp_path: Path) -> None:
    child = Child("broken", [sys.executable, "-c", "raise SystemExit('bad flag --nope')"], tmp_path / "broken.log")
    try:
        with pytest.raises(ChildFailed, match=r"broken exited with status 1(.|\n)*bad flag --nope"):
            child.wait_http(f"http://127.0.0.1:{free_port()}/", timeout=30)
    finally:
        child.stop()


def test_wait_http_returns_once_the_server_answers(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)]
    with Children() as children:
        server = children.start("http.server", argv, tmp_path / "server.log")
        server.wait_http(f"http://127.0.0.1:{port}/", timeout=30)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
            assert reply.status == 200


def test_webhook_inbox_keeps_every_posted_body() -> None:
    inbox = WebhookInbox()
    try:
        for state in ("OK", "ALERT"):
            body = json.dumps({"text": f"*{state}* spike", "alert": {"state": state}}).encode()
            request = urllib.request.Request(inbox.url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=5) as reply:
                assert reply.status == 204
        found = inbox.wait_for(lambda b: b["alert"]["state"] == "ALERT", timeout=5)
        assert found is not None and found["text"] == "*ALERT* spike"
        assert inbox.wait_for(lambda b: b["alert"]["state"] == "NO_DATA", timeout=0.1) is None
        assert len(inbox.received) == 2
    finally:
        inbox.close()
