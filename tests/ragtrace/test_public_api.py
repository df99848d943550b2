"""The public API is exactly what ``__all__`` lists, and everything listed exists (as httpx tests it)."""

import ragtrace
import ragtrace.judges
import ragtrace.metrics

EXPECTED = {
    "EvaluationResult",
    "PRODUCTION_METRICS",
    "Suite",
    "SuiteResult",
    "aevaluate",
    "build_suite",
    "evaluate",
    "metric_by_name",
    "Chunk",
    "ConfigurationError",
    "Cost",
    "Metric",
    "Price",
    "RagRecord",
    "RagtraceHandle",
    "Rule",
    "Sampler",
    "Score",
    "ScoringSpanProcessor",
    "__version__",
    "configure",
    "generate",
    "instrument",
    "rag",
    "record",
    "retrieve",
}


def test_all_is_the_curated_list() -> None:
    assert set(ragtrace.__all__) == EXPECTED


def test_every_exported_member_exists() -> None:
    for module in (ragtrace, ragtrace.judges, ragtrace.metrics):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name} is listed but missing"


def test_public_members_are_not_private_names() -> None:
    for name in ragtrace.__all__:
        assert not name.startswith("_") or name == "__version__"
