"""The README and docs/quickstart.md: every name on the wire (from docs/gen_names.py), quick starts that score."""

import re
import runpy
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from ragtrace import semconv
from ragtrace.testing import FakeJudge

ROOT = Path(__file__).resolve().parents[2]


def test_readme_has_the_generated_names_table() -> None:
    rows = runpy.run_path(str(ROOT / "docs" / "gen_names.py"))["rows"]()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [value for constant, value, _ in rows if f"| `{value}` | `{constant}` |" not in readme]
    assert len(rows) > 40
    assert missing == [], "regenerate the README table with: python docs/gen_names.py"


def test_readme_gives_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme


def _python_block_after(text: str, heading: str) -> str:
    section = text.split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_quick_start_scores_the_call_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    # A newcomer runs the quick start once: that one call must come back scored, not "not_sampled".
    code = _python_block_after((ROOT / "README.md").read_text(encoding="utf-8"), "## Quick start: your own app")
    exporter = InMemorySpanExporter()
    handles: list[ragtrace.RagtraceHandle] = []
    configure = ragtrace.configure

    def in_memory(*, endpoint: str, **kwargs: Any) -> ragtrace.RagtraceHandle:
        # Everything as the README says, but the spans go to memory and a scripted judge scores.
        judge = FakeJudge(
            extract_claims=lambda text, question=None: [text], verify=lambda claims, chunks: [["supported"]]
        )
        handle = configure(
            exporter=exporter, batch=False, judge=judge, set_global=False, export_metrics=False, **kwargs
        )
        handles.append(handle)
        return handle

    monkeypatch.setattr(ragtrace, "configure", in_memory)
    try:
        exec(compile(code, "README.md quick start", "exec"), {"__name__": "readme_quick_start"})
    finally:
        for handle in handles:
            handle.shutdown()
    (rag,) = [
        s for s in exporter.get_finished_spans() if (s.attributes or {}).get(semconv.RAGTRACE_ROLE) == semconv.ROLE_RAG
    ]
    assert handles[0].processor.sampler.rate == 1.0
    assert (rag.attributes or {})[semconv.EVAL_DECISION] == "evaluated"
    assert (rag.attributes or {})[semconv.eval_score("faithfulness")] == 1.0


def test_the_quickstart_page_scores_every_call_it_shows() -> None:
    # Its snippets are not runnable (bodies are "..."), so their configure()/instrument() calls are read.
    page = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    rates = re.findall(r"ragtrace\.(?:configure|instrument)\(.*sample_rate=([0-9.]+)", page)
    assert rates and all(float(rate) == 1.0 for rate in rates)
