"""The house's shape in figures: what a newcomer meets when reading the tree (issue #27's before and after).

Printed, from the source alone (nothing is imported, so it runs on any checkout):

- modules and their median size (lines) per package: the SDK (``ragtrace``, and its ``judges`` and
  ``metrics``) and the collector (``ragtrace_collector``);
- modules with a single importer (an ``__init__`` excluded), and how many of those are under 80 lines;
- imports that run from a lower layer up (the layers are listed in ``LAYERS``; a module of layer i
  importing one of layer j > i is counted), and the collector's imports of ragtrace's private modules;
- import cycles: the strongly connected components of the graph of runtime imports (``TYPE_CHECKING``
  blocks left out; imports inside functions kept, since they exist to dodge a cycle);
- the source files each extension recipe in ``docs/contributing.md`` (a metric, a judge, an alert sink)
  tells a contributor to touch (tests and docs left out), and the private modules
  ``tests/test_extension_points.py`` imports.

Usage: ``.venv/bin/python bench/house.py [--list]`` (``--list`` also names the modules behind each count).
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"ragtrace": ROOT / "ragtrace", "ragtrace_collector": ROOT / "collector" / "ragtrace_collector"}
PACKAGES = ("ragtrace", "ragtrace.judges", "ragtrace.metrics", "ragtrace_collector")

# Layers, lowest first: a module may import its own layer and those below. A module is placed by the
# first pattern its dotted name matches; unplaced modules (configuration, capture, testing) are not counted.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("semconv", (r"^ragtrace\.semconv",)),
    ("judges", (r"^ragtrace\.judges", r"^ragtrace\._judge_errors$", r"^ragtrace\._cost$")),
    ("metrics", (r"^ragtrace\.metrics",)),
    (
        "scoring",
        (
            r"^ragtrace\.scoring",
            r"^ragtrace\._(processor|handoff|exit|jobs|spans|scorer|eval_logs|worker|fork)\b",
        ),
    ),
    ("cli", (r"^ragtrace\.cli", r"^ragtrace\._(eval_(cli|choice|gates|input|output)|calibrate_cli)$")),
    ("collector", (r"^ragtrace_collector",)),
]
# The worker carries jobs and knows nothing of what they are: neither the wire nor scoring's decisions.
WORKER = r"^ragtrace\.(scoring\.worker|_worker)"
WORKER_MUST_NOT = (
    r"^ragtrace\.(semconv|wire|_wire|metrics|judges|_processor|_scorer|scoring\.(processor|handoff|scorer|spans))"
)
RECIPES = {"a metric": "## A metric", "a judge": "## A judge\n", "an alert sink": "## An alert sink"}


def modules() -> dict[str, Path]:
    found = {}
    for top, base in SOURCES.items():
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([top, *parts])] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _imports(node)


def graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports at run time (``from p import m`` counts ``p.m``, not ``p``, when
    ``m`` is a module)."""
    edges: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                bases = [alias.name for alias in node.names]
                names: list[str] = []
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                bases = [base]
                names = [alias.name for alias in node.names]
            for base in bases:
                submodules = [f"{base}.{imported}" for imported in names if f"{base}.{imported}" in found]
                targets.update(submodules)
                # ``from package import submodule`` is about the submodule; the package is only its way in.
                if base in found and len(submodules) < max(len(names), 1):
                    targets.add(base)
        targets.discard(name)
        edges[name] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer(name: str) -> int | None:
    for rank, (_, patterns) in enumerate(LAYERS):
        if any(re.search(pattern, name) for pattern in patterns):
            return rank
    return None


def upward(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            low, high = layer(source), layer(target)
            if low is not None and high is not None and high > low:
                found.append(f"{source} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
            elif re.search(WORKER, source) and re.search(WORKER_MUST_NOT, target):
                found.append(f"{source} (worker) -> {target}")
    return found


def recipe_files(section: str) -> list[str]:
    text = (ROOT / "docs" / "contributing.md").read_text()
    start = text.find(section)
    if start < 0:
        return []
    end = text.find("\n## ", start + len(section))
    body = text[start : end if end > 0 else len(text)]
    steps = "\n".join(line for line in body.splitlines() if re.match(r"\s*\d+\.", line) or line.startswith("   "))
    paths = set()
    for path in re.findall(r"`([\w/<>.-]+\.py)`", steps):
        if not path.startswith(("tests/", "docs/")) and not path.rpartition("/")[2].startswith("test_"):
            paths.add(path)
    return sorted(paths)


def private_imports_of_extension_test() -> list[str]:
    path = ROOT / "tests" / "test_extension_points.py"
    if not path.exists():
        return []
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            if any(part.startswith("_") for part in node.module.split(".")):
                found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_"))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if any(p.startswith("_") for p in a.name.split(".")))
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the modules behind each count")
    args = parser.parse_args()
    found = modules()
    lines = {name: len(path.read_text().splitlines()) for name, path in found.items()}
    edges = graph(found)

    print("modules and median size (lines) per package")
    for package in PACKAGES:
        members = [n for n in found if n == package or n.startswith(package + ".")]
        sizes = [lines[n] for n in members]
        print(f"  {package:<22} {len(members):>4} modules, median {statistics.median(sizes):>5.0f} lines")
    root_files = [p for p in (ROOT / "ragtrace").glob("*.py")]
    print(f"  {'files at ragtrace/':<22} {len(root_files):>4}")

    importers: dict[str, set[str]] = {n: set() for n in found}
    for source, targets in edges.items():
        for target in targets:
            importers[target].add(source)
    single = sorted(n for n, who in importers.items() if len(who) == 1 and found[n].name != "__init__.py")
    small = [n for n in single if lines[n] < 80]
    print(f"modules with a single importer: {len(single)} ({len(small)} under 80 lines)")
    if args.list:
        for name in single:
            print(f"    {name} ({lines[name]}) <- {next(iter(importers[name]))}")

    up = upward(edges)
    print(f"imports from a lower layer up: {len(up)}")
    for line in up:
        print(f"    {line}")
    private = sorted(
        f"{s} -> {t}"
        for s, targets in edges.items()
        if s.startswith("ragtrace_collector")
        for t in targets
        if t.startswith("ragtrace.") and any(p.startswith("_") for p in t.split("."))
    )
    print(f"collector imports of ragtrace's private modules: {len(private)}")
    for line in private:
        print(f"    {line}")

    components = cycles(edges)
    print(f"import cycles (runtime imports): {len(components)}")
    for component in components:
        print(f"    {len(component)}: {', '.join(component)}")

    print("source files an extension recipe touches (docs/contributing.md)")
    for what, section in RECIPES.items():
        files = recipe_files(section)
        print(f"  {what:<14} {len(files)}: {', '.join(files)}")
    private_test = private_imports_of_extension_test()
    print(f"private modules tests/test_extension_points.py imports: {len(private_test)}")
    for name in private_test:
        print(f"    {name}")


if __name__ == "__main__":
    main()
