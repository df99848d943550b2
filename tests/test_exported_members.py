"""Each public package's ``__all__`` is exactly what it exposes (as httpx's tests/test_exported_members.py).

A name a package holds but does not list is an accidental export (an import that leaked); a name it lists
but does not hold is a broken promise. Submodules, ``from __future__`` features and ``TYPE_CHECKING`` are
plumbing, not API. Lazy names (``ragtrace.configure``) count through the package's ``__dir__``.
"""

from __future__ import annotations

import importlib
import types

import pytest

PACKAGES = (
    "ragtrace",
    "ragtrace.testing",
    "ragtrace.metrics",
    "ragtrace.judges",
    "ragtrace_collector",
)
INCLUDED_PRIVATE_MEMBERS = {"__version__"}
RAGTRACE = {
    "EvaluationResult",
    "PRODUCTION_METRICS",
    "Suite",
    "SuiteResult",
    "aevaluate",
    "build_suite",
    "evaluate",
    "metric_by_name",
    "CaptureOptions",
    "Chunk",
    "ConfigurationError",
    "Cost",
    "Metric",
    "JoinOptions",
    "Price",
    "RagRecord",
    "RagtraceHandle",
    "Rule",
    "Sampler",
    "Score",
    "ScoringOptions",
    "ScoringSpanProcessor",
    "__version__",
    "configure",
    "generate",
    "instrument",
    "rag",
    "record",
    "retrieve",
}
"""``ragtrace``'s names, listed here so that adding or removing one is a visible decision."""


def exposed(module: types.ModuleType) -> set[str]:
    """The public members of ``module``: what ``from module import *`` users and readers of ``dir()`` see."""
    names = set()
    for name in dir(module):
        if name.startswith("_") and name not in INCLUDED_PRIVATE_MEMBERS:
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType) or type(value).__module__ == "__future__" or name == "TYPE_CHECKING":
            continue
        names.add(name)
    return names


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_exactly_what_the_package_exposes(package: str) -> None:
    module = importlib.import_module(package)
    listed = set(module.__all__)
    assert len(listed) == len(module.__all__), f"{package}.__all__ lists a name twice"
    assert sorted(exposed(module) - listed) == [], f"{package} exposes names its __all__ does not list"
    assert sorted(listed - exposed(module)) == [], f"{package}.__all__ lists names it does not expose"


def test_ragtrace_exports_the_curated_list() -> None:
    assert set(importlib.import_module("ragtrace").__all__) == RAGTRACE


@pytest.mark.parametrize("package", PACKAGES)
def test_every_listed_member_is_public_api_not_a_private_module_object(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        owner = getattr(value, "__module__", None)
        # Classes and functions come from the package's own (private) modules, never from a dependency.
        if owner is not None and isinstance(value, (type, types.FunctionType)):
            assert owner.split(".")[0] == package.split(".")[0], f"{package}.{name} is {owner}'s"


def test_the_public_wire_module_lists_only_what_it_defines() -> None:
    # A module, not a package: its imports (typing, semconv) are not API, so ``__all__`` is checked the
    # other way: every listed name exists and, when a class or function, is defined in ``ragtrace.wire``.
    wire = importlib.import_module("ragtrace.wire")
    assert len(set(wire.__all__)) == len(wire.__all__)
    for name in wire.__all__:
        value = getattr(wire, name)
        if isinstance(value, (type, types.FunctionType)):
            assert value.__module__ == "ragtrace.wire", f"ragtrace.wire.{name} is {value.__module__}'s"
