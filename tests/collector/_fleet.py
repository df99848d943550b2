"""A fleet on this machine for the tests: ragtrace-collector replicas (real ``serve --store postgresql://...``
processes) behind a real haproxy running the shipped ``collector/deploy/haproxy.cfg``, all on 127.0.0.1.

Every process is the test's: replicas are started, ``kill -9``-ed and restarted by it, and everything is stopped
when the block ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.collector._ports import free_port

__all__ = ["Fleet", "Replica", "haproxy_bin", "running_fleet"]

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CONFIG = ROOT / "collector" / "deploy" / "haproxy.cfg"
_LEADER = re.compile(r"^ragtrace_collector_leader (\d)", re.MULTILINE)


def haproxy_bin() -> str | None:
    """Debian's haproxy, or None when it is not installed (``make system-deps`` installs it)."""
    return shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)


def _until(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Replica:
    """One ``serve`` process: its ports, and its process while it runs."""

    name: str
    http_port: int
    grpc_port: int
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "ragtrace_collector", "serve", *self.args,
                 "--port", str(self.http_port), "--grpc-port", str(self.grpc_port)],
                stdout=out, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip
        _until(self.healthy, 90, f"replica {self.name} to answer /healthz")

    def healthy(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"replica {self.name} exited: {self.log.read_text(errors='replace')[-2000:]}")
            return False
        try:
            return httpx.get(f"http://127.0.0.1:{self.http_port}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def leads(self) -> bool | None:
        """Whether ``/metrics`` says it leads; None when it does not answer."""
        if self.process is None or self.process.poll() is not None:
            return None
        try:
            text = httpx.get(f"http://127.0.0.1:{self.http_port}/metrics", timeout=2).text
        except httpx.HTTPError:
            return None
        found = _LEADER.search(text)
        return found is not None and found.group(1) == "1"

    def kill(self) -> None:
        """``kill -9``: no chance to finish a request, commit, or say goodbye."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


@dataclass
class Fleet:
    """The replicas and the balancer in front of them."""

    replicas: list[Replica]
    http_port: int
    grpc_port: int
    haproxy: subprocess.Popen[bytes] | None = None
    samples: list[int] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def leaders(self) -> list[Replica]:
        """The replicas whose ``/metrics`` say they lead now."""
        return [r for r in self.replicas if r.leads()]

    def leader(self, seconds: float = 60) -> Replica:
        """The one leader, once there is one."""
        found: list[Replica] = []

        def one() -> bool:
            found[:] = self.leaders()
            return len(found) == 1

        _until(one, seconds, "one leader")
        return found[0]


@contextlib.contextmanager
def running_fleet(store_url: str, workdir: Path, *, replicas: int = 3, extra: tuple[str, ...] = ()) -> Iterator[Fleet]:
    """Start ``replicas`` replicas on ``store_url`` and haproxy in front (the shipped config); stop all after."""
    binary = haproxy_bin()
    if binary is None:
        raise RuntimeError("Debian's haproxy is not installed: run `make system-deps`")
    started: list[Replica] = []
    fleet = Fleet([], free_port(), free_port())
    try:
        for i in range(1, replicas + 1):
            replica = Replica(
                f"r{i}", free_port(), free_port(), ["--store", store_url, "--log-level", "INFO", *extra],
                workdir / f"r{i}.log",
            )  # fmt: skip
            replica.start()
            started.append(replica)
        fleet.replicas = started
        env = {**os.environ, "RAGTRACE_LB_HTTP": f"127.0.0.1:{fleet.http_port}",
               "RAGTRACE_LB_GRPC": f"127.0.0.1:{fleet.grpc_port}"}  # fmt: skip
        for i, replica in enumerate(started, start=1):
            env[f"RAGTRACE_REPLICA_{i}_HTTP"] = f"127.0.0.1:{replica.http_port}"
            env[f"RAGTRACE_REPLICA_{i}_GRPC"] = f"127.0.0.1:{replica.grpc_port}"
        with (workdir / "haproxy.log").open("ab") as out:
            fleet.haproxy = subprocess.Popen(
                [binary, "-db", "-f", str(HAPROXY_CONFIG)], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        _until(lambda: _answers(fleet.endpoint), 30, "haproxy to answer")
        yield fleet
    finally:
        if fleet.haproxy is not None and fleet.haproxy.poll() is None:
            fleet.haproxy.terminate()
            fleet.haproxy.wait(30)
        for replica in started:
            replica.stop()


def _answers(endpoint: str) -> bool:
    try:
        return httpx.get(f"{endpoint}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
