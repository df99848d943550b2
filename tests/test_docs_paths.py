"""Every repository path a doc names exists, so the docs cannot drift from the tree as files move.

A path is a token that starts with one of the repository's top-level folders (``ragtrace/``, ``collector/``,
``tests/``, ...) in the README or ``docs/*.md``. Placeholders (``<name>``, ``*``) and the virtualenvs a
benchmark makes on first use are skipped. No doc may name a path outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
TOPS = ("ragtrace", "collector", "tests", "bench", "examples", "docs", "training")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOPS) + r")/[\w./-]*[\w/])")


def named_paths(text: str) -> list[str]:
    found = []
    for match in PATH.finditer(text):
        path, after = match.group(1), text[match.end() : match.end() + 1]
        # A placeholder (``test_<family>.py``, ``test_join_*.py``) or a virtualenv a script makes on first use.
        if after in ("<", "*", "{") or "/.venv" in path:
            continue
        found.append(path.rstrip("."))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_doc_names_exists(doc: Path) -> None:
    missing = sorted({p for p in named_paths(doc.read_text()) if not (ROOT / p).exists()})
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_names_a_path_outside_the_repository(doc: Path) -> None:
    text = doc.read_text()
    assert "/work/" not in text and "../shared" not in text, f"{doc.relative_to(ROOT)} names a path outside the repo"


def test_the_path_reader_finds_what_it_should() -> None:
    assert named_paths("see `ragtrace/scoring/worker.py` and docs/metrics.md.") == [
        "ragtrace/scoring/worker.py",
        "docs/metrics.md",
    ]
    assert named_paths("`ragtrace/metrics/<family>.py` and tests/*.py") == []
