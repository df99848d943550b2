"""Print the "Names on the wire" table of the README from ragtrace.semconv (run: python docs/gen_names.py).

tests/ragtrace/test_readme.py checks that the README lists every name, so regenerate after adding one.
"""

from __future__ import annotations

import ast
import inspect

from ragtrace import semconv


def rows() -> list[tuple[str, str, str]]:
    """(constant, value, first sentence of its docstring) for every string constant of semconv."""
    tree = ast.parse(inspect.getsource(semconv))
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
