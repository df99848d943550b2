"""What the two distributions declare: a fresh `pip install` of either gets this repository's code and
everything its examples import, never a foreign package of the same name."""

from __future__ import annotations

import ast
import sys
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FOREIGN_RAGTRACE = "0.3.2"
"""The version of the unrelated "ragtrace" project on the public index."""


def project(path: Path) -> dict[str, object]:
    with open(path / "pyproject.toml", "rb") as handle:
        table = tomllib.load(handle)["project"]
    assert isinstance(table, dict)
    return table


def requirements(names: object) -> dict[str, Requirement]:
    assert isinstance(names, list)
    parsed = [Requirement(name) for name in names]
    return {canonicalize_name(r.name): r for r in parsed}


def test_the_collector_requires_exactly_this_repositorys_sdk() -> None:
    sdk_version = str(project(ROOT)["version"])
    needed = requirements(project(ROOT / "collector")["dependencies"])["ragtrace"]
    assert needed.specifier.contains(sdk_version)
    assert not needed.specifier.contains(FOREIGN_RAGTRACE)
    assert [s.operator for s in needed.specifier] == ["=="], "any range could resolve to another project's release"


def third_party_imports(script: Path) -> set[str]:
    """Modules ``script`` imports (anywhere in it, dotted) that are not ragtrace's or the standard library's."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    own = {"ragtrace", "examples", "__future__", *sys.stdlib_module_names}
    return {n for n in names if n.split(".")[0] not in own}


def owners(module: str) -> set[str]:
    """The installed distributions that hold ``module`` (several share a namespace such as opentelemetry)."""
    candidates = packages_distributions().get(module.split(".")[0], [])
    prefix = module.replace(".", "/")
    holding = {name for name in candidates if any(str(f).startswith(prefix) for f in distribution(name).files or [])}
    return {canonicalize_name(n) for n in holding or candidates}


def installed_with(requirement: str) -> set[str]:
    """``requirement``'s distribution and, recursively, what it requires (without extras)."""
    seen: set[str] = set()
    todo = [canonicalize_name(Requirement(requirement).name)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for needed in distribution(name).requires or []:
            parsed = Requirement(needed)
            if parsed.marker is None or parsed.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(parsed.name))
    return seen


@pytest.mark.parametrize("script", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_the_sdk_with_its_examples_extra_installs_what_each_example_imports(script: Path) -> None:
    table = project(ROOT)
    extras = table["optional-dependencies"]
    assert isinstance(extras, dict) and isinstance(table["dependencies"], list)
    installed = {d for r in [*table["dependencies"], *extras["examples"]] for d in installed_with(r)}
    missing = {m for m in third_party_imports(script) if not owners(m) & installed}
    assert not missing, f"{script.name} imports {sorted(missing)}, not installed by the SDK or its examples extra"
