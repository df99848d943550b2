"""ragtrace: score production RAG traces and put the scores back on the OpenTelemetry span.

The public API is exactly ``__all__``; everything in a ``_module`` is private and may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace import _lazy

# What a decorated app needs at import time: the decorators use the OpenTelemetry API only.
from ragtrace._decorator import generate, rag, record, retrieve
from ragtrace._exceptions import ConfigurationError
from ragtrace._record import Chunk, RagRecord
from ragtrace._sampling import Price, Rule, Sampler

if TYPE_CHECKING:
    from ragtrace._config import configure, instrument
    from ragtrace._evaluate import aevaluate, evaluate
    from ragtrace._evaluation_result import EvaluationResult
    from ragtrace._handles import RagtraceHandle
    from ragtrace._options import CaptureOptions, JoinOptions, ScoringOptions
    from ragtrace.metrics._base import Cost, Metric, Score
    from ragtrace.metrics._registry import PRODUCTION_METRICS, build_suite, metric_by_name
    from ragtrace.metrics._suite import Suite, SuiteResult
    from ragtrace.scoring.processor import ScoringSpanProcessor

# The rest is imported on first use (PEP 562): the scoring side pulls in the OpenTelemetry SDK and
# the metrics, which an app that only captures, or that configures ragtrace later, need not pay for
# in its import time.
_LAZY = {
    "RagtraceHandle": "ragtrace._handles",
    "CaptureOptions": "ragtrace._options",
    "JoinOptions": "ragtrace._options",
    "ScoringOptions": "ragtrace._options",
    "configure": "ragtrace._config",
    "instrument": "ragtrace._config",
    "EvaluationResult": "ragtrace._evaluation_result",
    "aevaluate": "ragtrace._evaluate",
    "evaluate": "ragtrace._evaluate",
    "ScoringSpanProcessor": "ragtrace.scoring.processor",
    "Cost": "ragtrace.metrics._base",
    "Metric": "ragtrace.metrics._base",
    "Score": "ragtrace.metrics._base",
    "PRODUCTION_METRICS": "ragtrace.metrics._registry",
    "build_suite": "ragtrace.metrics._registry",
    "metric_by_name": "ragtrace.metrics._registry",
    "Suite": "ragtrace.metrics._suite",
    "SuiteResult": "ragtrace.metrics._suite",
}


__getattr__, __dir__ = _lazy.lazy_names(__name__, globals(), _LAZY)

__version__ = "0.1.0"

__all__ = [
    "PRODUCTION_METRICS",
    "CaptureOptions",
    "Chunk",
    "ConfigurationError",
    "Cost",
    "EvaluationResult",
    "JoinOptions",
    "Metric",
    "Price",
    "RagRecord",
    "RagtraceHandle",
    "Rule",
    "Sampler",
    "Score",
    "ScoringOptions",
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
