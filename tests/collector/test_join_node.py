"""A RAG app in another language: a Node.js script traced with the OpenTelemetry JS SDK and OpenInference's JS
semantic conventions, sending OTLP/HTTP (JSON) to a real collector, is joined and scored server-side.

The npm packages (``tests/collector/node/package.json``, pinned by its lock file) are installed with ``npm ci``
into ``.ragtrace/node/`` (git-ignored), once per lock file. Skips with a message when ``node`` or ``npm`` is
missing (``make test`` installs them from Debian) or when npm cannot install the packages.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ragtrace import semconv
from ragtrace.metrics import build_suite
from tests.collector._join import HOUR, LIMITS, settle
from tests.collector._spans import start_collector
from tests.collector._stores import rows

ROOT = Path(__file__).resolve().parents[2]
APP = Path(__file__).resolve().parent / "node"
MODULES = ROOT / ".ragtrace" / "node"
pytestmark = pytest.mark.usefixtures("offline_judge")


@pytest.fixture(scope="module")
def node_modules() -> Path:
    """``.ragtrace/node`` with the app's packages installed (``npm ci``), reinstalled when the lock changes."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: `make test` installs them (apt-get install nodejs npm)")
    lock = (APP / "package-lock.json").read_bytes()
    stamp = MODULES / ".installed-lock"
    digest = hashlib.sha256(lock).hexdigest()
    if not (stamp.is_file() and stamp.read_text() == digest and (MODULES / "node_modules").is_dir()):
        MODULES.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(APP / name, MODULES / name)
        installed = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--cache", str(ROOT / ".ragtrace" / "npm-cache")],
            cwd=MODULES,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if installed.returncode != 0:
            pytest.skip(f"npm could not install the Node app's packages (offline?): {installed.stderr[-500:]}")
        stamp.write_text(digest)
    return MODULES / "node_modules"


@pytest.mark.slow
def test_a_node_rag_app_is_scored_by_the_collector(store_target: str, node_modules: Path) -> None:
    db = store_target
    question = "How fast are refunds paid?"
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        ran = subprocess.run(
            ["node", str(APP / "rag.cjs"), f"http://127.0.0.1:{collector.http_port}", question],
            env={"NODE_PATH": str(node_modules), "PATH": "/usr/bin:/bin:/usr/local/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        trace_id = ran.stdout.strip()
        (root,) = settle(collector, time.time_ns() + 2 * HOUR)
    finally:
        collector.stop()
    assert rows(db, "SELECT count(*), count(DISTINCT received_ns) FROM spans") == [(3, 3)]
    [row] = rows(db, "SELECT trace_id, service, query, answer, chunks, decision FROM rag_records")
    scores = {m for (m,) in rows(db, "SELECT metric FROM scores WHERE span_id = ?", (root,))}
    assert row[:4] == (trace_id, "node-rag", question, "Refunds are paid within 14 days, with a receipt.")
    chunks = json.loads(row[4])
    assert [(c["id"], c["content"], c["metadata"]) for c in chunks] == [
        ("hb-12", "Refunds are paid within 14 days.", {"source": "handbook"}),
        ("hb-13", "Refunds need a receipt.", {"source": "handbook"}),
    ]
    assert row[5] == semconv.DECISION_EVALUATED
    assert scores == set(build_suite().names)
