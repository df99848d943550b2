"""docs/decorators.md says exactly which wrong decorator arguments raise what, and the decorators do that."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ragtrace
from ragtrace import ConfigurationError

DOC = (Path(__file__).resolve().parents[2] / "docs" / "decorators.md").read_text(encoding="utf-8")


def _arguments_paragraph() -> str:
    return " ".join(DOC.split("## Arguments", 1)[1].split("|", 1)[0].split())


def question(question: str) -> str:
    return question


def test_a_misspelt_decorator_keyword_is_the_typeerror_the_page_quotes() -> None:
    quoted = re.search(r"`@ragtrace\.rag\(nam=\"x\"\)`\) is Python's own `TypeError: ([^`]+)`", _arguments_paragraph())
    assert quoted is not None, "the Arguments section must say what a misspelt keyword raises"
    with pytest.raises(TypeError) as raised:
        ragtrace.rag(nam="x")  # type: ignore[call-overload]
    assert str(raised.value) == quoted.group(1)


def test_the_wrong_values_the_page_lists_raise_configuration_error_at_decoration() -> None:
    paragraph = _arguments_paragraph()
    assert "raise `ragtrace.ConfigurationError` when the function is decorated" in paragraph
    assert 'query="qestion"' in paragraph and "`data_source`" in paragraph and "`model`" in paragraph
    with pytest.raises(ConfigurationError, match="names no argument"):
        ragtrace.rag(query="qestion")(question)
    with pytest.raises(ConfigurationError, match="not callable"):
        ragtrace.rag(answer="text")(question)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="non-empty"):
        ragtrace.rag(name="")(question)
    with pytest.raises(ConfigurationError, match="not a str"):
        ragtrace.retrieve(data_source=3)(question)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="not a str"):
        ragtrace.generate(model=3)(question)  # type: ignore[call-overload]
