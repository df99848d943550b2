"""The tree keeps the shape issue #27 gave it.

A package's ``__init__`` must not bind a name one of its own submodules has: importing the submodule
(anyone may, at any time) sets the package's attribute to the module and silently replaces what the
``__init__`` bound (``metrics/claims/verdicts.py`` once replaced the ``verdicts`` function its package used).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(
    path.parent
    for base in (ROOT / "ragtrace", ROOT / "collector" / "ragtrace_collector")
    for path in base.rglob("__init__.py")
)


def bound_names(init: Path) -> set[str]:
    """Names the ``__init__`` binds at module level other than by importing its own submodule of that name."""
    package = init.parent
    names: set[str] = set()
    for node in _module_level(ast.parse(init.read_text()).body):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                own_submodule = alias.asname in (None, alias.name) and (node.module or "").endswith(package.name)
                if not own_submodule:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _module_level(body: list[ast.stmt]) -> list[ast.AST]:
    # The statements run at import (inside ``if``/``try`` too) and the names they assign; not function bodies.
    found: list[ast.AST] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, (ast.If, ast.Try)):
            found += _module_level([*statement.body, *statement.orelse, *getattr(statement, "finalbody", [])])
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            found += [n for n in ast.walk(statement) if isinstance(n, ast.Name)]
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_submodule_shadows_a_name_its_package_binds(package: Path) -> None:
    submodules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    submodules |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    assert sorted(submodules & bound_names(package / "__init__.py")) == []
