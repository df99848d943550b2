"""examples/_prometheus_stack.py: the configs ``make e2e-prometheus`` derives from the shipped files, and the
socket table it reads to check that every process listens on loopback (the run itself is the make target)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from examples._prometheus_stack import (
    ALERTMANAGER_EXAMPLE,
    EXAMPLE_WEBHOOK_URL,
    RULES,
    alertmanager_config,
    listening_addresses,
    prometheus_config,
    rules_with_hold,
)
from examples.e2e_prometheus import main


def test_only_the_holds_of_the_shipped_rules_change() -> None:
    shipped = RULES.read_text(encoding="utf-8")
    cut, changed = rules_with_hold(shipped, "10s")
    holds = re.findall(r"^\s+for: (\S+)$", shipped, flags=re.MULTILINE)
    assert changed == len(holds) >= 4
    assert re.findall(r"^\s+for: (\S+)$", cut, flags=re.MULTILINE) == ["10s"] * changed
    assert re.sub(r"for: \S+", "for: X", cut) == re.sub(r"for: \S+", "for: X", shipped)


@pytest.mark.parametrize("hold", ["", "10", "1m; rm", "keep"])
def test_a_hold_that_is_not_a_duration_is_refused(hold: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        rules_with_hold("for: 5m", hold)


def test_the_alertmanager_example_gets_the_receivers_url_and_nothing_else() -> None:
    example = ALERTMANAGER_EXAMPLE.read_text(encoding="utf-8")
    config = alertmanager_config(example, "http://127.0.0.1:40123/alerts")
    assert EXAMPLE_WEBHOOK_URL not in config
    assert config.replace("http://127.0.0.1:40123/alerts", EXAMPLE_WEBHOOK_URL) == example
    with pytest.raises(ValueError, match="expected once"):
        alertmanager_config(example.replace(EXAMPLE_WEBHOOK_URL, "http://elsewhere"), "http://x")


def test_the_prometheus_config_scrapes_the_app_and_alerts_through_alertmanager(tmp_path: Path) -> None:
    config = json.loads(
        prometheus_config(app="127.0.0.1:1", alertmanager="127.0.0.1:2", rules=tmp_path / "r.yml", job="bot")
    )
    assert config["global"] == {"scrape_interval": "1s", "evaluation_interval": "1s"}
    assert config["rule_files"] == [str(tmp_path / "r.yml")]
    assert config["scrape_configs"] == [{"job_name": "bot", "static_configs": [{"targets": ["127.0.0.1:1"]}]}]
    assert config["alerting"]["alertmanagers"] == [{"static_configs": [{"targets": ["127.0.0.1:2"]}]}]


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads Linux's /proc socket tables")
def test_listening_addresses_sees_this_process_listen_and_nothing_it_only_connects() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            found = listening_addresses()
            assert ("127.0.0.1", port) in found
            assert ("127.0.0.1", client.getsockname()[1]) not in found
    assert ("127.0.0.1", port) not in listening_addresses()


@pytest.mark.skipif(not Path("/proc/self/net/tcp6").exists(), reason="reads Linux's /proc socket tables")
def test_listening_addresses_reads_ipv6_listeners() -> None:
    try:
        server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        server.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with server:
        server.listen()
        assert ("::1", server.getsockname()[1]) in listening_addresses()


@pytest.mark.parametrize(
    "argv", [["--hold", "5 minutes"], ["--pace", "0"], ["--degraded", "0"], ["--degrade-rate", "0"]]
)
def test_wrong_options_are_refused_before_anything_starts(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
