"""Names a package imports on first use (PEP 562), so ``import ragtrace`` stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for the names in ``table`` (name -> module).

    A name is imported from its module the first time it is asked for, then kept in ``namespace``
    (the package's ``globals()``), so later lookups are plain attribute reads. Any other name is an
    ``AttributeError``, as for a module without the hook.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
