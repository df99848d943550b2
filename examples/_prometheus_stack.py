"""Prometheus and Alertmanager for ``e2e_prometheus.py``: their configs, their processes, their HTTP APIs.

Both run from Debian's packages (``prometheus``, ``prometheus-alertmanager``) as children of the script,
on 127.0.0.1 with their state in a temporary directory. The configs are built here from the shipped
files in ``collector/deploy/prometheus/``, changed only where a test must: the webhook URL (the script's
own receiver) and, unless asked to keep them, the ``for:`` holds of the alerting rules. The pure parts
(config text, the ``/proc`` socket table) are tested in ``tests/examples/test_prometheus_stack.py``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examples._harness import Child, Children, free_port

DEPLOY = Path(__file__).resolve().parent.parent / "collector" / "deploy" / "prometheus"
RULES = DEPLOY / "ragtrace-rules.yml"
"""The shipped recording and alerting rules."""
ALERTMANAGER_EXAMPLE = DEPLOY / "alertmanager.yml"
"""The shipped Alertmanager example."""
EXAMPLE_WEBHOOK_URL = "http://127.0.0.1:9095/ragtrace-alerts"
"""The webhook URL the example routes ragtrace's alerts to; the script puts its receiver's in its place."""

_HOLD = re.compile(r"^(?P<indent>\s+)for: *\S+ *$", re.MULTILINE)


def rules_with_hold(text: str, hold: str) -> tuple[str, int]:
    """``text`` (a rules file) with every alert's ``for:`` set to ``hold``; returns it and how many changed.

    Only the hold changes, so the expressions, labels and annotations under test are the shipped ones;
    the production holds (5 to 15 minutes) are checked by promtool's unit tests instead.
    """
    if not re.fullmatch(r"\d+[smh]", hold):
        raise ValueError(f"hold {hold!r}: give a Prometheus duration such as 10s")
    return _HOLD.subn(lambda m: f"{m['indent']}for: {hold}", text)


def alertmanager_config(text: str, webhook_url: str) -> str:
    """The Alertmanager example ``text`` with its webhook pointed at ``webhook_url``.

    Raises ``ValueError`` unless the example's URL occurs exactly once, so a changed example cannot
    leave the check sending to nowhere.
    """
    count = text.count(EXAMPLE_WEBHOOK_URL)
    if count != 1:
        raise ValueError(f"the Alertmanager example names {EXAMPLE_WEBHOOK_URL} {count} times, expected once")
    return text.replace(EXAMPLE_WEBHOOK_URL, webhook_url)


def prometheus_config(*, app: str, alertmanager: str, rules: Path, job: str, interval: str = "1s") -> str:
    """A Prometheus config (JSON, which is YAML) scraping ``app`` and alerting through ``alertmanager``."""
    return json.dumps(
        {
            "global": {"scrape_interval": interval, "evaluation_interval": interval},
            "rule_files": [str(rules)],
            "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [app]}]}],
        },
        indent=2,
    )


def listening_addresses(pid: int | str = "self", proc: Path = Path("/proc")) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket process ``pid`` listens on, read from ``/proc``.

    A socket belongs to the process when one of its file descriptors links to the socket's inode.
    """
    inodes = set()
    for fd in (proc / str(pid) / "fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table in ("tcp", "tcp6"):
        path = proc / str(pid) / "net" / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                found.add(_address(local))
    return found


def _address(field: str) -> tuple[str, int]:
    """``0100007F:1F90`` (as in /proc/net/tcp: 32-bit words in host order, little-endian here) to (ip, port)."""
    address, port = field.split(":")
    raw = bytes.fromhex(address)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words)), int(port, 16)


class ApiError(RuntimeError):
    """Prometheus answered an API call with an error; the message quotes its reason."""


def _get_json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=10.0) as reply:
            return json.load(reply)
    except urllib.error.HTTPError as error:
        raise ApiError(f"{url}: {error.code} {error.read().decode('utf-8', 'replace')}") from error


@dataclass(frozen=True)
class Prometheus:
    """A running Prometheus's HTTP API."""

    child: Child
    url: str

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query: the result vector (``[{"metric": {...}, "value": [t, "v"]}, ...]``)."""
        body = _get_json(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        """The value of a query that returns one sample, or None when it returns none."""
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def rules(self) -> dict[str, dict[str, Any]]:
        """Every loaded rule by name: ``state`` (alerts), ``health``, ``lastEvaluation``, ``alerts``..."""
        body = _get_json(f"{self.url}/api/v1/rules")
        return {rule["name"]: rule for group in body["data"]["groups"] for rule in group["rules"]}


def start_alertmanager(children: Children, binary: str, config: Path, storage: Path, log: Path) -> tuple[Child, str]:
    """Alertmanager on a free loopback port, with no cluster listener (``--cluster.listen-address=``)."""
    port = free_port()
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.path={storage}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # a single instance: no gossip port on any interface
    ]
    child = children.start("alertmanager", argv, log)
    url = f"http://127.0.0.1:{port}"
    child.wait_http(f"{url}/-/ready", timeout=60.0)
    return child, url


def start_prometheus(children: Children, binary: str, config: Path, storage: Path, log: Path) -> Prometheus:
    """Prometheus on a free loopback port, its TSDB in ``storage``."""
    port = free_port()
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={storage}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    child = children.start("prometheus", argv, log)
    url = f"http://127.0.0.1:{port}"
    child.wait_http(f"{url}/-/ready", timeout=60.0)
    return Prometheus(child, url)
