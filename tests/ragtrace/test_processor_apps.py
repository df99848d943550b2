"""The scorer inside real app shapes: an app on uvloop, a FastAPI service, a plain script that exits."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from tests.ragtrace.test_processor_judges import exported, fake_judge, rag_spans


@ragtrace.rag
async def ask(query: str) -> str:
    await asyncio.sleep(0)
    ragtrace.record(chunks=["Brasilia has been the capital of Brazil since 1960."])
    return "The capital of Brazil is Brasilia."


@pytest.fixture
def setup() -> Iterator[tuple[ragtrace.RagtraceHandle, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    handle = ragtrace.configure(
        exporter=exporter,
        judge=fake_judge(),
        metrics=["faithfulness", "context_relevance"],
        sample_rate=1.0,
        export_metrics=False,
        set_global=False,
    )
    yield handle, exporter
    handle.shutdown()


def _assert_all_scored(exporter: InMemorySpanExporter, n: int) -> None:
    rags = rag_spans(exporter)
    assert len(rags) == n
    assert len(exported(exporter)) == n
    assert {(s.attributes or {}).get(semconv.EVAL_DECISION) for s in rags} == {semconv.DECISION_EVALUATED}
    assert all((s.attributes or {}).get(semconv.eval_score("faithfulness")) == 1.0 for s in rags)


def test_app_running_uvloop(setup: tuple[ragtrace.RagtraceHandle, InMemorySpanExporter]) -> None:
    uvloop = pytest.importorskip("uvloop")
    handle, exporter = setup

    async def main() -> None:
        await asyncio.gather(*(ask(f"q{i}") for i in range(20)))

    # The app's policy is uvloop, so the scorer's own loop (made after this) is a uvloop loop too.
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        asyncio.run(main())
        assert handle.force_flush(10_000)
    finally:
        asyncio.set_event_loop_policy(None)
    _assert_all_scored(exporter, 20)


def test_fastapi_service(setup: tuple[ragtrace.RagtraceHandle, InMemorySpanExporter]) -> None:
    fastapi = pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    handle, exporter = setup
    app = fastapi.FastAPI()

    @app.get("/ask")
    async def endpoint(q: str) -> dict[str, str]:
        return {"answer": await ask(q)}

    with TestClient(app) as client:
        for i in range(10):
            response = client.get("/ask", params={"q": f"question {i}"})
            assert response.status_code == 200
    assert handle.force_flush(10_000)
    _assert_all_scored(exporter, 10)


SCRIPT = textwrap.dedent(
    """
    import json, sys
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    import ragtrace
    from tests.ragtrace.test_processor_judges import fake_judge

    class FileExporter(SpanExporter):
        def __init__(self, path):
            self.path = path
        def export(self, spans):
            with open(self.path, "a") as f:
                for s in spans:
                    f.write(json.dumps({"id": s.context.span_id, "attrs": dict(s.attributes or {})}) + "\\n")
            return SpanExportResult.SUCCESS

    ragtrace.configure(exporter=FileExporter(sys.argv[1]), judge=fake_judge(), metrics=["faithfulness"],
                       sample_rate=1.0, export_metrics=False, set_global=False)

    @ragtrace.rag
    def answer(q):
        ragtrace.record(chunks=["Brasilia has been the capital of Brazil since 1960."])
        return "The capital of Brazil is Brasilia."

    for i in range(7):
        answer(f"q{i}")
    # No shutdown, no flush: the interpreter exits and atexit must drain the scorer.
    """
)


def test_plain_script_that_exits_drains_at_exit(tmp_path: Path) -> None:
    out = tmp_path / "spans.jsonl"
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({r["id"] for r in rows}) == len(rows) == 7
    assert {r["attrs"][semconv.EVAL_DECISION] for r in rows} == {semconv.DECISION_EVALUATED}
    assert all(r["attrs"][semconv.eval_score("faithfulness")] == 1.0 for r in rows)
