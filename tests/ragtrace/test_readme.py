"""The README lists every name on the wire, exactly as docs/gen_names.py prints it from ragtrace.semconv."""

import runpy
from pathlib import Path

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
