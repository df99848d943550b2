"""Print the "Names on the wire" table of the README from ragtrace.semconv (run: python docs/gen_names.py).

tests/ragtrace/test_readme.py checks that the README lists every name, so regenerate after adding one.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from types import ModuleType

from ragtrace import semconv

MODULES = ("_openinference", "_genai", "_openllmetry", "_ragtrace")
"""The modules of ``ragtrace.semconv``, one per vocabulary, in the table's order."""


def modules() -> list[ModuleType]:
    """The modules of ``ragtrace.semconv`` that define names (``semconv`` itself only re-exports them)."""
    return [importlib.import_module(f"{semconv.__name__}.{name}") for name in MODULES]


def rows() -> list[tuple[str, str, str]]:
    """(constant, value, first sentence of its docstring) for every string constant of semconv."""
    found = []
    for module in modules():
        found.extend(_rows(module))
    return found


def _rows(module: ModuleType) -> list[tuple[str, str, str]]:
    tree = ast.parse(inspect.getsource(module))
    found = []
    for node, after in zip(tree.body, tree.body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            value = getattr(semconv, node.target.id)
            if isinstance(value, str) and isinstance(after, ast.Expr):
                doc = " ".join(str(after.value.value).split()).replace("``", "`").replace("|", "\\|")  # type: ignore[attr-defined]
                found.append((node.target.id, value, doc))
    return found


if __name__ == "__main__":
    print("| name | `semconv` constant | meaning |")
    print("|---|---|---|")
    for constant, value, doc in rows():
        print(f"| `{value}` | `{constant}` | {doc} |")
