"""What the first-hour documents promise is what the code does (issue 29): the README on wrong settings, and
docs/integrations.md on how many traces the collector scores."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragtrace
from tests.test_docs_commands import ROOT, shell_lines


def section(document: str, heading: str) -> str:
    """The text under ``heading`` (a ``## `` line) of ``document``, up to the next heading of that level."""
    text = (ROOT / document).read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    end = text.find("\n## ", start)
    return " ".join(text[start : end if end >= 0 else None].split())


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.:])\s+(?=[A-Z])", text)


def test_the_readme_says_arguments_raise_and_variables_warn(
    monkeypatch: pytest.MonkeyPatch, warned: Callable[[str], list[str]]
) -> None:
    # Before issue 29 the README said "Wrong values raise ragtrace.ConfigurationError at once", variables too.
    said = sentences(section("README.md", "## Configuration").split("| argument |")[0])
    (raises,) = [s for s in said if "ConfigurationError" in s]
    assert "argument" in raises and "variable" not in raises, raises
    assert any("variable" in s and "WARNING" in s and "value used instead" in s for s in said), said
    # ... and that is what configure() does.
    with pytest.raises(ragtrace.ConfigurationError, match="queue_size=0 is invalid"):
        ragtrace.configure(exporter=InMemorySpanExporter(), queue_size=0, set_global=False)
    monkeypatch.setenv("RAGTRACE_QUEUE_SIZE", "0")
    handle = ragtrace.configure(exporter=InMemorySpanExporter(), judge="offline", set_global=False)
    handle.shutdown(timeout_millis=1000)
    assert len(warned("RAGTRACE_QUEUE_SIZE")) == 1


def test_integrations_says_where_the_reader_tries_it_that_the_collector_scores_1_in_10(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragtrace_collector._scoring import DEFAULT_SAMPLE_RATE, SAMPLE_RATE

    text = section("docs/integrations.md", "## Or score them in the collector")
    assert DEFAULT_SAMPLE_RATE == 0.1 and "scores 1 trace in 10 by default" in text
    # How to change it, as a command the reader can copy (checked by tests/test_docs_commands.py too).
    lines = [line for line in shell_lines("docs/integrations.md") if line.words[:2] == ["ragtrace-collector", "serve"]]
    assert any(line.environment.get("RAGTRACE_SAMPLE_RATE") == "1.0" for line in lines), [str(x) for x in lines]
    monkeypatch.setenv("RAGTRACE_SAMPLE_RATE", "1.0")
    assert SAMPLE_RATE.resolve(None) == 1.0  # the collector reads it
