"""Metric names -> metric factories: how configuration (``RAGTRACE_METRICS``, ``--metrics``) builds a suite.

Unknown names and bad options raise ``ConfigurationError`` listing what is valid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragtrace import environment_variables as env
from ragtrace._exceptions import ConfigurationError
from ragtrace.metrics._base import Metric
from ragtrace.metrics._suite import Suite
from ragtrace.metrics.chunks import ContextPrecision, ContextRelevance, ContextRelevanceWeighted
from ragtrace.metrics.claims import (
    AnswerRelevancy,
    ContextContradiction,
    ContextRecall,
    Faithfulness,
    HallucinatedClaim,
    Hallucination,
    IrrelevantNoiseSensitivity,
    NoiseSensitivity,
    RelevantNoiseSensitivity,
)
from ragtrace.metrics.geval import GEval
from ragtrace.metrics.quality import Quality
from ragtrace.metrics.rating import AnswerRelevancyRating
from ragtrace.metrics.relevancy_embedding import AnswerRelevancyEmbedding

PRODUCTION_METRICS: tuple[str, ...] = (
    "faithfulness",
    "hallucination",
    HallucinatedClaim.name,
    "answer_relevancy_embedding",
    "context_relevance",
)
"""The default production suite: at most 3 chat calls (a batched ``OpenAIJudge``; per claim, 1 + one per claim
with several chunks, 2 + one per claim with one)
and 1 embeddings call per record, no reference needed (``hallucinated_claim``, the record-level signal, reads
the same verification, and ``context_relevance`` the chunk ratings that verification carries: no call of their
own)."""

_FACTORIES: dict[str, Callable[..., Metric]] = {
    "faithfulness": Faithfulness,
    "hallucination": Hallucination,
    HallucinatedClaim.name: HallucinatedClaim,
    "context_contradiction": ContextContradiction,
    "answer_relevancy": AnswerRelevancy,
    "noise_sensitivity": NoiseSensitivity,
    "relevant_noise_sensitivity": RelevantNoiseSensitivity,
    "irrelevant_noise_sensitivity": IrrelevantNoiseSensitivity,
    "context_recall": ContextRecall,
    "answer_relevancy_embedding": AnswerRelevancyEmbedding,
    "context_relevance": ContextRelevance,
    "context_relevance_weighted": ContextRelevanceWeighted,
    "context_precision": ContextPrecision,
    "answer_relevancy_rating": AnswerRelevancyRating,
    "quality": Quality,
}

METRIC_NAMES: tuple[str, ...] = (*sorted(_FACTORIES), "geval")
"""Every name ``metric_by_name`` knows. ``geval`` needs options: ``name=`` and ``criteria=``."""

LOWER_IS_BETTER: frozenset[str] = frozenset(
    name for name, factory in _FACTORIES.items() if getattr(factory, "direction", "higher") == "lower"
)
"""The metrics for which a lower value is better, read from the metric classes' ``direction``; every other
metric (user-named G-Eval ones included) is higher-is-better."""

_UNIT = (0.0, 1.0)


def score_range(name: str) -> tuple[float, float]:
    """The documented range of metric ``name``'s values (docs/metric-contract.md): [0, 1], or the metric class's own
    ``value_range`` (``answer_relevancy_embedding``, a mean cosine, is in [-1, 1]: reported as computed, never
    clipped). Pages draw a metric's axis over it."""
    found = getattr(_FACTORIES.get(name), "value_range", _UNIT)
    return (float(found[0]), float(found[1]))


REFERENCE_METRICS: tuple[str, ...] = (
    "noise_sensitivity",
    "relevant_noise_sensitivity",
    "irrelevant_noise_sensitivity",
    "context_recall",
)
"""The metrics that need a reference answer (offline evaluation, golden sets)."""


def metric_by_name(name: str, /, **options: Any) -> Metric:
    """Build a metric by name with its options, e.g. ``metric_by_name("hallucination", threshold=0.2)``.

    ``metric_by_name("geval", name="rag_fact_checker", criteria="...")`` builds a G-Eval metric.
    """
    key = name.strip().lower()
    if key == "geval":
        if "name" not in options:
            raise ConfigurationError(
                "metric 'geval' needs options: metric_by_name('geval', name='my_check', criteria='...') "
                "or GEval(name=..., criteria=...) in code"
            )
        factory: Callable[..., Metric] = GEval
    elif key in _FACTORIES:
        factory = _FACTORIES[key]
    else:
        raise ConfigurationError(f"unknown metric {name!r}: choose from {', '.join(METRIC_NAMES)}")
    try:
        return factory(**options)
    except TypeError as err:
        raise ConfigurationError(f"metric {name!r}: bad options {sorted(options)}: {err}") from None


def _env_metrics() -> list[str]:
    names = env.read_list(env.RAGTRACE_METRICS) or []
    known = [n for n in names if n.strip().lower() in _FACTORIES]
    for name in names:
        if name not in known:
            problem = f"unknown metric (choose from {', '.join(sorted(_FACTORIES))})"
            env.invalid(env.RAGTRACE_METRICS, name, problem, None, instead="it is left out")
    return known or list(PRODUCTION_METRICS)


def build_suite(metrics: str | Iterable[str | Metric] | None = None) -> Suite:
    """A suite from names and/or metric instances; ``"a,b"`` is split on commas; None gives the production suite."""
    if metrics is None:
        metrics = PRODUCTION_METRICS
    if isinstance(metrics, str):
        metrics = [m for m in (part.strip() for part in metrics.split(",")) if m]
    built = [metric_by_name(m) if isinstance(m, str) else m for m in metrics]
    return Suite(built)


def configured_suite(metrics: Sequence[str | Metric] | None = None) -> Suite:
    """The suite a scorer (the in-app processor, the collector) scores with: ``metrics`` (names or ``Metric``
    objects), else the names in ``RAGTRACE_METRICS``, else the production suite.

    A string (``metrics="faithfulness"``) or an empty list is a ``ConfigurationError`` naming the fix, as is
    an unknown name: a scorer fails at start, never in its worker. In ``RAGTRACE_METRICS`` an unknown name
    is reported as a WARNING and left out (the production suite when none is left), as OpenTelemetry
    treats its variables.
    """
    if metrics is None:
        metrics = _env_metrics()
    if isinstance(metrics, str):
        raise ConfigurationError(f"metrics={metrics!r} is a string: pass a list, e.g. metrics=['faithfulness']")
    if not list(metrics):
        raise ConfigurationError("metrics=[] scores nothing: pass at least one metric name, or leave it unset")
    return build_suite(list(metrics))
