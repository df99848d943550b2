"""Every name on the wire is a documented constant of ragtrace.semconv."""

import ast
import inspect
import pkgutil
import runpy
from pathlib import Path

from ragtrace import semconv

GEN_NAMES = runpy.run_path(str(Path(__file__).resolve().parents[2] / "docs" / "gen_names.py"))


def _constants_with_docs() -> dict[str, bool]:
    found: dict[str, bool] = {}
    for module in GEN_NAMES["modules"]():
        found.update(_documented(ast.parse(inspect.getsource(module)).body))
    return found


def _documented(body: list[ast.stmt]) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            nxt = body[i + 1] if i + 1 < len(body) else None
            documented = (
                isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
                and bool(nxt.value.value.strip())
            )
            found[name] = documented
    return found


def test_every_constant_is_documented() -> None:
    constants = _constants_with_docs()
    assert len(constants) > 40
    undocumented = [name for name, ok in constants.items() if not ok]
    assert undocumented == []


def test_gen_names_reads_every_module_of_the_package() -> None:
    # A new vocabulary module must be listed, or its names would miss the README table and these tests.
    found = {info.name for info in pkgutil.iter_modules(semconv.__path__)}
    assert found == set(GEN_NAMES["MODULES"])


def test_every_public_upper_name_is_a_documented_constant() -> None:
    constants = _constants_with_docs()
    public = [n for n in vars(semconv) if n.isupper() and not n.startswith("_")]
    assert sorted(public) == sorted(constants)


def test_flat_score_names_match_the_design() -> None:
    assert semconv.eval_score("faithfulness") == "ragtrace.eval.faithfulness"
    assert semconv.eval_label("faithfulness") == "ragtrace.eval.faithfulness.label"
    assert semconv.retrieval_document(3, semconv.DOCUMENT_CONTENT) == "retrieval.documents.3.document.content"
    assert semconv.EVAL_DECISION == "ragtrace.eval.decision"
    assert set(semconv.DECISIONS) == {
        "evaluated",
        "not_sampled",
        "throttled",
        "over_budget",
        "overflow",
        "timeout",
        "error",
        "not_scored",
    }
