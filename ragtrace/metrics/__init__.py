"""RAG metrics, one module per family; the arithmetic of each is a pure function beside it.

Score one record with many metrics through a ``Suite`` (it shares the judge's work between them), or
run any metric alone with ``await metric.score(record, judge)``. ``metric_by_name`` and
``build_suite`` build metrics from configuration names.
"""

from ragtrace.metrics._base import DETAIL_CLAIMS, DETAIL_METHOD, Cost, Direction, Metric, Score, Status
from ragtrace.metrics._registry import (
    METRIC_NAMES,
    PRODUCTION_METRICS,
    REFERENCE_METRICS,
    build_suite,
    metric_by_name,
)
from ragtrace.metrics._suite import Suite, SuiteResult
from ragtrace.metrics.chunks import ContextPrecision, ContextRelevance, ContextRelevanceWeighted
from ragtrace.metrics.claims import (
    AnswerRelevancy,
    ClaimVerdict,
    ContextContradiction,
    ContextRecall,
    Faithfulness,
    HallucinatedClaim,
    Hallucination,
    IrrelevantNoiseSensitivity,
    NoiseSensitivity,
    RelevantNoiseSensitivity,
)
from ragtrace.metrics.geval import GEval, clear_geval_cache
from ragtrace.metrics.quality import Quality
from ragtrace.metrics.rating import AnswerRelevancyRating
from ragtrace.metrics.relevancy_embedding import AnswerRelevancyEmbedding

__all__ = [
    "DETAIL_CLAIMS",
    "DETAIL_METHOD",
    "METRIC_NAMES",
    "PRODUCTION_METRICS",
    "REFERENCE_METRICS",
    "AnswerRelevancy",
    "AnswerRelevancyEmbedding",
    "AnswerRelevancyRating",
    "ClaimVerdict",
    "ContextContradiction",
    "ContextPrecision",
    "ContextRecall",
    "ContextRelevance",
    "ContextRelevanceWeighted",
    "Cost",
    "Direction",
    "Faithfulness",
    "GEval",
    "HallucinatedClaim",
    "Hallucination",
    "IrrelevantNoiseSensitivity",
    "Metric",
    "NoiseSensitivity",
    "Quality",
    "RelevantNoiseSensitivity",
    "Score",
    "Status",
    "Suite",
    "SuiteResult",
    "build_suite",
    "clear_geval_cache",
    "metric_by_name",
]
