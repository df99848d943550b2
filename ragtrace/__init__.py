"""ragtrace: score production RAG traces and put the scores back on the OpenTelemetry span.

The public API is exactly ``__all__``; everything in a ``_module`` is private and may change.
"""

from ragtrace._config import RagtraceHandle, configure, instrument
from ragtrace._decorator import generate, rag, record, retrieve
from ragtrace._evaluate import EvaluationResult, aevaluate, evaluate
from ragtrace._processor import ScoringSpanProcessor
from ragtrace._record import Chunk, RagRecord
from ragtrace._sampling import Price, Rule, Sampler
from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._base import Cost, Metric, Score
from ragtrace.metrics._registry import PRODUCTION_METRICS, build_suite, metric_by_name
from ragtrace.metrics._suite import Suite, SuiteResult

__version__ = "0.1.0"

__all__ = [
    "PRODUCTION_METRICS",
    "Chunk",
    "ConfigurationError",
    "Cost",
    "EvaluationResult",
    "Metric",
    "Price",
    "RagRecord",
    "RagtraceHandle",
    "Rule",
    "Sampler",
    "Score",
    "ScoringSpanProcessor",
    "Suite",
    "SuiteResult",
    "__version__",
    "aevaluate",
    "build_suite",
    "configure",
    "evaluate",
    "generate",
    "instrument",
    "metric_by_name",
    "rag",
    "record",
    "retrieve",
]
