"""The collector joins and scores a RAG call an app traced with OpenLLMetry's LangChain instrumentation
(``opentelemetry-instrumentation-langchain``) and sent with a ``BatchSpanProcessor`` and the OTLP/HTTP exporter,
from a process of its own (``_openllmetry_app.py``): the workflow span is the root, the retriever task's entity
output gives the chunks. ``TRACELOOP_TRACE_CONTENT=false`` in the app: stored ``not_scored``, no score.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragtrace import semconv
from tests.collector._join import HOUR, LIMITS, settle
from tests.collector._spans import start_collector
from tests.collector._stores import rows
from tests.ragtrace.test_foreign_langchain import ANSWER, QUESTION, RANKED

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("offline_judge")


def _run_app(db: Path, **env: str) -> tuple[str, str | None, str | None, list[dict[str, object]], int, str | None]:
    collector = start_collector(db, score=True, join_limits=LIMITS)
    try:
        ran = subprocess.run(
            [
                sys.executable,
                "-W",
                "ignore",
                "-m",
                "tests.collector._openllmetry_app",
                f"http://127.0.0.1:{collector.http_port}",
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert len(settle(collector, time.time_ns() + 2 * HOUR)) == 1
    finally:
        collector.stop()
    ((decision, query, answer, chunks, reason),) = rows(
        db, "SELECT decision, query, answer, chunks, reason FROM rag_records"
    )
    ((scores,),) = rows(db, "SELECT count(*) FROM scores")
    return decision, query, answer, json.loads(chunks), scores, reason


def test_an_openllmetry_workflow_is_joined_and_scored(store_target: str) -> None:
    decision, query, answer, chunks, scores, reason = _run_app(store_target)
    assert (decision, query, answer, reason) == (semconv.DECISION_EVALUATED, QUESTION, ANSWER, None)
    assert [c["content"] for c in chunks] == RANKED
    assert scores > 0


def test_content_tracing_off_is_stored_not_scored(store_target: str) -> None:
    decision, query, answer, chunks, scores, reason = _run_app(store_target, TRACELOOP_TRACE_CONTENT="false")
    assert (decision, reason) == (semconv.DECISION_NOT_SCORED, semconv.NOT_SCORED_NO_CONTENT)
    assert (query, answer, chunks, scores) == (None, None, [], 0)
