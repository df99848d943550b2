"""RAG metrics, one module per family; the arithmetic of each is a pure function beside it.

Score one record with many metrics through a ``Suite`` (it shares the judge's work between them), or
run any metric alone with ``await metric.score(record, judge)``. ``metric_by_name`` and
``build_suite`` build metrics from configuration names.

A metric of your own subclasses ``JudgeMetric``: a ``name``, a ``direction``, the ``capabilities`` (judge
steps) it asks through ``Steps``, and ``_measure(record, steps)`` returning ``self.measured(value, steps)``
(docs/contributing.md). The families: ``claims/`` (faithfulness, hallucination and the other claim
metrics), ``chunks.py``, ``rating.py``, ``relevancy_embedding.py``, ``geval.py``, ``quality.py``.
"""

from ragtrace.metrics._base import DETAIL_CLAIMS, DETAIL_METHOD, Cost, Direction, Metric, Score, Status
from ragtrace.metrics._metric import NEEDS_CHUNKS, NEEDS_REFERENCE, JudgeMetric
from ragtrace.metrics._registry import (
    LOWER_IS_BETTER,
    METRIC_NAMES,
    PRODUCTION_METRICS,
    REFERENCE_METRICS,
    build_suite,
    configured_suite,
    metric_by_name,
    score_range,
)
from ragtrace.metrics._steps import ReplyError, Steps
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
    "LOWER_IS_BETTER",
    "METRIC_NAMES",
    "NEEDS_CHUNKS",
    "NEEDS_REFERENCE",
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
    "JudgeMetric",
    "Metric",
    "NoiseSensitivity",
    "Quality",
    "RelevantNoiseSensitivity",
    "ReplyError",
    "Score",
    "Status",
    "Steps",
    "Suite",
    "SuiteResult",
    "build_suite",
    "clear_geval_cache",
    "configured_suite",
    "metric_by_name",
    "score_range",
]
