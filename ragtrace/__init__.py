"""ragtrace: score production RAG traces and put the scores back on the OpenTelemetry span.

The public API is exactly ``__all__``; everything in a ``_module`` is private and may change.
"""

from ragtrace._config import RagtraceHandle, configure, instrument
from ragtrace._decorator import generate, rag, record, retrieve
from ragtrace._processor import ScoringSpanProcessor
from ragtrace._record import Chunk, RagRecord
from ragtrace._sampling import Price, Rule, Sampler
from ragtrace.environment_variables import ConfigurationError
from ragtrace.metrics._base import Cost, Metric, Score

__version__ = "0.1.0"

__all__ = [
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
]
