"""RAG metrics, one module per family; the arithmetic of each is a pure function beside it."""

from ragtrace.metrics._base import Cost, Direction, Metric, Score, Status

__all__ = ["Cost", "Direction", "Metric", "Score", "Status"]
