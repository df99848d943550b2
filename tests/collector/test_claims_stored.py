"""End to end: a ragtrace app's per-claim verdicts travel on its evaluation events over real OTLP to a real
collector, which stores them in ``scores.claims`` (a real SQLite file); without content capture they arrive
and are stored without the claims' text. The app runs in a child process (``configure()`` sets globals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.collector._spans import start_collector
from tests.collector._stores import rows

APP = """
import ragtrace
from ragtrace.testing import FakeJudge

CLAIMS = ["Paris is the capital of France.", "It has ten million cats."]
judge = FakeJudge(
    extract_claims=lambda text, question=None: CLAIMS,
    verify={CLAIMS[0]: ["supported"], CLAIMS[1]: ["neither"]},
    support={CLAIMS[0]: [0.9], CLAIMS[1]: [0.2]},
)
handle = ragtrace.configure(
    service_name="shop", endpoint=ENDPOINT, judge=judge, metrics=["faithfulness", "hallucination"],
    sample_rate=1.0, export_metrics=False, capture_content=CAPTURE,
)

@ragtrace.rag
def ask(question):
    ragtrace.record(chunks=["Paris is the capital of France."])
    return "Paris is the capital of France. It has ten million cats."

ask("Tell me about Paris.")
handle.shutdown()
"""


@pytest.mark.slow
@pytest.mark.parametrize("capture", [True, False])
def test_claims_reach_the_store(store_target: str, capture: bool) -> None:
    running = start_collector(store_target)
    try:
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGTRACE_"))}
        code = f"ENDPOINT = 'http://127.0.0.1:{running.http_port}'\nCAPTURE = {capture}\n{APP}"
        subprocess.run([sys.executable, "-c", code], env=environment, check=True, timeout=120)
    finally:
        running.stop()
    stored = dict(rows(store_target, "SELECT metric, claims FROM scores"))
    assert set(stored) == {"faithfulness", "hallucination"}
    claims = json.loads(stored["faithfulness"])
    assert claims == json.loads(stored["hallucination"])
    assert [(c["verdict"], c["chunk"], c["support"]) for c in claims] == [
        ("supported", 0, 0.9),
        ("unsupported", None, 0.2),
    ]
    if capture:
        assert [c["claim"] for c in claims] == ["Paris is the capital of France.", "It has ten million cats."]
    else:
        assert [c["claim"] for c in claims] == [None, None]
        assert "cats" not in stored["faithfulness"]
